import FerryCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOTLS

/// Opens the connections of ``NetworkTransport``, one stage per step:
/// 1. the socket: TCP (or a unix-domain socket) to the host, or to its proxy (``socket(_:timeout:)``);
/// 2. the proxy's tunnel, CONNECT or SOCKS5, when the route has one (``openTunnel(_:on:timeout:)``);
/// 3. TLS, checked by ``TLSClient`` (``finishHandshake(_:on:timeout:details:)``);
/// 4. ALPN's choice (``installHandlers(_:on:)``);
/// 5. the protocol's pipeline (``protocolPipeline(_:http2:key:secure:)``): HTTP/1.1, HTTP/2, or none
///    for a byte stream.
///
/// Above the factory nothing knows which protocol a connection speaks but the ``Connection`` it
/// returns, which is where a third one (HTTP/3 over QUIC) joins. async-http-client's
/// `HTTPConnectionPool+Factory.swift` shows the shape.
struct ConnectionFactory: Sendable {
    /// A new connection: HTTP/1.1, or HTTP/2 when ALPN chose `h2`.
    enum Connection {
        case http1(HTTP1Connection)
        case http2(HTTP2Connection)
        /// A byte stream (``NetworkTransport/openByteStream(host:port:tls:deadline:)``): TLS and the
        /// proxy's tunnel in place, no HTTP handlers, outside the pool.
        case raw(any Channel, ConnectionInfo)

        var info: ConnectionInfo {
            switch self {
            case .http1(let connection): connection.info
            case .http2(let connection): connection.info
            case .raw(_, let info): info
            }
        }
    }

    let options: TransportOptions
    let group: any EventLoopGroup
    let pool: ConnectionPool
    let http2Settings: HTTP2Settings
    /// Every connection's and stream's idle timeout, and the connect timeout unless one is set.
    let idleTimeout: TimeAmount

    /// One connection being opened: what it is for, and the promises its stages complete.
    struct Attempt: Sendable {
        let route: ConnectionRoute
        /// Nil: no TLS.
        let tls: TLSClient?
        /// A byte stream: no HTTP handlers, outside the pool.
        let raw: Bool
        let report = TLSReport()
        let handshake: EventLoopPromise<TLSHandshakeHandler.Outcome>?
        /// The proxy's tunnel, and its promise, when the route has one.
        let tunnel: ProxyHandshake?
        let tunnelOpen: EventLoopPromise<Void>?
        /// The protocol's handlers are in place (after ALPN over TLS).
        let configured: EventLoopPromise<Connection>

        init(route: ConnectionRoute, tls: TLSClient?, raw: Bool, tunnel: ProxyHandshake?, loop: any EventLoop) {
            self.route = route
            self.tls = tls
            self.raw = raw
            self.tunnel = tunnel
            handshake = tls == nil ? nil : loop.makePromise(of: TLSHandshakeHandler.Outcome.self)
            tunnelOpen = tunnel == nil ? nil : loop.makePromise(of: Void.self)
            configured = loop.makePromise(of: Connection.self)
        }

        /// Fails every stage still waiting.
        func fail(_ error: any Error) {
            handshake?.fail(error)
            tunnelOpen?.fail(error)
            configured.fail(error)
        }
    }

