import FerryCore
public import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOHTTP1
import NIOPosix
import NIOTLS

/// ``HTTPTransport`` for `http://` and `https://` URLs written directly on SwiftNIO: HTTP/1.1 with
/// keep-alive connections, one exchange per connection at a time; over TLS (NIOSSL, ALPN `http/1.1`)
/// with the certificate checked by ``TLSClient``.
///
/// Why not AsyncHTTPClient here: measured on loopback (docs/BENCHMARKS.md), AsyncHTTPClient's request
/// machinery — its pool's state machine, its task and delegate layers and the hops between them — cost
/// small requests a third of curl's rate and capped a discarded body below curl's. This transport does
/// only what the engine needs (the engine follows redirects, retries and decompresses itself): the caller
/// writes the request through the channel, waits once for the head, and reads a body that was usually
/// buffered while it waited. Over https the same path reached 0.17× curl through AsyncHTTPClient's HTTP/2
/// (docs/BENCHMARKS.md); see ``StandardTransport`` for which requests come here.
public final class HTTP1Transport: HTTPTransport {
    typealias Producer = HTTP1ConnectionHandler.Producer

    let options: TransportOptions
    private let group: any EventLoopGroup
    private let pool: HTTP1ConnectionPool
    private let tls: Result<TLSClient, FerryError>
    /// TLS clients for byte streams, by the ALPN protocols they offer (made when first needed).
    let byteStreamTLS = NIOLockedValueBox<[[String]: TLSClient]>([:])
    let proxies: Result<ProxySettings, FerryError>
    let http2Settings: HTTP2Settings
    /// `options.idleTimeout` as NIO counts time (every connection and stream needs it).
    let idleTimeout: TimeAmount

    /// Creates a transport with its own connections (on SwiftNIO's shared event loops). Settings that
    /// cannot be used (a CA or identity that is not PEM, a proxy variable that is not a URL) fail each
    /// request they concern; ``checkSettings()`` reports them at once.
    public convenience init(options: TransportOptions = .init()) {
        self.init(options: options, http2: HTTP2Settings())
    }

    init(options: TransportOptions, http2: HTTP2Settings) {
        self.options = options
        self.http2Settings = http2
        self.idleTimeout = .milliseconds(Int64(options.idleTimeout * 1000))
        self.group = MultiThreadedEventLoopGroup.singleton
        self.pool = HTTP1ConnectionPool(maximumIdlePerOrigin: max(options.maximumConnectionsPerHost, 8))
        do {
            // h2 first, as curl and browsers offer it; the server picks.
            let protocols = options.httpVersion == .http1Only ? ["http/1.1"] : ["h2", "http/1.1"]
            tls = .success(try TLSClient(options: options, protocols: protocols))
        } catch {
            tls = .failure(error as? FerryError ?? FerryError(.secureConnectionFailed, "cannot set up TLS: \(error)"))
        }
        if let explicit = options.proxies {
            proxies = .success(explicit)
        } else {
            do {
                proxies = .success(try ProxySettings.fromEnvironment(ProcessInfo.processInfo.environment))
            } catch {
                proxies = .failure(error as? FerryError ?? FerryError(.badURL, "\(error)"))
            }
        }
    }

    /// Throws what is wrong with the TLS or proxy settings, if anything.
    public func checkSettings() throws {
        _ = try tls.get()
        _ = try proxies.get()
    }

