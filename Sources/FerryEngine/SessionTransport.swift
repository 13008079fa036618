public import FerryCore
public import Foundation
public import NIOCore
import Metrics
public import Logging
import Synchronization

/// The transport a session uses: another transport behind a hard per-origin limit
/// (HTTPMaximumConnectionsPerHost, taken in priority order), recording each exchange into the
/// ``TransferContext`` of the task that sends it (metrics), and applying the session's ``CookieStore``
/// to every exchange — so each hop of a redirect sends the cookies for its URL and keeps those it
/// is given.
///
/// Counting happens inside the body sequences the engine already iterates: no extra task or hop per chunk.
public final class SessionTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let limiter: HostConnectionLimiter
    /// The session's cookies; nil: none sent or kept.
    public let cookies: CookieStore?
    /// The session's HTTP cache; nil: none. Tasks whose ``TransferContext`` has a ``CacheUse`` read and
    /// fill it (SessionTransport+Cache.swift); unsafe requests of every task invalidate it.
    public let cache: ResponseCache?
    /// Loaders consulted before the network (``ProtocolHandler``), in order.
    public let protocolHandlers: ProtocolHandlerList
    /// The clock cache freshness is judged by.
    let now: @Sendable () -> Date
    /// Bytes, responses and failed exchanges, counted through swift-metrics.
    let counters: TransportMetrics
    /// Where each exchange is logged (debug: method, URL, status, protocol, reuse; failures too).
    let logger: Logger

    /// A logger that drops everything: the library logs nothing unless given a logger.
    public static let silentLogger = Logger(label: "ferry", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Wraps `base`, allowing `maximumConnectionsPerHost` exchanges per origin at once, with `cookies`
    /// and `cache` (nil: none); `now` is the clock for freshness and metrics; `metrics` counts through
    /// swift-metrics (the process's factory by default).
    public init(
        _ base: any HTTPTransport,
        maximumConnectionsPerHost: Int,
        cookies: CookieStore? = nil,
        cache: ResponseCache? = nil,
        now: @escaping @Sendable () -> Date = Date.init,
        metrics: TransportMetrics = TransportMetrics(),
        logger: Logger = SessionTransport.silentLogger,
        protocolHandlers: ProtocolHandlerList = []
    ) {
        self.protocolHandlers = protocolHandlers
        self.counters = metrics
        self.logger = logger
        self.base = base
        self.limiter = HostConnectionLimiter(limit: maximumConnectionsPerHost)
        self.cookies = cookies
        self.cache = cache
        self.now = now
    }

    /// What opens the session's byte streams (WebSockets, stream tasks): the transport behind this one,
    /// when it can; nil for a transport that carries only HTTP exchanges.
    public var byteStreams: (any ByteStreamConnector)? { base as? any ByteStreamConnector }

    /// Exchanges in progress for the origin of `url` (scheme, host and port).
    public func activeExchanges(for url: URL) -> Int {
        limiter.active(for: HostConnectionLimiter.Key(url))
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let context = TransferContext.current
        var request = request
        // A Cookie header the caller set stays as it is; otherwise the store's for this URL.
        if let cookies = cookies(for: context), request.headers["cookie"] == nil,
            let header = cookies.cookieHeader(for: request.url)
        {
            request.headers.add(name: "Cookie", value: header)
        }
        guard let cache else { return try await exchange(request, deadline: deadline, context: context).response }
        return try await send(request, deadline: deadline, context: context, cache: cache)
    }

    /// Sends `request` over the network: a connection slot, metrics, and the cookies of the response.
    /// Returns the response and the index of its transaction in `context`.
    func exchange(
        _ request: TransportRequest,
        deadline: NIODeadline,
        context: TransferContext?
    ) async throws -> (response: TransportResponse, transaction: Int?) {
        try TransferContext.checkCancellation()
        let index: Int? = context.flatMap { context in
            guard context.recordsTransactions else { return nil }
            var metrics = TransactionMetrics(request: request.sentRequest)
            metrics.fetchStartDate = now()
            return context.begin(metrics)
        }
        let origin = HostConnectionLimiter.Key(request.url)
        // A protocol handler's request uses no connection.
        let handler = protocolHandlers.isEmpty ? nil : protocolHandlers.handler(for: request.sentRequest)
        // HTTPMaximumConnectionsPerHost limits connections: streams of one shared HTTP/2 connection
        // are not held back by it.
        let permit =
            handler != nil || base.multiplexes(request.url)
            ? HostConnectionLimiter.Permit.unlimited(origin: origin)
            : try await limiter.acquire(origin: origin, priority: context?.priority ?? 0.5)
        var outgoing = request
        if request.body != nil {
            let sent = counters.sent
            outgoing.body = Self.counting(request.body, throttle: context?.throttle) { count in
                sent.increment(by: count)
                if let context, let index { context.update(index) { $0.countOfRequestBodyBytesSent += count } }
            }
        }
        let response: TransportResponse
        do {
            if let handler {
                response = try await ProtocolHandlerExchange.send(outgoing, with: handler, deadline: deadline)
            } else {
                response = try await base.send(outgoing, deadline: deadline)
            }
        } catch {
            permit.release()
            counters.failed(error)
            if logger.logLevel <= .debug {
                let line = "\(request.method) \(request.url.absoluteString) failed: \(error)"
                logger.debug("\(line)")
            }
            throw error
        }
        counters.response(protocolName: response.protocolName, status: response.status)
        if logger.logLevel <= .debug {
            // Built only when it is logged: no string work on the hot path of a silent logger.
            let reused = response.timing.reusedConnection == true ? ", reused connection" : ""
            let line = "\(request.method) \(request.url.absoluteString) → \(response.status) over \(response.protocolName)\(reused)"
            logger.debug("\(line)")
        }
        cookies(for: context)?.receive(response.headers, from: request.url)
        if let context, let index {
            let head = Response(url: request.url, statusCode: response.status, headers: response.headers)
            context.update(index) { metrics in
                metrics.response = head
                metrics.networkProtocolName = response.protocolName
                metrics.requestStartDate = response.timing.requestStart
                metrics.requestEndDate = response.timing.requestEnd
                metrics.responseStartDate = response.timing.responseStart
                metrics.connectStartDate = response.timing.connectStart
                metrics.connectEndDate = response.timing.connectEnd
                metrics.isReusedConnection = response.timing.reusedConnection
                metrics.secureConnectionStartDate = response.timing.secureConnectionStart
                metrics.secureConnectionEndDate = response.timing.secureConnectionEnd
                metrics.negotiatedTLSProtocolVersion = response.timing.tlsVersion
                metrics.remoteAddress = response.timing.remoteAddress
                metrics.localAddress = response.timing.localAddress
                metrics.proxy = response.timing.proxy
            }
        }
        var measured = response
        if let whole = response.body.completeBody, context?.throttle == nil {
            // The whole body is here: counted, timed and its slot given back now, and handed on as it is.
            counters.received.increment(by: Int64(whole.readableBytes))
            if index != nil {
                Self.record(
                    received: Int64(whole.readableBytes),
                    end: response.timing.responseStart ?? Date(),
                    latestTiming: response.latestTiming,
                    in: context,
                    at: index
                )
            }
            permit.release()
            return (measured, index)
        }
        measured.body = TransportBodyStream(
            MeasuredBody(
                base: response.body,
                permit: permit,
                context: context,
                index: index,
                latestTiming: response.latestTiming,
                counter: counters.received
            )
        )
        return (measured, index)
    }

    /// Adds `received` body bytes to transaction `index` of `context`, with the body's `end` when it has
    /// ended, and the request's times as the transport knows them now (the request may have finished
    /// being written after the head arrived).
    private static func record(
        received: Int64,
        end: Date?,
        latestTiming: (@Sendable () -> TransportTiming)?,
        in context: TransferContext?,
        at index: Int?
    ) {
        guard let context, let index else { return }
        let timing = latestTiming?()
        context.update(index) { metrics in
            metrics.countOfResponseBodyBytesReceived += received
            if let end { metrics.responseEndDate = end }
            if let timing {
                metrics.requestStartDate = metrics.requestStartDate ?? timing.requestStart
                metrics.requestEndDate = metrics.requestEndDate ?? timing.requestEnd
            }
        }
    }

    /// The store a task's exchanges use: the session's, unless the task handles no cookies.
    private func cookies(for context: TransferContext?) -> CookieStore? {
        context?.handlesCookies == false ? nil : cookies
    }

    public func shutdown() async throws {
        try await base.shutdown()
    }

    public var enforcesDeadlineOverBody: Bool { base.enforcesDeadlineOverBody }

    public func multiplexes(_ url: URL) -> Bool { base.multiplexes(url) }

    /// The body with every chunk the transport takes counted.
    private static func counting(
        _ body: TransportRequestBody?,
        throttle: TaskThrottle?,
        _ count: @escaping @Sendable (Int64) -> Void
    ) -> TransportRequestBody? {
        switch body {
        case .bytes(let buffer) where throttle == nil:
            // Handed over whole; counted as sent when the transport takes it.
            return .stream(
                length: Int64(buffer.readableBytes),
                TransportBodyStream(OneBuffer(buffer: buffer, count: count))
            )
        case .bytes(let buffer):
            // Throttled: handed over in slices, each paid for before the next.
            let slice = TaskThrottle.slice
            let slices = stride(from: 0, to: buffer.readableBytes, by: slice).map {
                buffer.getSlice(at: buffer.readerIndex + $0, length: min(slice, buffer.readableBytes - $0))!
            }
            return counting(
                .stream(length: Int64(buffer.readableBytes), TransportBodyStream(Buffers(buffers: slices))),
                throttle: throttle,
                count
            )
        case .stream(let length, let stream):
            return .stream(
                length: length,
                TransportBodyStream(
                    stream.map { chunk in
                        count(Int64(chunk.readableBytes))
                        try await throttle?.pay(chunk.readableBytes)
                        return chunk
                    }
                )
            )
        case nil:
            return nil
        }
    }

    /// Buffers handed over one by one.
    private struct Buffers: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let buffers: [ByteBuffer]

        func makeAsyncIterator() -> Iterator { Iterator(rest: buffers[...]) }

        struct Iterator: AsyncIteratorProtocol {
            var rest: ArraySlice<ByteBuffer>
            mutating func next() async throws -> ByteBuffer? { rest.popFirst() }
        }
    }

    private struct OneBuffer: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let buffer: ByteBuffer
        let count: @Sendable (Int64) -> Void

        func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer, count: count) }

        struct Iterator: AsyncIteratorProtocol {
            var buffer: ByteBuffer?
            let count: @Sendable (Int64) -> Void
            mutating func next() async throws -> ByteBuffer? {
                defer { buffer = nil }
                if let buffer { count(Int64(buffer.readableBytes)) }
                return buffer
            }
        }
    }

    /// A response body that counts bytes, marks the end time, and gives the slot back when it ends,
    /// fails, or is dropped unread.
    private struct MeasuredBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let base: TransportBodyStream
        let permit: HostConnectionLimiter.Permit
        let context: TransferContext?
        let index: Int?
        let latestTiming: (@Sendable () -> TransportTiming)?
        let counter: Counter

        func makeAsyncIterator() -> Iterator {
            Iterator(
                base: base.makeAsyncIterator(),
                permit: permit,
                context: context,
                index: index,
                latestTiming: latestTiming,
                counter: counter
            )
        }

        struct Iterator: AsyncIteratorProtocol {
            var base: TransportBodyStream.Iterator
            let permit: HostConnectionLimiter.Permit
            let context: TransferContext?
            let index: Int?
            let latestTiming: (@Sendable () -> TransportTiming)?
            let counter: Counter
            var received: Int64 = 0
            /// Throttled: what is left of the last read, handed over in slices.
            var rest: ByteBuffer?

            mutating func next() async throws -> ByteBuffer? {
                if rest == nil {
                    let chunk: ByteBuffer?
                    do {
                        chunk = try await base.next()
                    } catch {
                        flush(end: nil)
                        permit.release()
                        throw error
                    }
                    guard let chunk else {
                        flush(end: Date())
                        permit.release()
                        return nil
                    }
                    received += Int64(chunk.readableBytes)
                    counter.increment(by: Int64(chunk.readableBytes))
                    guard context?.throttle != nil else { return chunk }
                    rest = chunk
                }
                return try await nextSlice()
            }

            /// Throttled: the next slice of the last read (``TaskThrottle/slice`` at most), paid for before
            /// it is handed over. The next read waits until the whole read is paid for: TCP's window does
            /// the rest. A read that piled up while the transfer waited (up to a megabyte) would otherwise
            /// be one lump, and the shares of a limit would move in lumps.
            private mutating func nextSlice() async throws -> ByteBuffer? {
                guard var whole = rest, let throttle = context?.throttle else { return nil }
                let piece = whole.readSlice(length: Swift.min(TaskThrottle.slice, whole.readableBytes))!
                rest = whole.readableBytes > 0 ? whole : nil
                do {
                    try await throttle.pay(piece.readableBytes)
                } catch {
                    flush(end: nil)
                    permit.release()
                    throw error
                }
                return piece
            }

            private mutating func flush(end: Date?) {
                SessionTransport.record(received: received, end: end, latestTiming: latestTiming, in: context, at: index)
                received = 0
            }
        }
    }
}

extension SessionTransport: NetworkPathFollowing {
    public func networkPathChanged() async {
        await (base as? any NetworkPathFollowing)?.networkPathChanged()
    }
}