    /// Opens a connection along `route`, with TLS through `tls` (nil: none), done by `deadline`; a
    /// `raw` one carries bytes, not HTTP (always tunnelled through an HTTP proxy), and stays outside the
    /// pool. An HTTP connection is recorded in the pool before it is returned.
    func connect(_ route: ConnectionRoute, deadline: NIODeadline, tls: TLSClient?, raw: Bool) async throws -> Connection {
        let timeout = connectTimeout(deadline)
        let tunnel = try await Self.tunnelHandshake(route, options: options, always: raw)
        let attempt = Attempt(route: route, tls: tls, raw: raw, tunnel: tunnel, loop: group.next())
        let started = Date()
        let channel = try await socket(attempt, timeout: timeout)
        var details = ConnectionInfo.Details(
            connectStart: started,
            connectEnd: Date(),
            remoteAddress: Self.describe(channel.remoteAddress),
            localAddress: Self.describe(channel.localAddress)
        )
        try await openTunnel(attempt, on: channel, timeout: timeout)
        try await finishHandshake(attempt, on: channel, timeout: timeout, details: &details)
        let connection: Connection
        // (A connection that closes before ALPN's handler ran never configures.)
        channel.closeFuture.whenComplete { _ in attempt.configured.fail(ChannelError.ioOnClosedChannel) }
        do {
            connection = try await attempt.configured.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw FerryError(
                .cannotConnectToHost,
                "the connection could not be set up: \(TransportErrors.ferryError(for: error).localizedDescription)",
                failingURL: route.target.url
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

    /// The connect timeout: the option's, else the idle timeout; never past `deadline`.
    func connectTimeout(_ deadline: NIODeadline) -> TimeAmount {
        var timeout = options.connectTimeout.map { TimeAmount.milliseconds(Int64($0 * 1000)) } ?? idleTimeout
        if deadline < .distantFuture {
            // (distantFuture minus now does not fit a TimeAmount.)
            let now = NIODeadline.now()
            timeout = min(timeout, deadline > now ? deadline - now : .milliseconds(1))
        }
        return timeout
    }

    // MARK: Stage 1: the socket

    /// Connects to the host, or to the route's proxy, and puts the first handlers in place: the
    /// tunnel's when there is one, else the rest (``installHandlers(_:on:)``).
    func socket(_ attempt: Attempt, timeout: TimeAmount) async throws -> any Channel {
        let route = attempt.route
        let target = route.target
        let bootstrap = ClientBootstrap(group: attempt.configured.futureResult.eventLoop)
            .connectTimeout(timeout)
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
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tunnel = attempt.tunnel, let tunnelOpen = attempt.tunnelOpen {
                        try channel.pipeline.syncOperations.addHandler(
                            ProxyTunnelHandler(handshake: tunnel, promise: tunnelOpen)
                        )
                    } else {
                        try installHandlers(attempt, on: channel)
                    }
                }
            }
        let (connectHost, connectPort) = route.proxy.map { (options.address(host: $0.host, port: $0.port), $0.port) }
            ?? (options.address(host: target.host, port: target.port), target.port)
        do {
            if let socket = options.unixSocketPath {
                return try await bootstrap.connect(unixDomainSocketPath: socket).get()
            } else if let family = options.addressFamily {
                let address = try await Self.resolve(connectHost, port: connectPort, family: family, url: target.url)
                return try await bootstrap.connect(to: address).get()
            } else {
                return try await bootstrap.connect(host: connectHost, port: connectPort).get()
            }
        } catch ChannelError.connectTimeout {
            attempt.fail(ChannelError.ioOnClosedChannel)
            throw FerryError(
                .timedOut,
                "connecting to \(route.proxy.map { "the proxy \($0)" } ?? target.host) took too long",
                failingURL: target.url
            )
        } catch {
            attempt.fail(error)
            var failure = TransportErrors.ferryError(for: error, url: target.url)
            if let proxy = route.proxy { failure.message = "the proxy \(proxy): " + failure.message }
            throw failure
        }
    }

    // MARK: Stage 2: the proxy's tunnel

    /// Waits for the proxy's tunnel, when the route has one, then puts the rest of the handlers after
    /// the tunnel's, which leaves (passing on early bytes).
    func openTunnel(_ attempt: Attempt, on channel: any Channel, timeout: TimeAmount) async throws {
        guard let tunnelOpen = attempt.tunnelOpen, let proxy = attempt.route.proxy else { return }
        let scheduled = channel.eventLoop.scheduleTask(in: timeout) {
            tunnelOpen.fail(FerryError(.timedOut, "the proxy \(proxy) took too long to open the tunnel"))
            channel.close(promise: nil)
        }
        do {
            try await tunnelOpen.futureResult.get()
            scheduled.cancel()
            try await channel.eventLoop.submit { [self] in
                try installHandlers(attempt, on: channel)
                let tunnelHandler = try channel.pipeline.syncOperations.handler(type: ProxyTunnelHandler.self)
                channel.pipeline.syncOperations.removeHandler(tunnelHandler, promise: nil)
            }.get()
        } catch {
            scheduled.cancel()
            attempt.fail(error)
            channel.close(promise: nil)
            var failure = TransportErrors.ferryError(for: error, url: attempt.route.target.url)
            failure.failingURL = failure.failingURL ?? attempt.route.target.url
            throw failure
        }
    }

    // MARK: Stage 3: TLS

    /// Waits for the TLS handshake, when there is one, and records its start and end (both taken on the
    /// loop by ``TLSHandshakeHandler``) and its version in `details`.
    func finishHandshake(
        _ attempt: Attempt,
        on channel: any Channel,
        timeout: TimeAmount,
        details: inout ConnectionInfo.Details
    ) async throws {
        guard let handshake = attempt.handshake, let tls = attempt.tls else { return }
        let host = attempt.route.target.host
        let scheduled = channel.eventLoop.scheduleTask(in: timeout) {
            handshake.fail(FerryError(.timedOut, "the TLS handshake with \(host) took too long"))
            channel.close(promise: nil)
        }
        do {
            let outcome = try await handshake.futureResult.get()
            scheduled.cancel()
            details.secureConnectionStart = outcome.start
            details.secureConnectionEnd = outcome.end
            details.tlsVersion = outcome.version
        } catch {
            scheduled.cancel()
            channel.close(promise: nil)
            attempt.configured.fail(error)
            throw Self.handshakeError(error, report: attempt.report, host: host, tls: tls, url: attempt.route.target.url)
        }
    }

    // MARK: Stages 4 and 5: ALPN and the protocol's pipeline

    /// Puts the connection's handlers in place (on its loop): without TLS the protocol's at once;
    /// with TLS the TLS handlers, then the protocol's once ALPN has spoken (NIO's negotiation handler
    /// holds back what arrives until they are in place). Completes `attempt.configured`.
    func installHandlers(_ attempt: Attempt, on channel: any Channel) throws {
        let operations = channel.pipeline.syncOperations
        let key = attempt.route.key
        let secure = attempt.route.target.secure
        guard let tls = attempt.tls, let handshake = attempt.handshake else {
            attempt.configured.succeed(
                attempt.raw ? .raw(channel, ConnectionInfo()) : try protocolPipeline(channel, http2: false, key: key, secure: secure)
            )
            return
        }
        let target = attempt.route.target
        try operations.addHandler(try tls.handler(host: target.host, port: target.port, report: attempt.report))
        try operations.addHandler(TLSHandshakeHandler(promise: handshake))
        if attempt.raw {
            attempt.configured.succeed(.raw(channel, ConnectionInfo()))
            return
        }
        try operations.addHandler(alpnHandler(attempt.configured, key: key, secure: secure))
    }

    /// The handler that waits for ALPN's choice and then puts the protocol's pipeline in place.
    func alpnHandler(
        _ configured: EventLoopPromise<Connection>,
        key: PoolKey,
        secure: Bool
    ) -> ApplicationProtocolNegotiationHandler {
        ApplicationProtocolNegotiationHandler { [self] result, channel in
            channel.eventLoop.makeCompletedFuture {
                do {
                    let http2: Bool
                    if case .negotiated("h2") = result { http2 = true } else { http2 = false }
                    configured.succeed(try protocolPipeline(channel, http2: http2, key: key, secure: secure))
                } catch {
                    configured.fail(error)
                    throw error
                }
            }
        }
    }

    /// The handlers of the protocol: HTTP/2's client, or HTTP/1.1's codec and connection handler (whose
    /// outcomes reach the pool).
    func protocolPipeline(_ channel: any Channel, http2: Bool, key: PoolKey, secure: Bool) throws -> Connection {
        let pool = self.pool
        if http2 {
            return .http2(
                try NetworkTransport.configureHTTP2(channel, key: key, pool: pool, settings: http2Settings, idleTimeout: idleTimeout)
            )
        }
        let operations = channel.pipeline.syncOperations
        let handler = HTTP1ConnectionHandler(idleTimeout: idleTimeout, copiesBody: secure)
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
            key: key
        )
        handler.onOutcome = { outcome in
            switch outcome {
            case .reusable: pool.offer(connection)
            case .closed: pool.closed(connection)
            }
        }
        return .http1(connection)
    }
}