    public var enforcesDeadlineOverBody: Bool { true }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let target = try HTTP1Target(request.url)
        var proxy = try proxies.get().proxy(for: request.url)
        // A proxy given without credentials takes the store's, sent at once (Basic, or SOCKS5's user
        // name and password) as curl sends --proxy-user's: a proxy that asks answers 407 otherwise.
        if let server = proxy, server.username == nil, let credential = options.proxyCredential?(server) {
            proxy?.username = credential.user
            proxy?.password = credential.password
        }
        let route = HTTP1Route(target: target, proxy: proxy)
        // A request goes out again on a new connection only when the server did not take it: a reused
        // connection turned out to be closed before a byte of the answer came back, or an HTTP/2 server
        // refused the stream (GOAWAY below it, or REFUSED_STREAM). Only if its body can be sent again.
        let replayable: Bool
        switch request.body {
        case nil, .bytes: replayable = true
        case .stream: replayable = false
        }
        let mayShare = target.secure && options.httpVersion != .http1Only
        var refusals = 0
        while true {
            var timing = TransportTiming()
            timing.proxy = proxy?.description
            var reused = true
            do {
                switch pool.claim(origin: route.key, mayShare: mayShare, loop: group.next()) {
                case .wait(let firstConnection):
                    try await firstConnection.get()
                    continue
                case .idle(let connection):
                    connection.info.describe(into: &timing, reused: true)
                    return try await exchange(request, route: route, on: connection, timing: timing, deadline: deadline)
                case .shared(let connection):
                    connection.info.describe(into: &timing, reused: true)
                    return try await exchangeHTTP2(request, route: route, on: connection, timing: timing, deadline: deadline)
                case .connect(let first):
                    reused = false
                    let made: Connection
                    do {
                        made = try await connect(route, deadline: deadline)
                    } catch {
                        if let first { pool.settle(origin: route.key, first: first, speaksHTTP1: false) }
                        throw error
                    }
                    switch made {
                    case .http1(let connection):
                        if let first { pool.settle(origin: route.key, first: first, speaksHTTP1: true) }
                        connection.info.describe(into: &timing, reused: false)
                        return try await exchange(request, route: route, on: connection, timing: timing, deadline: deadline)
                    case .http2(let connection):
                        if let first { pool.settle(origin: route.key, first: first, speaksHTTP1: false) }
                        connection.info.describe(into: &timing, reused: false)
                        return try await exchangeHTTP2(request, route: route, on: connection, timing: timing, deadline: deadline)
                    case .raw(let channel, _):
                        channel.close(promise: nil)
                        preconditionFailure("an HTTP connection came back as a byte stream")
                    }
                }
            } catch HTTP1ConnectionError.closedBeforeResponse {
                if reused && replayable { continue }
                throw FerryError(
                    .networkConnectionLost,
                    "the server closed the connection before answering",
                    failingURL: request.url.absoluteString
                )
            } catch HTTP1ConnectionError.refused(let reason) {
                refusals += 1
                if replayable && refusals <= 3 { continue }
                throw FerryError(
                    .networkConnectionLost,
                    "the server refused the request without processing it (\(reason))"
                        + (replayable ? "" : "; its streamed body cannot be sent again"),
                    failingURL: request.url.absoluteString
                )
            } catch var error as FerryError {
                error.failingURL = error.failingURL ?? request.url.absoluteString
                throw error
            }
        }
    }

    /// Whether requests to `url`'s origin go over a shared HTTP/2 connection now (so a per-host limit
    /// on exchanges would only hold back streams, not connections).
    public func multiplexes(_ url: URL) -> Bool {
        // Asked before every request: no URL parsing beyond what URL already did.
        guard url.scheme?.asciiLowercased == "https", var host = url.host?.asciiLowercased else { return false }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return pool.isShared(origin: "https://\(host):\(url.port ?? 443)")
    }

    /// Fails what is in flight and closes every connection; returns when they are closed, or after
    /// ``shutdownGrace`` at most (a TLS peer that never answers close_notify, a channel still being set
    /// up) — a session's didBecomeInvalid waits for this, and must not wait forever.
    public func shutdown() async throws {
        let (open, shared) = pool.shutDown()
        for connection in open {
            let handler = connection.handler
            handler.eventLoop.execute { handler.value.shutDown() }
        }
        for connection in shared { connection.shutDown() }
        let channels = open.map(\.channel) + shared.map(\.channel)
        guard let loop = channels.first?.eventLoop else { return }
        // Closed directly as well: the handler closes through its context, which a channel whose
        // pipeline is not set up yet does not have.
        for channel in channels { channel.close(promise: nil) }
        let closed = EventLoopFuture.andAllComplete(channels.map(\.closeFuture), on: loop)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = NIOLockedValueBox(false)
            let finish: @Sendable () -> Void = {
                if once.withLockedValue({ done in defer { done = true }; return !done }) { continuation.resume() }
            }
            closed.whenComplete { _ in finish() }
            loop.scheduleTask(in: Self.shutdownGrace) { finish() }
        }
    }

    /// The longest ``shutdown()`` waits for connections to close: long enough for a GOAWAY and a TLS
    /// close_notify to go out, not for the peer's answer. A server that keeps a TLS connection open
    /// without answering close_notify held every finished `ferry get` over it for the old 2 s (and a
    /// `--max-time` past its bound); nothing is lost by not waiting for it, as everything asked for has
    /// arrived or been given up.
    static let shutdownGrace = TimeAmount.milliseconds(250)

    // MARK: Connections

    /// A new connection: HTTP/1.1, or HTTP/2 when ALPN chose `h2`.
    enum Connection {
        case http1(HTTP1Connection)
        case http2(HTTP2Connection)
        /// A byte stream (``openByteStream(to:port:tls:tunnel:deadline:)``): TLS and the proxy's tunnel
        /// in place, no HTTP handlers, outside the pool.
        case raw(any Channel, ConnectionInfo)

        var info: ConnectionInfo {
            switch self {
            case .http1(let connection): connection.info
            case .http2(let connection): connection.info
            case .raw(_, let info): info
            }
        }
    }

    /// What a connection is for: HTTP exchanges (the pool's), or a byte stream with TLS offering
    /// `protocols` by ALPN (nil: no TLS).
    enum Purpose: Sendable {
        case http
        case raw(tlsProtocols: [String]?)
    }

    func connect(_ route: HTTP1Route, deadline: NIODeadline, purpose: Purpose = .http) async throws -> Connection {
        let target = route.target
        let pool = self.pool
        let idle = idleTimeout
        let key = route.key
        var connectTimeout = options.connectTimeout.map { TimeAmount.milliseconds(Int64($0 * 1000)) } ?? idle
        if deadline < .distantFuture {
            // (distantFuture minus now does not fit a TimeAmount.)
            let now = NIODeadline.now()
            connectTimeout = min(connectTimeout, deadline > now ? deadline - now : .milliseconds(1))
        }
        let tls: TLSClient?
        switch purpose {
        case .http: tls = target.secure ? try self.tls.get() : nil
        case .raw(let protocols): tls = try protocols.map { try tlsClient(protocols: $0) }
        }
        let report = TLSReport()
        let loop = group.next()
        let handshake = tls == nil ? nil : loop.makePromise(of: TLSHandshakeHandler.Outcome.self)
        let host = target.host
        let port = target.port
        let tunnel: ProxyHandshake?
        if case .raw = purpose {
            tunnel = try await tunnelHandshake(route, always: true)
        } else {
            tunnel = try await tunnelHandshake(route)
        }
        let tunnelOpen = tunnel == nil ? nil : loop.makePromise(of: Void.self)
        let started = Date()
        let configured = loop.makePromise(of: Connection.self)
        let http2 = http2Settings
        let secure = target.secure
        // The handlers for the protocol: HTTP/1.1 at once without TLS, otherwise when ALPN has spoken
        // (NIO's negotiation handler holds back what arrives until they are in place).
        let configure: @Sendable (any Channel, _ h2: Bool) throws -> Connection = { channel, h2 in
            if h2 {
                return .http2(try Self.configureHTTP2(channel, origin: key, pool: pool, settings: http2, idleTimeout: idle))
            }
            let operations = channel.pipeline.syncOperations
            let handler = HTTP1ConnectionHandler(idleTimeout: idle, copiesBody: secure)
            // Without NIO's outbound header check: every field was checked already (Request.validate
            // refuses CR, LF and NUL and names that are not tokens; the fields added here come from the
            // URL, the cookie store and base64), and checking twice was 3 % of a small request's CPU.
            // What follows a 101 is forwarded when the decoder is removed (a connection that becomes a stream).
            // Informational answers (1xx but 101) are forwarded, for the task's delegate
            // (didReceiveInformationalResponse); the handler reads them apart from the final head.
            try operations.addHandlers([
                HTTPRequestEncoder(),
                ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .forward)),
            ])
            try operations.addHandler(handler)
            let connection = HTTP1Connection(
                channel: channel,
                handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
                origin: key
            )
            handler.onOutcome = { outcome in
                switch outcome {
                case .reusable: pool.offer(connection)
                case .closed: pool.closed(connection)
                }
            }
            return .http1(connection)
        }
        // The connection's handlers: at once for a direct connection, after the tunnel for a proxy's.
        let raw: Bool
        if case .raw = purpose { raw = true } else { raw = false }
        let install: @Sendable (any Channel) throws -> Void = { channel in
            let operations = channel.pipeline.syncOperations
            guard let tls, let handshake else {
                configured.succeed(raw ? .raw(channel, ConnectionInfo()) : try configure(channel, false))
                return
            }
            try operations.addHandler(try tls.handler(host: host, port: port, report: report))
            try operations.addHandler(TLSHandshakeHandler(promise: handshake))
            if raw {
                configured.succeed(.raw(channel, ConnectionInfo()))
                return
            }
            try operations.addHandler(
                ApplicationProtocolNegotiationHandler { result, channel in
                    channel.eventLoop.makeCompletedFuture {
                        do {
                            let h2: Bool
                            if case .negotiated("h2") = result { h2 = true } else { h2 = false }
                            configured.succeed(try configure(channel, h2))
                        } catch {
                            configured.fail(error)
                            throw error
                        }
                    }
                }
            )
        }
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            // (TCP only: a unix-domain socket has no Nagle to switch off.)
            .channelOption(.socketOption(.tcp_nodelay), value: options.unixSocketPath == nil ? 1 : 0)
            // Large bodies arrive in reads of up to 1 MiB (NIO's default stops at 64 KiB): fewer reads,
            // and fewer chunks for the reader to take. Over TLS at most 32 KiB: NIOSSL decrypts a whole
            // read into one buffer that starts at 32 KiB and doubles (copying) as records arrive, so
            // 1 MiB reads spent 41 % of the time in memmove and peaked at 89 MB RSS; 32 KiB reads took
            // 1 GiB from nginx in 1.01–1.05 s against 1.36 s (curl: 1.21–1.28 s), at 41 MB.
            .channelOption(
                .recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(
                    minimum: 1024,
                    initial: 16384,
                    maximum: target.secure ? 32768 : 1 << 20
                )
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tunnel, let tunnelOpen {
                        try channel.pipeline.syncOperations.addHandler(
                            ProxyTunnelHandler(handshake: tunnel, promise: tunnelOpen)
                        )
                    } else {
                        try install(channel)
                    }
                }
            }
        let (connectHost, connectPort) = route.proxy.map { (options.address(host: $0.host, port: $0.port), $0.port) }
            ?? (options.address(host: target.host, port: target.port), target.port)
        let channel: any Channel
        do {
            if let socket = options.unixSocketPath {
                channel = try await bootstrap.connect(unixDomainSocketPath: socket).get()
            } else if let family = options.addressFamily {
                let address = try await Self.resolve(connectHost, port: connectPort, family: family, url: target.url)
                channel = try await bootstrap.connect(to: address).get()
            } else {
                channel = try await bootstrap.connect(host: connectHost, port: connectPort).get()
            }
        } catch ChannelError.connectTimeout {
            handshake?.fail(ChannelError.ioOnClosedChannel)
            tunnelOpen?.fail(ChannelError.ioOnClosedChannel)
            configured.fail(ChannelError.ioOnClosedChannel)
            throw FerryError(
                .timedOut,
                "connecting to \(route.proxy.map { "the proxy \($0)" } ?? target.host) took too long",
                failingURL: target.url
            )
        } catch {
            handshake?.fail(error)
            tunnelOpen?.fail(error)
            configured.fail(error)
            var failure = TransportErrors.ferryError(for: error, url: target.url)
            if let proxy = route.proxy { failure.message = "the proxy \(proxy): " + failure.message }
            throw failure
        }
        var details = ConnectionInfo.Details(
            connectStart: started,
            connectEnd: Date(),
            remoteAddress: Self.describe(channel.remoteAddress),
            localAddress: Self.describe(channel.localAddress)
        )
        if let tunnelOpen, let proxy = route.proxy {
            let timeout = channel.eventLoop.scheduleTask(in: connectTimeout) {
                tunnelOpen.fail(FerryError(.timedOut, "the proxy \(proxy) took too long to open the tunnel"))
                channel.close(promise: nil)
            }
            do {
                try await tunnelOpen.futureResult.get()
                timeout.cancel()
                // The real handlers go after the tunnel's, which then leaves (passing on early bytes).
                try await channel.eventLoop.submit {
                    try install(channel)
                    let tunnelHandler = try channel.pipeline.syncOperations.handler(type: ProxyTunnelHandler.self)
                    channel.pipeline.syncOperations.removeHandler(tunnelHandler, promise: nil)
                }.get()
            } catch {
                timeout.cancel()
                handshake?.fail(error)
                configured.fail(error)
                channel.close(promise: nil)
                var failure = TransportErrors.ferryError(for: error, url: target.url)
                failure.failingURL = failure.failingURL ?? target.url
                throw failure
            }
        }
        if let handshake, let tls {
            details.secureConnectionStart = Date()
            let timeout = channel.eventLoop.scheduleTask(in: connectTimeout) {
                handshake.fail(FerryError(.timedOut, "the TLS handshake with \(host) took too long"))
                channel.close(promise: nil)
            }
            do {
                let outcome = try await handshake.futureResult.get()
                timeout.cancel()
                details.secureConnectionEnd = outcome.end
                details.tlsVersion = outcome.version
            } catch {
                timeout.cancel()
                channel.close(promise: nil)
                configured.fail(error)
                throw Self.handshakeError(error, report: report, host: host, tls: tls, url: target.url)
            }
        }
        let connection: Connection
        // (A connection that closes before ALPN's handler ran never configures.)
        channel.closeFuture.whenComplete { _ in configured.fail(ChannelError.ioOnClosedChannel) }
        do {
            connection = try await configured.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw FerryError(
                .cannotConnectToHost,
                "the connection could not be set up: \(TransportErrors.ferryError(for: error).localizedDescription)",
                failingURL: target.url
            )
        }
        connection.info.details = details
        switch connection {
        case .http1(let connection): try pool.opened(connection)
        case .http2(let connection): try pool.opened(connection)
        case .raw: break
        }
        return connection
    }

    /// The tunnel a route needs: CONNECT through an HTTP proxy for https, SOCKS5 for anything; nil for a
    /// direct connection or plain http through an HTTP proxy (absolute-form requests), unless `always`
    /// (a byte stream tunnels through an HTTP proxy whatever its scheme). For `socks5`
    /// (not `socks5h`) the name is resolved here, on a thread of the pool.
    private func tunnelHandshake(_ route: HTTP1Route, always: Bool = false) async throws -> ProxyHandshake? {
        guard let proxy = route.proxy else { return nil }
        let target = route.target
        switch proxy.kind {
        case .http:
            guard target.secure || always else { return nil }
            return ProxyHandshake(
                kind: .httpConnect(proxyAuthorization: route.proxyAuthorization),
                destination: .name(target.host),
                port: target.port,
                proxyName: "the proxy \(proxy)"
            )
        case .socks5h:
            return ProxyHandshake(
                kind: .socks5(username: proxy.username, password: proxy.password),
                destination: .name(target.host),
                port: target.port,
                proxyName: "the SOCKS proxy \(proxy)"
            )
        case .socks5:
            let name = options.address(host: target.host, port: target.port)
            let address = try await Self.resolve(name, port: target.port, url: target.url)
            return ProxyHandshake(
                kind: .socks5(username: proxy.username, password: proxy.password),
                destination: .address(address),
                port: target.port,
                proxyName: "the SOCKS proxy \(proxy)"
            )
        }
    }

    /// The first address of `host` (IPv4 preferred), as bytes.
    private static func resolve(_ host: String, port: Int, url: String) async throws -> [UInt8] {
        if let address = try? SocketAddress(ipAddress: host, port: port) { return Self.bytes(of: address) }
        let addresses = try await NIOThreadPool.singleton.runIfActive {
            try? SocketAddress.makeAddressResolvingHost(host, port: port)
        }
        guard let address = addresses else {
            throw FerryError(.cannotFindHost, "cannot find the host \(host) (resolved here for a socks5:// proxy; socks5h:// lets the proxy resolve it)", failingURL: url)
        }
        return Self.bytes(of: address)
    }

    /// The first `family` address of `host` (curl's `-4`, `-6`), looked up on a thread of the pool.
    static func resolve(
        _ host: String,
        port: Int,
        family: ConnectionSettings.AddressFamily,
        url: String
    ) async throws -> SocketAddress {
        let name = family == .ipv4 ? "IPv4" : "IPv6"
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            guard (literal.protocol == .inet) == (family == .ipv4) else {
                throw FerryError(.cannotConnectToHost, "\(host) is not an \(name) address, and only \(name) was asked for", failingURL: url)
            }
            return literal
        }
        let found: SocketAddress? = try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = family == .ipv4 ? AF_INET : AF_INET6
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
            defer { freeaddrinfo(list) }
            guard let raw = first.pointee.ai_addr else { return nil }
            switch family {
            case .ipv4:
                return raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            case .ipv6:
                return raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            }
        }
        guard let found else {
            throw FerryError(.cannotFindHost, "\(host) has no \(name) address", failingURL: url)
        }
        return found
    }

    private static func bytes(of address: SocketAddress) -> [UInt8] {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            return []
        }
    }

    /// A failed handshake as a ``FerryError`` in plain words: the verification's verdict, a version
    /// mismatch, or BoringSSL's reason without its internals.
    static func handshakeError(
        _ error: any Error,
        report: TLSReport,
        host: String,
        tls: TLSClient,
        url: String
    ) -> FerryError {
        if let refusal = report.refusal {
            return FerryError(refusal.code, refusal.message, failingURL: url)
        }
        if var error = error as? FerryError {
            error.failingURL = error.failingURL ?? url
            return error
        }
        if TLSClient.isVersionMismatch(error) {
            let allowed =
                tls.minimumVersion == tls.maximumVersion
                ? "only \(tls.minimumVersion.rawValue)" : "\(tls.minimumVersion.rawValue) to \(tls.maximumVersion.rawValue)"
            return FerryError(
                .secureConnectionFailed,
                "\(host) and this client have no TLS version in common (this client allows \(allowed))",
                failingURL: url
            )
        }
        if let channelError = error as? ChannelError, channelError == .eof {
            return FerryError(
                .secureConnectionFailed,
                "\(host) closed the connection during the TLS handshake (does it speak TLS on this port?)",
                failingURL: url
            )
        }
        return FerryError(
            .secureConnectionFailed,
            "the TLS handshake with \(host) failed: \(TLSClient.plainReason(error))",
            failingURL: url
        )
    }

    /// `127.0.0.1:8443`, `[::1]:8443`.
    static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }

    // MARK: One exchange

    private func exchange(
        _ request: TransportRequest,
        route: HTTP1Route,
        on connection: HTTP1Connection,
        timing: TransportTiming,
        deadline: NIODeadline
    ) async throws -> TransportResponse {
        let loop = connection.channel.eventLoop
        let id = connection.nextExchangeID()
        let slot = HandlerSlot(connection.handler)
        let shared = HTTP1ExchangeState(timing: timing, url: request.url, informational: TransferContext.current?.informationalResponses)
        let answer = loop.makePromise(of: ExchangeAnswer.self)
        let (head, keepAlive) = Self.requestHead(request, route: route)
        let body = request.body
        let idle = request.idleTimeout.map { TimeAmount.milliseconds(Int64($0 * 1000)) }
        let channel = connection.channel
        let handler = connection.handler
        // On the loop: begins the exchange on its handler and writes the request.
        loop.execute {
            guard
                handler.value.begin(
                    id: id,
                    answer: answer,
                    slot: slot,
                    shared: shared,
                    keepAlive: keepAlive,
                    deadline: deadline,
                    idleTimeout: idle
                )
            else { return }
            shared.timing.withLockedValue { $0.requestStart = Date() }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            switch body {
            case nil:
                Self.writeEnd(channel: channel, handler: handler, shared: shared, id: id)
            case .bytes(let buffer):
                Self.writeEnd(channel: channel, handler: handler, shared: shared, id: id, last: buffer)
            case .stream(let length, let stream):
                channel.flush()
                Task {
                    await Self.pump(stream, length: length, channel: channel, handler: handler, shared: shared, id: id)
                }
            }
        }
        var response = try await response(answer: answer.futureResult, slot: slot, id: id, protocolName: "http/1.1", shared: shared)
        let answered = response.body
        let target = route.target
        response.detach = { try await Self.detach(connection, exchange: id, target: target, body: answered) }
        return response
    }

    /// The sequence exchange `id`'s body is read from, its demand passed to the driver in `slot`; the
    /// reader holds up to `watermarks.high` pieces before the connection stops for it.
    static func responseBody(
        slot: HandlerSlot,
        shared: HTTP1ExchangeState,
        id: Int,
        watermarks: (low: Int, high: Int)
    ) -> Producer.NewSequence {
        Producer.makeSequence(
            elementType: ByteBuffer.self,
            backPressureStrategy: .init(lowWatermark: watermarks.low, highWatermark: watermarks.high),
            finishOnDeinit: false,
            delegate: BodyDemand(slot: slot, shared: shared, id: id)
        )
    }

    /// Waits for exchange `id`'s answer (a cancelled task cancels the exchange) and returns the
    /// response.
    func response(
        answer: EventLoopFuture<ExchangeAnswer>,
        slot: HandlerSlot,
        id: Int,
        protocolName: String,
        shared: HTTP1ExchangeState
    ) async throws -> TransportResponse {
        let cancel: @Sendable () -> Void = {
            slot.onLoop { $0.fail(id: id, FerryError(.cancelled, "the transfer was cancelled")) }
        }
        let answer = try await TransferContext.withCancellationHandler {
            try await answer.get()
        } onCancel: {
            cancel()
        }
        let responseHead = answer.head
        var headers = Headers()
        headers.reserveCapacity(responseHead.headers.count)
        for (name, value) in responseHead.headers { headers.add(name: name, value: value) }
        return TransportResponse(
            status: Int(responseHead.status.code),
            headers: headers,
            protocolName: protocolName,
            body: answer.bodyStream,
            timing: shared.timing.withLockedValue { $0 },
            latestTiming: { shared.timing.withLockedValue { $0 } },
            cancel: cancel
        )
    }

    /// Writes the end of the request (with its last body bytes, if given) and records when it was on
    /// the wire. On the connection's loop.
    private static func writeEnd(
        channel: any Channel,
        handler: NIOLoopBound<HTTP1ConnectionHandler>,
        shared: HTTP1ExchangeState,
        id: Int,
        last: ByteBuffer? = nil
    ) {
        if let last { channel.write(HTTPClientRequestPart.body(.byteBuffer(last)), promise: nil) }
        let written = handler.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
        written.futureResult.whenComplete { result in
            switch result {
            case .success:
                shared.timing.withLockedValue { $0.requestEnd = Date() }
                handler.value.requestWritten(id: id)
            case .failure(let error):
                handler.value.fail(id: id, HTTP1ConnectionHandler.ferryError(for: error))
            }
        }
    }

    /// Writes a streamed request body, each chunk once the previous one is on the wire. With a known
    /// length the chunk that completes it goes out together with the request's end, so the request is
    /// complete (and recorded so) before the server can have answered it.
    private static func pump(
        _ stream: TransportBodyStream,
        length: Int64?,
        channel: any Channel,
        handler: NIOLoopBound<HTTP1ConnectionHandler>,
        shared: HTTP1ExchangeState,
        id: Int
    ) async {
        do {
            var sent: Int64 = 0
            var last: ByteBuffer?
            for try await chunk in stream {
                if shared.isFinished { return }
                sent += Int64(chunk.readableBytes)
                try Self.checkBodyLength(sent: sent, of: length, ended: false)
                if let length, sent == length {
                    last = chunk
                    break
                }
                let written = handler.eventLoop.makePromise(of: Void.self)
                channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(chunk)), promise: written)
                written.futureResult.whenSuccess { handler.value.wrote(id: id) }
                try await written.futureResult.get()
            }
            try Self.checkBodyLength(sent: sent, of: length, ended: true)
            let final = last
            let ended = handler.eventLoop.makePromise(of: Void.self)
            handler.eventLoop.execute {
                writeEnd(channel: channel, handler: handler, shared: shared, id: id, last: final)
                ended.succeed()
            }
            try await ended.futureResult.get()
        } catch {
            let failure = HTTP1ConnectionHandler.ferryError(for: error)
            handler.eventLoop.execute { handler.value.fail(id: id, failure) }
        }
    }

    /// The request head: the caller's fields plus Host and the body's framing; through an HTTP proxy
    /// without a tunnel, the absolute URL as target and the proxy's credentials.
    static func requestHead(_ request: TransportRequest, route: HTTP1Route) -> (HTTPRequestHead, keepAlive: Bool) {
        let target = route.target
        var headers = HTTPHeaders()
        var keepAlive = true
        var hasHost = false
        for field in request.headers {
            let name = field.name
            if Headers.sameName(name, "host") {
                hasHost = true
            } else if Headers.sameName(name, "content-length") || Headers.sameName(name, "transfer-encoding") {
                continue
            } else if Headers.sameName(name, "connection"), field.value.lowercased().contains("close") {
                keepAlive = false
            }
            headers.add(name: field.name, value: field.value)
        }
        if !hasHost { headers.replaceOrAdd(name: "Host", value: target.hostHeader) }
        if let length = Self.contentLength(of: request) {
            headers.add(name: "Content-Length", value: length)
        } else if case .stream(nil, _) = request.body {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        var uri = target.requestTarget
        if route.usesAbsoluteForm {
            uri = "http://\(target.hostHeader)\(target.requestTarget)"
            if let authorization = route.proxyAuthorization {
                headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization)
            }
        }
        let head = HTTPRequestHead(
            version: .http1_1,
            method: HTTPMethod(rawValue: request.method),
            uri: uri,
            headers: headers
        )
        return (head, keepAlive)
    }
}

