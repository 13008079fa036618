import FerryCore
import NIOCore

/// Connection migration (RFC 9000 §9): the connection moves to a new UDP socket (a new local address
/// or port) and goes on, its requests with it, instead of reconnecting and resuming with a Range.
extension HTTP3Connection {
    /// Moves the connection to a new socket bound to `local` (nil: whatever address the route to the
    /// server now has): the server's spare connection ID, a PATH_CHALLENGE on the new path; the old
    /// socket is read until the new path is validated. On the event loop.
    func migrate(to local: SocketAddress?) -> EventLoopFuture<Void> {
        if let reason = closedError == nil ? quic.whyNotMigrate : "it is closed" {
            return eventLoop.makeFailedFuture(FerryError(.invalidOperation, "the QUIC connection to \(host) cannot move: \(reason)"))
        }
        return makeChannel(local: local).flatMapThrowing { [self] fresh in
            guard closedError == nil else {
                fresh.close(promise: nil)
                return
            }
            previousChannel?.close(promise: nil)
            previousChannel = channel
            channel = fresh
            transmit(quic.migrate())
        }
    }

    /// Moves every request of the connection to a new socket, from any thread (a network change).
    func migrate() async throws {
        try await eventLoop.flatSubmit { self.migrate(to: nil) }.get()
    }

    /// The test hook `FERRY_DEBUG_QUIC_MIGRATE=BYTES@ADDRESS` (debug builds): once BYTES of bodies have
    /// arrived, the connection moves to a socket bound to ADDRESS, once.
    func migrateIfAsked() {
        #if DEBUG
        guard let (bytes, address) = debugMigration, bodyBytesReceived >= bytes else { return }
        debugMigration = nil
        do {
            migrate(to: try SocketAddress(ipAddress: address, port: 0)).whenFailure { [self] error in
                fail(FerryError(.networkConnectionLost, "could not move the QUIC connection to \(address): \(error)"))
            }
        } catch {
            fail(FerryError(.invalidOperation, "FERRY_DEBUG_QUIC_MIGRATE names no address: \(address)"))
        }
        #endif
    }
}
