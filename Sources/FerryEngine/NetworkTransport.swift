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
public final class NetworkTransport: HTTPTransport {
    let options: TransportOptions
    private let group: any EventLoopGroup
    private let pool: ConnectionPool
    private let tls: Result<TLSClient, FerryError>
    /// TLS clients for byte streams, by the ALPN protocols they offer (made when first needed).
    let byteStreamTLS = NIOLockedValueBox<[[String]: TLSClient]>([:])
    let proxies: Result<ProxySettings, FerryError>
    /// Opens the connections, stage by stage (it holds the HTTP/2 settings and the idle timeout).
    let factory: ConnectionFactory

    /// Creates a transport with its own connections (on SwiftNIO's shared event loops). Settings that
    /// cannot be used (a CA or identity that is not PEM, a proxy variable that is not a URL) fail each
    /// request they concern; ``checkSettings()`` reports them at once.
    public convenience init(options: TransportOptions = .init()) {
        self.init(options: options, http2: HTTP2Settings())
    }

    init(options: TransportOptions, http2: HTTP2Settings) {
        self.options = options
        self.group = MultiThreadedEventLoopGroup.singleton
        self.pool = ConnectionPool(maximumIdlePerOrigin: max(options.maximumConnectionsPerHost, 8))
        self.factory = ConnectionFactory(
            options: options,
            group: group,
            pool: pool,
            http2Settings: http2,
            // `options.idleTimeout` as NIO counts time (every connection and stream needs it).
            idleTimeout: .milliseconds(Int64(options.idleTimeout * 1000))
        )
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
        let target = try HTTPTarget(request.url)
        var proxy = try proxies.get().proxy(for: request.url)
        // A proxy given without credentials takes the store's, sent at once (Basic, or SOCKS5's user
        // name and password) as curl sends --proxy-user's: a proxy that asks answers 407 otherwise.
        if let server = proxy, server.username == nil, let credential = options.proxyCredential?(server) {
            proxy?.username = credential.user
            proxy?.password = credential.password
        }
        let route = ConnectionRoute(target: target, proxy: proxy)
        // A request goes out again on a new connection only when the server did not take it: a reused
        // connection turned out to be closed before a byte of the answer came back, or an HTTP/2 server
        // refused the stream (GOAWAY below it, or REFUSED_STREAM). Only if its body can be sent again.
        var refusals = RefusalRetries(request)
        let mayShare = target.secure && options.httpVersion != .http1Only
        while true {
            var timing = TransportTiming()
            timing.proxy = proxy?.description
            var reused = true
            do {
                switch pool.claim(route.key, mayShare: mayShare, loop: group.next()) {
                case .wait(let firstConnection):
                    try await firstConnection.futureResult.get()
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
                        if let first { pool.settle(route.key, first: first, speaksHTTP1: false) }
                        throw error
                    }
                    switch made {
                    case .http1(let connection):
                        if let first { pool.settle(route.key, first: first, speaksHTTP1: true) }
                        connection.info.describe(into: &timing, reused: false)
                        return try await exchange(request, route: route, on: connection, timing: timing, deadline: deadline)
                    case .http2(let connection):
                        if let first { pool.settle(route.key, first: first, speaksHTTP1: false) }
                        connection.info.describe(into: &timing, reused: false)
                        return try await exchangeHTTP2(request, route: route, on: connection, timing: timing, deadline: deadline)
                    case .raw(let channel, _):
                        channel.close(promise: nil)
                        preconditionFailure("an HTTP connection came back as a byte stream")
                    }
                }
            } catch ConnectionError.closedBeforeResponse {
                if reused && refusals.replayable { continue }
                throw FerryError(
                    .networkConnectionLost,
                    "the server closed the connection before answering",
                    failingURL: request.url.absoluteString
                )
            } catch ConnectionError.refused(let reason) {
                try refusals.refused(reason, url: request.url)
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
        return pool.isShared(origin: PoolKey.Origin(secure: true, host: host, port: url.port ?? 443))
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

    typealias Connection = ConnectionFactory.Connection

    /// What a connection is for: HTTP exchanges (the pool's), or a byte stream with TLS offering
    /// `protocols` by ALPN (nil: no TLS).
    enum Purpose: Sendable {
        case http
        case raw(tlsProtocols: [String]?)
    }

    /// Opens a connection along `route` through the factory (an HTTP one is in the pool when it returns).
    func connect(_ route: ConnectionRoute, deadline: NIODeadline, purpose: Purpose = .http) async throws -> Connection {
        switch purpose {
        case .http:
            return try await factory.connect(route, deadline: deadline, tls: route.target.secure ? try tls.get() : nil, raw: false)
        case .raw(let protocols):
            let tls = try protocols.map { try tlsClient(protocols: $0) }
            return try await factory.connect(route, deadline: deadline, tls: tls, raw: true)
        }
    }

    // MARK: One exchange

    private func exchange(
        _ request: TransportRequest,
        route: ConnectionRoute,
        on connection: HTTP1Connection,
        timing: TransportTiming,
        deadline: NIODeadline
    ) async throws -> TransportResponse {
        let loop = connection.channel.eventLoop
        let id = connection.nextExchangeID()
        let slot = HandlerSlot(connection.handler)
        let shared = ExchangeContext(timing: timing, url: request.url, informational: TransferContext.current?.informationalResponses)
        let answer = AnswerPromise()
        let (head, keepAlive) = Self.requestHead(request, route: route)
        let isHeadRequest = request.method == "HEAD"
        let body = request.body
        let idle = request.idleTimeout.map { TimeAmount.milliseconds(Int64($0 * 1000)) }
        let channel = connection.channel
        let handler = connection.handler
        // On the loop (as the wait for the answer begins): begins the exchange on its handler and writes
        // the request.
        let start: @Sendable () -> Void = {
            guard
                handler.value.begin(
                    id: id,
                    answer: answer,
                    slot: slot,
                    shared: shared,
                    keepAlive: keepAlive,
                    isHeadRequest: isHeadRequest,
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
        var response = try await response(
            answer: answer,
            on: loop,
            slot: slot,
            id: id,
            protocolName: "http/1.1",
            shared: shared,
            start: start
        )
        let answered = response.body
        let target = route.target
        response.detach = { try await Self.detach(connection, exchange: id, target: target, body: answered) }
        return response
    }

    /// Runs `start` on `loop` (the connection's), waits there for exchange `id`'s answer (a cancelled
    /// task cancels the exchange) and returns the response.
    ///
    /// `start` and the wait go to the loop together, as one task: `answer.get()` after a separate
    /// `execute` was a second hand-over to the loop per exchange, and it woke the loop again (an eventfd
    /// write and an epoll round) whenever the loop had gone back to sleep between the two — about one
    /// exchange in five in a sequential run.
    func response(
        answer: AnswerPromise,
        on loop: any EventLoop,
        slot: HandlerSlot,
        id: Int,
        protocolName: String,
        shared: ExchangeContext,
        start: @escaping @Sendable () -> Void
    ) async throws -> TransportResponse {
        let failCancelled: @Sendable () -> Void = {
            slot.onLoop { $0.fail(id: id, FerryError(.cancelled, "the transfer was cancelled")) }
        }
        let cancel: @Sendable () -> Void = {
            shared.cancel()
            failCancelled()
        }
        let answer = try await TransferContext.withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<ExchangeAnswer, any Error>) in
                loop.execute {
                    // On the loop: the callback is added directly, and runs once, when the answer comes.
                    answer.whenComplete { continuation.resume(with: $0) }
                    start()
                    // A cancel can come first (the handler runs at once for a transfer cancelled
                    // already): its failure reached the loop before the exchange began, and is sent again.
                    if shared.isCancelled { failCancelled() }
                }
            }
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
        shared: ExchangeContext,
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
        shared: ExchangeContext,
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
    static func requestHead(_ request: TransportRequest, route: ConnectionRoute) -> (HTTPRequestHead, keepAlive: Bool) {
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

extension NetworkTransport {
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

/// The name ``NetworkTransport`` had while it carried HTTP/1.1 only.
@available(*, deprecated, renamed: "NetworkTransport")
public typealias HTTP1Transport = NetworkTransport