extension HTTP1Transport {
    /// Throws when a streamed request body has gone past the `length` it promised, or (once `ended`)
    /// fell short of it.
    static func checkBodyLength(sent: Int64, of length: Int64?, ended: Bool) throws {
        guard let length else { return }
        if sent > length {
            throw FerryError(.invalidOperation, "the request body is longer than the \(length) bytes its length promised")
        }
        if ended, sent < length {
            throw FerryError(.invalidOperation, "the request body ended after \(sent) of the \(length) bytes its length promised")
        }
    }

    /// The Content-Length a request states: its body's length when known, 0 for a POST, PUT or PATCH
    /// without one; nil otherwise (no body, or one streamed without a length).
    static func contentLength(of request: TransportRequest) -> String? {
        switch request.body {
        case nil: ["POST", "PUT", "PATCH"].contains(request.method) ? "0" : nil
        case .bytes(let buffer): String(buffer.readableBytes)
        case .stream(let length?, _): String(length)
        case .stream(nil, _): nil
        }
    }
}

/// A target and the proxy, if any, on the way: the pool's key covers both (a connection through a
/// proxy is never reused for a direct request, nor with other proxy credentials).
struct HTTP1Route: Sendable {
    let target: HTTP1Target
    let proxy: ProxyServer?

    /// Plain http through an HTTP proxy: the request names the absolute URL, no tunnel.
    var usesAbsoluteForm: Bool { proxy?.kind == .http && !target.secure }

