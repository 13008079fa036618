import FerryCore
public import Foundation
public import NIOCore

/// The transport sessions, ferryd and the CLI use: ``NetworkTransport`` (SwiftNIO, written for speed) for
/// `http://` and `https://`, speaking HTTP/2 over TLS when the server picks `h2` by ALPN (unless
/// ``TransportOptions/httpVersion`` is `.http1Only`), HTTP/1.1 otherwise.
///
/// AsyncHTTPClient carried https and HTTP/2 until Ferry's own HTTP/2 landed; it ran a 1 GiB https download
/// at 0.17× curl and small requests at half curl's rate (docs/BENCHMARKS.md), so it is no longer used.
public final class StandardTransport: HTTPTransport {
    /// Settings for the transport.
    public typealias Options = TransportOptions

    private let native: NetworkTransport
    /// HTTP/3, when the options ask for it only (``SessionConfiguration/HTTPVersionPreference/http3Only``).
    private let http3: HTTP3Transport?

    /// Creates the transport the options call for.
    /// - Throws: ``FerryError`` when a trust root, client identity or proxy setting cannot be used.
    public init(options: Options = Options()) throws {
        native = NetworkTransport(options: options)
        try native.checkSettings()
        if options.httpVersion == .http3Only {
            // QUIC does not go through an HTTP or SOCKS proxy (CONNECT carries TCP): said once, here.
            if let proxies = options.proxies, proxies.http != nil || proxies.https != nil {
                throw FerryError(.invalidOperation, "HTTP/3 (QUIC over UDP) does not go through a proxy; leave out the proxy or --http3-only")
            }
            http3 = try HTTP3Transport(options: options)
        } else {
            http3 = nil
        }
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        if let http3 { return try await http3.send(request, deadline: deadline) }
        return try await native.send(request, deadline: deadline)
    }

    /// Throws what is wrong with the TLS or proxy settings (already checked by ``init(options:)``).
    public func checkSettings() throws {
        try native.checkSettings()
    }

    /// The transport enforces the deadline over the body (HTTP/3 leaves it to the engine).
    public var enforcesDeadlineOverBody: Bool { http3 == nil }

    public func multiplexes(_ url: URL) -> Bool { http3 != nil || native.multiplexes(url) }

    public func shutdown() async throws {
        try await http3?.shutdown()
        try await native.shutdown()
    }
}

extension StandardTransport: ByteStreamConnector {
    public func openByteStream(host: String, port: Int, tls: [String]?, deadline: NIODeadline) async throws -> ByteStream {
        try await native.openByteStream(host: host, port: port, tls: tls, deadline: deadline)
    }

    public func startTLS(on stream: ByteStream, deadline: NIODeadline) async throws {
        try await native.startTLS(on: stream, deadline: deadline)
    }
}
