import FerryCore
import FerryQUIC
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// HTTP/3 (RFC 9114) for https URLs, on FerryQUIC's connections over NIO's datagram channels: one QUIC
/// connection per origin, a request per bidirectional stream. The server's certificate chain is judged
/// as over TCP (``TLSClient``: the roots, `--cacert`, pins, the session's delegate).
///
/// Request bodies stream within a bounded queue (`HTTP3Connection+RequestBody`); connections migrate
/// (`HTTP3Connection+Migration`). Not yet: a client certificate, 0-RTT (docs/HTTP3.md).
final class HTTP3Transport: HTTPTransport, Sendable {
    private let tls: TLSClient
    private let options: TransportOptions
    private let connections = Mutex<[String: Task<HTTP3Connection, any Error>]>([:])
    /// Origins whose QUIC handshake outran its head start (``send(_:deadline:port:headStart:)``) and is
    /// still going: TCP serves them at once until it ends.
    private let slowOrigins = Mutex<Set<String>>([])

    /// - Throws: ``FerryError`` for settings QUIC cannot honour: TLS below 1.3 (QUIC is TLS 1.3, RFC
    ///   9001 §4.2), a client certificate (not offered over QUIC yet), a Unix socket.
    init(options: TransportOptions) throws {
        if options.maximumTLSVersion < .tlsv13 {
            throw FerryError(.invalidOperation, "HTTP/3 needs TLS 1.3, and the highest TLS version allowed is lower (--tls-max)")
        }
        if options.tls.clientCertificatePEM != nil {
            throw FerryError(.invalidOperation, "a client certificate (--cert) is not sent over HTTP/3 yet; use --http2")
        }
        if options.unixSocketPath != nil {
            throw FerryError(.invalidOperation, "HTTP/3 runs over UDP, not a Unix socket")
        }
        tls = try TLSClient(options: options, protocols: ["h3"])
        self.options = options
    }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        try await send(request, deadline: deadline, port: nil, headStart: nil)
    }

    /// A QUIC connection that could not be made (as opposed to a request that failed on one), or not
    /// within its head start: what `--http3` falls back to TCP for.
    struct ConnectFailure: Error {
        var error: FerryError
        /// The handshake is still going (it may serve later requests); it has not failed.
        var slow = false
    }

    /// `send` on UDP port `port` (an Alt-Svc's; nil: the URL's). With a `headStart` the handshake
    /// races TCP as RFC 8305 races addresses: a connection not up within it throws ``ConnectFailure``
    /// (the caller goes to TCP), while the handshake goes on in the background, within the connect
    /// timeout (10 s by default), for the requests after; one that cannot be made throws it at once.
    func send(_ request: TransportRequest, deadline: NIODeadline, port: Int?, headStart: Duration?) async throws -> TransportResponse {
        guard request.url.scheme?.lowercased() == "https", let host = request.url.host, !host.isEmpty else {
            throw FerryError(.unsupportedURL, "HTTP/3 carries https URLs only, not \(request.url.absoluteString)", failingURL: request.url.absoluteString)
        }
        let port = port ?? request.url.port ?? 443
        var refusals = RefusalRetries(request)
        while true {
            let connection: HTTP3Connection
            if let headStart {
                let attemptDeadline = NIODeadline.now() + .nanoseconds(Int64((options.connectTimeout ?? 10) * 1e9))
                connection = try await racedConnection(host: host, port: port, deadline: attemptDeadline, url: request.url, headStart: headStart)
            } else {
                connection = try await self.connection(host: host, port: port, deadline: deadline, url: request.url)
            }
            do {
                return try await connection.send(request, deadline: deadline)
            } catch ConnectionError.refused(let reason) {
                // Not processed (a GOAWAY below its stream): sent again on a new connection, as over HTTP/2.
                try refusals.refused(reason, url: request.url)
            }
        }
    }

    /// The origin's connection when its handshake is done within `headStart` (at once when an
    /// earlier request already waited out its head start), else ``ConnectFailure``.
    private func racedConnection(host: String, port: Int, deadline: NIODeadline, url: URL, headStart: Duration) async throws -> HTTP3Connection {
        let key = "\(host.lowercased()):\(port)"
        let task = connectionTask(host: host, port: port, key: key, deadline: deadline)
        let wait = slowOrigins.withLock { $0.contains(key) } ? Duration.zero : headStart
        switch await Self.outcome(of: task, within: wait) {
        case nil:
            slowOrigins.withLock { _ = $0.insert(key) }
            let milliseconds = headStart.components.seconds * 1_000 + headStart.components.attoseconds / 1_000_000_000_000_000
            throw ConnectFailure(
                error: FerryError(.timedOut, "no QUIC handshake with \(host):\(port) within \(milliseconds) ms (UDP may be blocked); TCP serves meanwhile"),
                slow: true
            )
        case .success(let connection) where connection.isUsable:
            slowOrigins.withLock { _ = $0.remove(key) }
            return connection
        case .success:
            connections.withLock { if $0[key] == task { $0[key] = nil } }
            return try await racedConnection(host: host, port: port, deadline: deadline, url: url, headStart: headStart)
        case .failure(let error):
            slowOrigins.withLock { _ = $0.remove(key) }
            connections.withLock { if $0[key] == task { $0[key] = nil } }
            throw ConnectFailure(error: Self.words(error, url: url))
        }
    }

    /// `task`'s result if it ends within `wait`, nil if not (the task goes on).
    private static func outcome(of task: Task<HTTP3Connection, any Error>, within wait: Duration) async -> Result<HTTP3Connection, any Error>? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTP3Connection, any Error>?, Never>) in
            let pending = NIOLockedValueBox<CheckedContinuation<Result<HTTP3Connection, any Error>?, Never>?>(continuation)
            let timer = Task {
                try? await Task.sleep(for: wait)
                pending.withLockedValue { $0.take() }?.resume(returning: nil)
            }
            Task {
                let result = await task.result
                timer.cancel()
                pending.withLockedValue { $0.take() }?.resume(returning: result)
            }
        }
    }

    /// Every open connection moves to a new socket (the machine changed networks); one whose server
    /// does not allow it stays where it is (its requests fail if that path is gone, and a download
    /// continues from its checkpoint over a new connection).
    func migrateConnections() async {
        let tasks = connections.withLock { Array($0.values) }
        for task in tasks {
            guard let connection = try? await task.value, connection.isUsable else { continue }
            try? await connection.migrate()
        }
    }

    /// Each exchange's timer (an event-loop task, cancelled when the body ends) ends a body still
    /// being read at the deadline, so the engine starts no timer task per request (a cancelled
    /// `Task.sleep` holds its memory until the time it was for: 0.6 KB a request for a minute, 600 MB
    /// at HTTP/3's 10,000 requests a second).
    var enforcesDeadlineOverBody: Bool { true }

    /// Every request to an origin shares its one QUIC connection.
    func multiplexes(_ url: URL) -> Bool { true }

    func shutdown() async throws {
        let tasks = connections.withLock { connections in
            defer { connections = [:] }
            return Array(connections.values)
        }
        for task in tasks {
            // A handshake still going (one that lost its race to TCP) is given up.
            task.cancel()
            await (try? task.value)?.close()
        }
    }

    /// The origin's connection attempt: the one under way or done, or a new one.
    private func connectionTask(host: String, port: Int, key: String, deadline: NIODeadline) -> Task<HTTP3Connection, any Error> {
        let (tls, timeout) = (tls, options.connectTimeout)
        // --resolve and -4/-6 as over TCP.
        let (address, family) = (options.address(host: host, port: port), options.addressFamily)
        return connections.withLock { connections -> Task<HTTP3Connection, any Error> in
            if let existing = connections[key] { return existing }
            let made = Task {
                try await HTTP3Connection.connect(
                    host: host, address: address, family: family, port: port, tls: tls, deadline: Self.connectDeadline(deadline, timeout)
                )
            }
            connections[key] = made
            return made
        }
    }

    /// The origin's open connection, or a new one (its handshake done) when it has none.
    private func connection(host: String, port: Int, deadline: NIODeadline, url: URL) async throws -> HTTP3Connection {
        let key = "\(host.lowercased()):\(port)"
        let task = connectionTask(host: host, port: port, key: key, deadline: deadline)
        do {
            let connection = try await task.value
            if connection.isUsable { return connection }
        } catch {
            connections.withLock { if $0[key] == task { $0[key] = nil } }
            throw Self.words(error, url: url)
        }
        // Closed since: one more, in its place.
        connections.withLock { if $0[key] == task { $0[key] = nil } }
        return try await connection(host: host, port: port, deadline: deadline, url: url)
    }

    private static func connectDeadline(_ deadline: NIODeadline, _ timeout: Double?) -> NIODeadline {
        guard let timeout else { return deadline }
        return min(deadline, .now() + .nanoseconds(Int64(timeout * 1e9)))
    }

    private static func words(_ error: any Error, url: URL) -> FerryError {
        if var error = error as? FerryError {
            if error.failingURL == nil { error.failingURL = url.absoluteString }
            return error
        }
        return FerryError(.cannotConnectToHost, "HTTP/3 could not connect: \(error)", failingURL: url.absoluteString)
    }
}
