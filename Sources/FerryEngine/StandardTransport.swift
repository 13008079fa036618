import FerryCore
public import Foundation
public import NIOCore
import Synchronization

/// The transport sessions, ferryd and the CLI use: ``NetworkTransport`` (SwiftNIO, written for speed) for
/// `http://` and `https://`, speaking HTTP/2 over TLS when the server picks `h2` by ALPN (unless
/// ``TransportOptions/httpVersion`` is `.http1Only`), HTTP/1.1 otherwise.
///
/// AsyncHTTPClient carried https and HTTP/2 until Ferry's own HTTP/2 landed; it ran a 1 GiB https download
/// at 0.17× curl and small requests at half curl's rate (docs/BENCHMARKS.md), so it is no longer used.
public final class StandardTransport: HTTPTransport {
    /// What `--http3` knows of one origin.
    struct HTTP3OriginState {
        var alternativePort: Int?
        var failedAt: NIODeadline?
    }

    /// Settings for the transport.
    public typealias Options = TransportOptions

    private let native: NetworkTransport
    /// HTTP/3, when the options ask for it (``SessionConfiguration/HTTPVersionPreference/http3Only``,
    /// or ``SessionConfiguration/HTTPVersionPreference/http3`` with TCP as the fallback).
    private let http3: HTTP3Transport?
    private let fallsBack: Bool
    private let http3HeadStart: Duration?
    /// What `--http3` learned per origin: an Alt-Svc's HTTP/3 port, or that QUIC did not connect there
    /// (then TCP for ten minutes, as browsers do).
    private let http3Origins = Mutex<[String: HTTP3OriginState]>([:])

    /// Creates the transport the options call for.
    /// - Throws: ``FerryError`` when a trust root, client identity or proxy setting cannot be used.
    public init(options: Options = Options()) throws {
        native = NetworkTransport(options: options)
        http3HeadStart = options.http3HeadStart
        try native.checkSettings()
        let proxied = options.proxies.map { $0.http != nil || $0.https != nil } ?? false
        switch options.httpVersion {
        case .http3Only:
            // QUIC does not go through an HTTP or SOCKS proxy (CONNECT carries TCP): said once, here.
            if proxied {
                throw FerryError(.invalidOperation, "HTTP/3 (QUIC over UDP) does not go through a proxy; leave out the proxy or --http3-only")
            }
            http3 = try HTTP3Transport(options: options)
            fallsBack = false
        case .http3 where !proxied:
            http3 = try HTTP3Transport(options: options)
            fallsBack = true
        default:
            // (--http3 through a proxy: TCP, as curl does.)
            http3 = nil
            fallsBack = false
        }
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        guard let http3 else { return try await native.send(request, deadline: deadline) }
        guard fallsBack else { return try await http3.send(request, deadline: deadline) }
        guard request.url.scheme?.lowercased() == "https", let host = request.url.host else {
            return try await native.send(request, deadline: deadline)
        }
        let origin = "\(host.lowercased()):\(request.url.port ?? 443)"
        let state = http3Origins.withLock { $0[origin] }
        if let failedAt = state?.failedAt, NIODeadline.now() < failedAt + .minutes(10) {
            return try await native.send(request, deadline: deadline)
        }
        do {
            // QUIC's head start over TCP (RFC 8305's race, as curl runs it for --http3): 250 ms where
            // nothing said the origin speaks HTTP/3, 3 s where its Alt-Svc did.
            let headStart = http3HeadStart ?? (state?.alternativePort == nil ? .milliseconds(250) : .seconds(3))
            return try await http3.send(request, deadline: deadline, port: state?.alternativePort, headStart: headStart)
        } catch let failure as HTTP3Transport.ConnectFailure {
            if !failure.slow { http3Origins.withLock { $0[origin, default: HTTP3OriginState()].failedAt = NIODeadline.now() } }
            let response = try await native.send(request, deadline: deadline)
            learnAlternative(from: response, origin: origin, host: host)
            return response
        }
    }

    /// An `Alt-Svc: h3=":PORT"` (RFC 7838) for the same host: HTTP/3 is tried on that port next time.
    private func learnAlternative(from response: TransportResponse, origin: String, host: String) {
        guard let port = AltService.http3Port(response.headers.values("alt-svc"), host: host) else { return }
        http3Origins.withLock { $0[origin] = HTTP3OriginState(alternativePort: port) }
    }

    /// Throws what is wrong with the TLS or proxy settings (already checked by ``init(options:)``).
    public func checkSettings() throws {
        try native.checkSettings()
    }

    /// The transport enforces the deadline over the body, over TCP and HTTP/3 alike.
    public var enforcesDeadlineOverBody: Bool { native.enforcesDeadlineOverBody && (http3?.enforcesDeadlineOverBody ?? true) }

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