    /// `Basic …` for an HTTP proxy with credentials.
    var proxyAuthorization: String? {
        guard let proxy, proxy.kind == .http, let user = proxy.username else { return nil }
        let pair = "\(user):\(proxy.password ?? "")"
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }

    var key: String {
        guard let proxy else { return target.origin }
        return target.origin + " via " + proxy.description + (proxy.username.map { " as " + $0 + ":" + (proxy.password ?? "") } ?? "")
    }
}

/// Where an `http://` or `https://` request goes and how its head names it.
struct HTTP1Target: Sendable {
    let url: String
    let host: String
    let port: Int
    /// https: over TLS.
    let secure: Bool
    /// The Host field: the host, bracketed if IPv6, with the port unless it is the scheme's default.
    let hostHeader: String
    /// The origin-form request target: path and query, percent-encoded as in the URL.
    let requestTarget: String
    /// The pool's key.
    let origin: String

    init(_ url: URL) throws {
        self.url = url.absoluteString
        let scheme = url.scheme?.asciiLowercased
        guard scheme == "http" || scheme == "https" else {
            throw FerryError(
                .unsupportedURL,
                "HTTP1Transport carries only http:// and https:// URLs",
                failingURL: url.absoluteString
            )
        }
        secure = scheme == "https"
        // URL's own accessors, not URLComponents: parsing the URL again for every request was 4.5 % of
        // the caller's CPU in 20,000 sequential GETs (perf).
        let url = url.absoluteURL
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw FerryError(.badURL, "the URL has no host", failingURL: url.absoluteString)
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.host = bare
        let defaultPort = secure ? 443 : 80
        self.port = url.port ?? defaultPort
        let named = bare.contains(":") ? "[\(bare)]" : bare
        self.hostHeader = port == defaultPort ? named : "\(named):\(port)"
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        self.requestTarget = target
        self.origin = "\(secure ? "https" : "http")://\(bare.asciiLowercased):\(port)"
    }
}
