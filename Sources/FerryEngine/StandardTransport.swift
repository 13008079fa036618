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
    private let altServices: AltServiceStore?
    /// HTTP/3 only for origins an `Alt-Svc` offered it for (the store's), TCP for the rest.
    private let onlyWhereAdvertised: Bool
    /// With `.automatic` and no proxy: the HTTP/3 transport made for the first request that assumes
    /// HTTP/3 (``TransportRequest/assumesHTTP3Capable``), when the options made none.
    private let assumedHTTP3: Mutex<HTTP3Transport?>
    private let options: Options
    private let mayAssumeHTTP3: Bool
    /// What `--http3` learned per origin: an Alt-Svc's HTTP/3 port, or that QUIC did not connect there
    /// (then TCP for ten minutes, as browsers do).
    private let http3Origins = Mutex<[String: HTTP3OriginState]>([:])

    /// Creates the transport the options call for.
    /// - Throws: ``FerryError`` when a trust root, client identity or proxy setting cannot be used.
    public init(options: Options = Options()) throws {
        native = NetworkTransport(options: options)
        self.options = options
        assumedHTTP3 = Mutex(nil)
        http3HeadStart = options.http3HeadStart
        altServices = options.altServices
        try native.checkSettings()
        let proxied = options.proxies.map { $0.http != nil || $0.https != nil } ?? false
        onlyWhereAdvertised = options.httpVersion == .automatic && !proxied && options.altServices != nil
        mayAssumeHTTP3 = options.httpVersion == .automatic && !proxied
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
        case .automatic where !proxied && options.altServices != nil:
            // An Alt-Svc store (curl's --alt-svc): HTTP/3 where an origin's answer offered it.
            http3 = try HTTP3Transport(options: options)
            fallsBack = true
        default:
            // (--http3 through a proxy: TCP, as curl does.)
            http3 = nil
            fallsBack = false
        }
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let assumed = request.assumesHTTP3Capable && mayAssumeHTTP3
        guard let http3 = try http3 ?? (assumed ? assumedTransport() : nil) else {
            return remember(try await native.send(request, deadline: deadline), url: request.url)
        }
        guard fallsBack || assumed else { return remember(try await http3.send(request, deadline: deadline), url: request.url) }
        guard request.url.scheme?.lowercased() == "https", let host = request.url.host else {
            return try await native.send(request, deadline: deadline)
        }
        let origin = "\(host.lowercased()):\(request.url.port ?? 443)"
        let state = http3Origins.withLock { $0[origin] }
        let alternativePort = state?.alternativePort ?? altServices?.http3Port(host: host, port: request.url.port ?? 443)
        if let failedAt = state?.failedAt, NIODeadline.now() < failedAt + .minutes(10) {
            return remember(try await native.send(request, deadline: deadline), url: request.url)
        }
        if onlyWhereAdvertised, alternativePort == nil, !assumed {
            return remember(try await native.send(request, deadline: deadline), url: request.url)
        }
        do {
            // QUIC's head start over TCP (RFC 8305's race, as curl runs it for --http3): 250 ms where
            // nothing said the origin speaks HTTP/3, 3 s where its Alt-Svc did.
            let headStart = http3HeadStart ?? (alternativePort == nil ? .milliseconds(250) : .seconds(3))
            return remember(try await http3.send(request, deadline: deadline, port: alternativePort, headStart: headStart), url: request.url)
        } catch let failure as HTTP3Transport.ConnectFailure {
            if !failure.slow { http3Origins.withLock { $0[origin, default: HTTP3OriginState()].failedAt = NIODeadline.now() } }
            do {
                return remember(try await native.send(request, deadline: deadline), url: request.url)
            } catch let tcp as FerryError where failure.slow && tcp.code == .cannotConnectToHost {
                // TCP cannot connect while the QUIC handshake is still going (a server that speaks only
                // HTTP/3 there, on a loaded machine): as RFC 8305 races, the other attempt may still
                // win. The request waits for that handshake; if it fails too, TCP's error stands.
                do {
                    return remember(try await http3.send(request, deadline: deadline, port: alternativePort, headStart: nil), url: request.url)
                } catch let quic as FerryError where quic.code == .timedOut || quic.code == .cannotConnectToHost {
                    // Neither could connect: TCP's words (the usual way to that server).
                    throw tcp
                }
            }
        }
    }

    /// The HTTP/3 transport for requests that assume HTTP/3 where the options made none: made once.
    private func assumedTransport() throws -> HTTP3Transport {
        try assumedHTTP3.withLock { made in
            if let made { return made }
            let transport = try HTTP3Transport(options: options)
            made = transport
            return transport
        }
    }

    /// An answer's `Alt-Svc` (RFC 7838) taken in: into the store when there is one, and an
    /// `h3=":PORT"` for the same host remembered for the process, so HTTP/3 is tried on that port next.
    private func remember(_ response: TransportResponse, url: URL) -> TransportResponse {
        let values = response.headers.values("alt-svc")
        guard !values.isEmpty, url.scheme?.lowercased() == "https", let host = url.host else { return response }
        let port = url.port ?? 443
        altServices?.record(values, host: host, port: port, protocolName: response.protocolName)
        if fallsBack, let alternative = AltService.http3Port(values, host: host) {
            http3Origins.withLock { $0["\(host.lowercased()):\(port)"] = HTTP3OriginState(alternativePort: alternative) }
        }
        return response
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
        try await assumedHTTP3.withLock { $0 }?.shutdown()
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

extension StandardTransport: NetworkPathFollowing {
    /// HTTP/3 connections move to the new network (those whose server allows it); TCP's cannot.
    public func networkPathChanged() async {
        await http3?.migrateConnections()
    }
}
