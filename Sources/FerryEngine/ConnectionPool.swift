import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The connections of ``NetworkTransport`` by ``PoolKey``: idle HTTP/1.1 connections (most recently used
/// first), shared HTTP/2 connections, and every open one (so shutting down can close them). The books are
/// a ``ConnectionPoolStateMachine`` behind a lock; this applies its answers. How many
/// exchanges run at once is the session's business (``SessionTransport``'s per-host limit) for
/// HTTP/1.1; an HTTP/2 connection takes what its server's SETTINGS allow.
///
/// The first request to an https origin whose protocol is not known yet connects alone; the others to
/// that origin wait for its handshake, so a burst of requests to an `h2` server opens one connection,
/// not one each.
final class ConnectionPool: Sendable {
    typealias Machine = ConnectionPoolStateMachine<HTTP1Connection, HTTP2Connection, EventLoopPromise<Void>>
    typealias Claim = Machine.Claim

    private let machine: NIOLockedValueBox<Machine>

    /// - Parameter maximumIdlePerOrigin: idle connections kept per key; more are closed.
    init(maximumIdlePerOrigin: Int) {
        machine = NIOLockedValueBox(Machine(maximumIdlePerKey: maximumIdlePerOrigin))
    }

    /// A connection for a request to `key`; `mayShare`: the request may go over HTTP/2 (https, and
    /// `h2` offered). A first connection's waiters wait on a promise of `loop`.
    func claim(_ key: PoolKey, mayShare: Bool, loop: any EventLoop) -> Claim {
        machine.withLockedValue { machine in
            machine.claim(
                key,
                mayShare: mayShare,
                isOpen: { $0.channel.isActive },
                reserve: { $0.reserve() },
                makeWaiter: { loop.makePromise(of: Void.self) }
            )
        }
    }

    /// The first connection to `key` is open (its protocol known) or failed: the requests waiting for
    /// it claim again.
    func settle(_ key: PoolKey, first: EventLoopPromise<Void>, speaksHTTP1: Bool) {
        machine.withLockedValue { machine in
            machine.settle(key, first: { $0.futureResult === first.futureResult }, speaksHTTP1: speaksHTTP1)
        }
        first.succeed()
    }

    /// Whether requests to `origin` go over a shared HTTP/2 connection now, directly or through a proxy.
    func isShared(origin: PoolKey.Origin) -> Bool {
        machine.withLockedValue { $0.isShared(origin: origin) }
    }

    /// Records a new HTTP/1.1 connection.
    /// - Throws: ``FerryError/Code/cancelled`` when the transport has been shut down.
    func opened(_ connection: HTTP1Connection) throws {
        // One that closed already has been forgotten (its close came first): not recorded again.
        let isOpen = connection.channel.isActive
        try accept(connection.channel, machine.withLockedValue { $0.opened(connection, isOpen: isOpen) })
    }

    /// Records a new HTTP/2 connection, open to other requests to its key.
    /// - Throws: ``FerryError/Code/cancelled`` when the transport has been shut down.
    func opened(_ connection: HTTP2Connection) throws {
        let takesStreams = connection.channel.isActive && !connection.isDraining
        try accept(
            connection.channel,
            machine.withLockedValue { $0.opened(connection, key: connection.key, takesStreams: takesStreams) }
        )
    }

    private func accept(_ channel: any Channel, _ accepted: Bool) throws {
        guard accepted else {
            channel.close(promise: nil)
            throw FerryError(.cancelled, "the session's connections were shut down")
        }
    }

    /// Takes back a connection whose exchange ended with it reusable (on its loop).
    func offer(_ connection: HTTP1Connection) {
        let keep = machine.withLockedValue { $0.offer(connection, key: connection.key) }
        if !keep { connection.channel.close(promise: nil) }
    }

    /// Forgets a closed connection.
    func closed(_ connection: HTTP1Connection) {
        machine.withLockedValue { $0.closed(connection, key: connection.key) }
    }

    /// Forgets an HTTP/2 connection that got GOAWAY or closed: its open streams go on, new ones go
    /// elsewhere.
    func retire(_ connection: HTTP2Connection) {
        let isOpen = connection.channel.isActive
        machine.withLockedValue { $0.retire(connection, key: connection.key, isOpen: isOpen) }
    }

    /// Refuses new connections and returns every open one.
    func shutDown() -> (http1: [HTTP1Connection], http2: [HTTP2Connection]) {
        let (open, shared, waiters) = machine.withLockedValue { $0.shutDown() }
        for promise in waiters { promise.succeed() }
        return (open, shared)
    }
}
