import FerryCore
import FerryQUIC
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// HTTP/3 (RFC 9114) for https URLs, on FerryQUIC's connections over NIO's datagram channels: one QUIC
/// connection per origin, a request per bidirectional stream. The server's certificate chain is judged
/// as over TCP (``TLSClient``: the roots, `--cacert`, pins, the session's delegate).
///
/// What it does not do yet (issue 42 continues): loss recovery and congestion control (RFC 9002), so a
/// lossy path stalls until the idle timeout; connection migration; request bodies that stream; Alt-Svc.
final class HTTP3Transport: HTTPTransport, Sendable {
    private let tls: TLSClient
    private let options: TransportOptions
    private let connections = Mutex<[String: Task<HTTP3Connection, any Error>]>([:])

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
        try await send(request, deadline: deadline, port: nil, connectWithin: nil)
    }

    /// A QUIC connection that could not be made (as opposed to a request that failed on one): what
    /// `--http3` falls back to TCP for.
    struct ConnectFailure: Error {
        var error: FerryError
    }

    /// `send` on UDP port `port` (an Alt-Svc's; nil: the URL's), the handshake allowed `connectWithin`
    /// seconds at most; a connection that cannot be made throws ``ConnectFailure``.
    func send(_ request: TransportRequest, deadline: NIODeadline, port: Int?, connectWithin: Double?) async throws -> TransportResponse {
        guard request.url.scheme?.lowercased() == "https", let host = request.url.host, !host.isEmpty else {
            throw FerryError(.unsupportedURL, "HTTP/3 carries https URLs only, not \(request.url.absoluteString)", failingURL: request.url.absoluteString)
        }
        let port = port ?? request.url.port ?? 443
        let connectDeadline = connectWithin.map { min(deadline, .now() + .nanoseconds(Int64($0 * 1e9))) } ?? deadline
        let connection: HTTP3Connection
        do {
            connection = try await self.connection(host: host, port: port, deadline: connectDeadline, url: request.url)
        } catch let error as FerryError where connectWithin != nil {
            throw ConnectFailure(error: error)
        }
        return try await connection.send(request, deadline: deadline)
    }

    /// Bodies are raced against the deadline by the engine.
    var enforcesDeadlineOverBody: Bool { false }

    /// Every request to an origin shares its one QUIC connection.
    func multiplexes(_ url: URL) -> Bool { true }

    func shutdown() async throws {
        let tasks = connections.withLock { connections in
            defer { connections = [:] }
            return Array(connections.values)
        }
        for task in tasks { await (try? task.value)?.close() }
    }

    /// The origin's open connection, or a new one (its handshake done) when it has none.
    private func connection(host: String, port: Int, deadline: NIODeadline, url: URL) async throws -> HTTP3Connection {
        let key = "\(host.lowercased()):\(port)"
        let (tls, timeout) = (tls, options.connectTimeout)
        // --resolve and -4/-6 as over TCP.
        let (address, family) = (options.address(host: host, port: port), options.addressFamily)
        let task = connections.withLock { connections -> Task<HTTP3Connection, any Error> in
            if let existing = connections[key] { return existing }
            let made = Task {
                try await HTTP3Connection.connect(
                    host: host, address: address, family: family, port: port, tls: tls, deadline: Self.connectDeadline(deadline, timeout)
                )
            }
            connections[key] = made
            return made
        }
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
