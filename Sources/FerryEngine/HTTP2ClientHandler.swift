import FerryCore
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1

/// The client side of one HTTP/2 connection (RFC 9113), the last handler of its pipeline (after TLS):
/// every stream of the connection runs here, on the connection's loop, without a channel of its own.
///
/// It reads frames with ``HTTP2FrameReader`` (in place; DATA content is copied once for the reader, see
/// ``ContentCopier``), keeps the flow-control windows (large ones, topped up as the reader takes the bytes, so
/// a reader that stops holds the server back), sends request content within the server's windows,
/// answers SETTINGS and PING, and acts on GOAWAY (streams the server did not process fail as refused, to
/// be sent again elsewhere) and RST_STREAM. While no stream is open the connection is checked with a
/// PING every `pingInterval` and closed after `idleTimeout`. See ``HTTP2Frame`` for why this is not
/// swift-nio-http2.
final class HTTP2ClientHandler: ChannelDuplexHandler, ExchangeDriver {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What the connection learns that its owner (``HTTP2Connection``) needs.
    struct Events {
        /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
        var maximumStreams: (Int) -> Void = { _ in }
        /// GOAWAY arrived, or the connection is closing: no new streams.
        var goAway: () -> Void = {}
        /// A stream started by ``start(_:exchange:head:source:shared:deadline:idleTimeout:)`` ended (or
        /// could not start): its slot is free.
        var streamClosed: () -> Void = {}
        /// Whether no stream is open or reserved.
        var isIdle: () -> Bool = { true }
    }

    /// One request to start.
    struct Request: Sendable {
        /// Pseudo-header fields first, names in lowercase.
        var headers: HPACKHeaders
        var isHead: Bool
        var body: Body

        enum Body: Sendable {
            case none
            case bytes(ByteBuffer)
            /// Sent in pieces by ``send(exchange:_:end:promise:)``.
            case streamed
        }
    }

    /// The largest response header list accepted (announced, and enforced by the decoder).
    static let maximumHeaderListSize = 1 << 16

    var events = Events()
    private let settings: HTTP2Settings
    /// The streams' idle timeout unless a request asks for less.
    private let idleTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var reader: HTTP2FrameReader
    private var encoder: HPACKEncoder
    private var decoder: HPACKDecoder

    private var streams: [UInt32: HTTP2Stream] = [:]
    /// Exchange numbers to stream ids.
    private var exchanges: [Int: UInt32] = [:]
    /// The next stream id (odd, rising; internal so that tests can start near the end of the ids).
    var nextStream: UInt32 = 1
    /// Streams with content gathered in this read.
    private var batched: [UInt32] = []
    /// Streams whose response head came in this read (handed over once the read is done).
    private var headsPending: [UInt32] = []
    /// One timer for every stream's idle and resource timeouts, set for the earliest.
    private var streamWatchdog = LoopWatchdog()
    /// A header block continued in CONTINUATION frames.
    private var continuing: (stream: UInt32, block: ByteBuffer, endStream: Bool)?
    /// CONTINUATION frames of the block in ``continuing``.
    private var continuationFrames = 0
    /// The largest header block taken (HEADERS and its CONTINUATIONs, still compressed), and the most
    /// CONTINUATION frames one block may have (empty ones cost nothing to send): 256 KiB and 1,024.
    static let maximumHeaderBlock = 256 * 1024
    static let maximumContinuationFrames = 1024
    /// PING and SETTINGS acknowledgements waiting for a connection that cannot write, at most.
    private var unwrittenAnswers = 0
    static let maximumUnwrittenAnswers = 1024
    /// PING and SETTINGS frames answered since the last other frame or request, at most.
    private var answersInARow = 0
    static let maximumAnswersInARow = 10_000

    // The server's settings and windows.
    private var peerInitialWindow = HTTP2Frame.defaultWindow
    private var peerMaximumFrameSize = HTTP2Frame.defaultMaximumFrameSize
    private var connectionSendWindow = HTTP2Frame.defaultWindow
    /// Connection-level bytes received that the server has not been given window for again.
    private var connectionUnacknowledged = 0
    /// What the server may still send on the connection before it oversteps the window.
    private var connectionReceiveWindow = HTTP2Frame.defaultWindow

    /// GOAWAY received (or sent): no new streams.
    private var goingAway = false
    /// The owner has been told that the connection takes no new streams.
    private var announcedGoAway = false
    private var closed = false
    /// Control frames waiting for the next write.
    private var outbox: ByteBuffer?
    private var needsFlush = false

    // Idle checks.
    private var timer: Scheduled<Void>?
    private var unansweredPing: UInt64?
    private var pingsSent: UInt64 = 0
    private var idleTicks: Int64 = 0

    init(settings: HTTP2Settings, idleTimeout: TimeAmount) {
        self.settings = settings
        self.idleTimeout = idleTimeout
        self.reader = HTTP2FrameReader(maximumFrameSize: settings.maximumFrameSize)
        let allocator = ByteBufferAllocator()
        self.encoder = HPACKEncoder(allocator: allocator)
        self.decoder = HPACKDecoder(
            allocator: allocator,
            maxDynamicTableSize: HPACKDecoder.maxDynamicTableSize,
            maxHeaderListSize: Self.maximumHeaderListSize
        )
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { begin(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        begin(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        streamWatchdog.reset()
        self.context = nil
    }

    /// The connection preface: the magic, SETTINGS, and the connection's window raised at once.
    private func begin(context: ChannelHandlerContext) {
        guard timer == nil, !closed else { return }
        var preface = context.channel.allocator.buffer(capacity: 64)
        preface.writeString(HTTP2Frame.preface)
        preface.writeHTTP2Settings([
            (.enablePush, 0),
            (.maximumConcurrentStreams, 100),
            (.initialWindowSize, settings.streamWindow),
            (.maximumFrameSize, settings.maximumFrameSize),
            (.maximumHeaderListSize, Self.maximumHeaderListSize),
        ])
        if settings.connectionWindow > HTTP2Frame.defaultWindow {
            preface.writeHTTP2WindowUpdate(stream: 0, increment: settings.connectionWindow - HTTP2Frame.defaultWindow)
            connectionReceiveWindow = settings.connectionWindow
        }
        context.writeAndFlush(wrapOutboundOut(preface), promise: nil)
        arm(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        do {
            try reader.read(bytes) { event in
                switch event {
                case .frame(let header, let payload):
                    try handle(header, payload, context: context)
                case .data(let stream, let content, let window, let endStream):
                    try handleData(stream: stream, content, window: window, endStream: endStream, context: context)
                }
            }
        } catch let violation as HTTP2Frame.Violation {
            connectionError(violation, context: context)
        } catch {
            connectionError(
                HTTP2Frame.Violation(code: .compressionError, message: "a header block could not be decoded (\(error))"),
                context: context
            )
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        for id in headsPending { startStreaming(id) }
        headsPending.removeAll(keepingCapacity: true)
        handOverBatches()
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        timer?.cancel()
        timer = nil
        streamWatchdog.reset()
        announceGoAway()
        for id in Array(streams.keys) {
            guard let stream = streams[id] else { continue }
            fail(id, ExchangeEnds.closed(receivedAnything: stream.machine.receivedAnything), reset: nil)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if ExchangeEnds.isUncleanShutdown(error) { return }
        let failure = TransportErrors.ferryError(for: error)
        for id in Array(streams.keys) { fail(id, failure, reset: nil) }
        context.close(promise: nil)
    }

    // MARK: Requests (called on the loop by the transport)

    /// Starts `request` on a new stream. `answer` completes once the read that brought the response head
    /// is done, with the whole content when the stream ended in that read, else with a sequence the
    /// content streams through, whose demand reaches this handler through `slot`; or fails (with
    /// ``ConnectionError/refused(_:)`` when the connection can take no new stream).
    func start(
        _ request: Request,
        exchange: Int,
        answer: EventLoopPromise<ExchangeAnswer>,
        slot: HandlerSlot,
        shared: ExchangeContext,
        deadline: NIODeadline,
        idleTimeout requested: TimeAmount?
    ) {
        guard let context, context.channel.isActive, !goingAway, !closed, nextStream < UInt32(Int32.max) else {
            // Stream ids run out after 2^30 requests (a long-lived ferryd may get there): the pool must
            // open a new connection, not offer this one again.
            if nextStream >= UInt32(Int32.max) {
                announceGoAway()
                if let context = self.context { closeIfDrained(context: context) }
            }
            let refusal = ConnectionError.refused("the HTTP/2 connection is closing")
            answer.fail(refusal)
            events.streamClosed()
            return
        }
        let id = nextStream
        nextStream += 2
        answersInARow = 0
        var block = context.channel.allocator.buffer(capacity: 256)
        do {
            try encoder.encode(headers: request.headers, to: &block)
        } catch {
            let failure = FerryError(.badURL, "the request's header fields cannot be sent over HTTP/2 (\(error))")
            answer.fail(failure)
            events.streamClosed()
            return
        }
        var endStream = false
        var outbound: ByteBuffer?
        switch request.body {
        case .none: endStream = true
        case .bytes(let bytes):
            if bytes.readableBytes == 0 { endStream = true } else { outbound = bytes }
        case .streamed: break
        }
        let now = context.eventLoop.now
        let stream = HTTP2Stream(
            exchange: exchange,
            id: id,
            answer: answer,
            slot: slot,
            shared: shared,
            isHead: request.isHead,
            requestSent: endStream,
            sendWindow: peerInitialWindow,
            receiveWindow: settings.streamWindow,
            deadline: deadline,
            now: now,
            idle: min(idleTimeout, requested ?? idleTimeout)
        )
        if let outbound { stream.outbound.append((outbound, true, nil)) }
        armStreamWatchdog(min(now + stream.idle, deadline), context: context)
        shared.timing.withLockedValue { $0.requestStart = Date() }
        streams[id] = stream
        exchanges[exchange] = id
        var frames = takeOutbox(context: context, capacity: block.readableBytes + 32)
        frames.writeHTTP2Headers(stream: id, block: block, endStream: endStream, maximumFrameSize: peerMaximumFrameSize)
        if endStream {
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenSuccess { shared.timing.withLockedValue { $0.requestEnd = Date() } }
            context.write(wrapOutboundOut(frames), promise: written)
        } else {
            context.write(wrapOutboundOut(frames), promise: nil)
            sendOutbound(id, context: context)
        }
        context.flush()
        needsFlush = false
    }

    /// Request content for a streamed body; `promise` completes once it is written (or fails when the
    /// stream has ended).
    func send(exchange: Int, _ bytes: ByteBuffer, end: Bool, promise: EventLoopPromise<Void>?) {
        guard let id = exchanges[exchange], let context, let stream = streams[id], stream.machine.request == .sending,
            stream.outbound.last?.end != true
        else {
            promise?.fail(FerryError(.cancelled, "the HTTP/2 stream has ended"))
            return
        }
        stream.outbound.append((bytes, end, promise))
        stream.lastActivity = context.eventLoop.now
        sendOutbound(id, context: context)
        flushIfNeeded(context: context)
    }

    // MARK: ExchangeDriver

    func resume(id exchange: Int) {
        guard let id = exchanges[exchange], let stream = streams[id], stream.paused, let context else { return }
        stream.paused = false
        // Only once a quarter of the window is owed, as while reading: a server with three quarters of
        // the window left is not held back, and a reader that pauses often would otherwise cost a
        // WINDOW_UPDATE (a write and a TLS record) each time (6,321 writes for 1 GiB, measured).
        acknowledge(id)
        flushIfNeeded(context: context)
    }

    func readerGone(id exchange: Int) {
        guard let id = exchanges[exchange], let stream = streams[id], stream.machine.response != .complete else { return }
        fail(id, FerryError(.cancelled, "the response body was abandoned"), reset: .cancel)
    }

    func fail(id exchange: Int, _ error: any Error) {
        guard let id = exchanges[exchange] else { return }
        fail(id, error, reset: .cancel)
    }

    /// Fails every stream with a cancellation and closes the connection.
    func shutDown() {
        goingAway = true
        for id in Array(streams.keys) {
            fail(id, FerryError(.cancelled, "the transfer was cancelled: the session's connections were shut down"), reset: nil)
        }
        context?.close(promise: nil)
    }

    // MARK: Frames

    private func handle(_ header: HTTP2Frame.Header, _ payload: ByteBuffer, context: ChannelHandlerContext) throws {
        if let continuing, header.kind != .continuation || header.stream != continuing.stream {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a header block was interrupted by another frame")
        }
        var payload = payload
        if header.kind != .ping, header.kind != .settings { answersInARow = 0 }
        switch header.kind {
        case .headers:
            try checkServerStream(header.stream, "HEADERS")
            if header.has(HTTP2Frame.Flag.padded) { payload = try Self.unpadded(payload, "HEADERS") }
            if header.has(HTTP2Frame.Flag.priority) {
                guard payload.readableBytes >= 5 else {
                    throw HTTP2Frame.Violation(code: .frameSizeError, message: "a HEADERS frame too short for its priority")
                }
                payload.moveReaderIndex(forwardBy: 5)
            }
            let endStream = header.has(HTTP2Frame.Flag.endStream)
            if header.has(HTTP2Frame.Flag.endHeaders) {
                try headers(on: header.stream, block: payload, endStream: endStream, context: context)
            } else {
                continuationFrames = 0
                continuing = (header.stream, payload, endStream)
            }
        case .continuation:
            guard let (stream, gathered, endStream) = continuing else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "a CONTINUATION frame without a header block")
            }
            // Taken out first, so appending does not copy the block on every frame.
            continuing = nil
            continuationFrames += 1
            var block = gathered
            guard block.readableBytes + payload.readableBytes <= Self.maximumHeaderBlock,
                continuationFrames <= Self.maximumContinuationFrames
            else {
                // Limited as it arrives (a block without END_HEADERS once grew for 60 s at full CPU).
                throw HTTP2Frame.Violation(
                    code: .enhanceYourCalm,
                    message: "a header block of more than \(Self.maximumHeaderBlock / 1024) KiB or \(Self.maximumContinuationFrames) CONTINUATION frames"
                )
            }
            block.writeBuffer(&payload)
            if header.has(HTTP2Frame.Flag.endHeaders) {
                try headers(on: stream, block: block, endStream: endStream, context: context)
            } else {
                continuing = (stream, block, endStream)
            }
        case .settings:
            guard header.stream == 0 else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "SETTINGS on a stream")
            }
            if header.has(HTTP2Frame.Flag.ack) { return }
            guard header.length % 6 == 0 else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a SETTINGS frame of \(header.length) bytes")
            }
            try applySettings(payload, context: context)
        case .ping:
            guard header.length == 8, header.stream == 0, let data = payload.readInteger(as: UInt64.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a PING frame of \(header.length) bytes")
            }
            if header.has(HTTP2Frame.Flag.ack) {
                if data == unansweredPing { unansweredPing = nil }
            } else {
                try countAnswer(context: context, "PING")
                queue(context: context) { $0.writeHTTP2Ping(data, ack: true) }
            }
        case .goAway:
            guard header.stream == 0, let last = payload.readInteger(as: UInt32.self),
                let code = payload.readInteger(as: UInt32.self)
            else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a GOAWAY frame of \(header.length) bytes")
            }
            goAway(lastProcessed: last & 0x7FFF_FFFF, code: HTTP2Frame.ErrorCode(rawValue: code), context: context)
        case .windowUpdate:
            guard header.length == 4, let raw = payload.readInteger(as: UInt32.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a WINDOW_UPDATE frame of \(header.length) bytes")
            }
            try windowUpdate(stream: header.stream, increment: Int(raw & 0x7FFF_FFFF), context: context)
        case .resetStream:
            guard header.length == 4, header.stream != 0, let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "an RST_STREAM frame of \(header.length) bytes")
            }
            reset(header.stream, by: HTTP2Frame.ErrorCode(rawValue: code))
        case .pushPromise:
            throw HTTP2Frame.Violation(code: .protocolError, message: "PUSH_PROMISE, though this client switched push off")
        case .priority, .data, nil:
            // PRIORITY is advice this client does not need; unknown frame types are ignored (RFC 9113 §4.1).
            break
        }
    }

    private func handleData(
        stream id: UInt32,
        _ content: ByteBuffer,
        window: Int,
        endStream: Bool,
        context: ChannelHandlerContext
    ) throws {
        if continuing != nil {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a header block was interrupted by DATA")
        }
        answersInARow = 0
        try checkServerStream(id, "DATA")
        // The connection's window is given back as bytes arrive; each stream's as its reader takes them.
        connectionReceiveWindow -= window
        guard connectionReceiveWindow >= 0 else {
            throw HTTP2Frame.Violation(code: .flowControlError, message: "the server sent more than the connection's window")
        }
        connectionUnacknowledged += window
        if connectionUnacknowledged >= settings.connectionWindow / 4 {
            let increment = connectionUnacknowledged
            connectionUnacknowledged = 0
            connectionReceiveWindow += increment
            queue(context: context) { $0.writeHTTP2WindowUpdate(stream: 0, increment: increment) }
        }
        // A stream this side has reset or finished: its bytes are dropped.
        guard let stream = streams[id] else { return }
        let count = content.readableBytes
        do {
            try stream.machine.receivedBody(count: count)
        } catch {
            fail(id, error.error, reset: .protocolError)
            return
        }
        stream.lastActivity = context.eventLoop.now
        stream.unacknowledged += window
        stream.receiveWindow -= window
        guard stream.receiveWindow >= 0 else {
            fail(id, FerryError(.badServerResponse, "the server sent more than the stream's window"), reset: .flowControlError)
            return
        }
        if count > 0 {
            if !stream.hasContent, !endStream { batched.append(id) }
            stream.keep(content, allocator: context.channel.allocator)
        }
        if endStream { responseEnded(id, context: context) }
    }

    /// A whole header block for stream `id`: the response head, an informational response, or trailers.
    private func headers(on id: UInt32, block: ByteBuffer, endStream: Bool, context: ChannelHandlerContext) throws {
        var block = block
        // Decoded even for a stream that is gone: the decoder's table must stay in step with the server's.
        let fields = try decoder.decodeHeaders(from: &block)
        guard let stream = streams[id] else { return }
        stream.lastActivity = context.eventLoop.now
        let isTrailers: Bool
        if case .awaitingHead = stream.machine.response { isTrailers = false } else { isTrailers = true }
        // Malformed (RFC 9113 §8.1.1): a stream error, and nothing of the block is used.
        if let problem = HTTP2ResponseFields.problem(fields.lazy.map { (name: $0.name, value: $0.value) }, trailers: isTrailers) {
            fail(id, FerryError(.badServerResponse, "the server sent a malformed HTTP/2 response: \(problem)"), reset: .protocolError)
            return
        }
        do {
            if isTrailers {
                // Trailers: the response's end.
                try stream.machine.receivedTrailers(endsResponse: endStream)
            } else if try !responseHead(fields, on: stream, endStream: endStream) {
                return
            }
        } catch {
            fail(id, error.error, reset: .protocolError)
            return
        }
        if endStream { responseEnded(id, context: context) }
    }

    /// A head for `stream`: informational (handed to the listener; returns false, the stream goes on
    /// without ending) or final (held until the read is done).
    private func responseHead(_ fields: HPACKHeaders, on stream: HTTP2Stream, endStream: Bool) throws(ExchangeStateMachine.Failure) -> Bool {
        var status: Int?
        var headers = HTTPHeaders()
        for field in fields {
            if field.name == ":status" {
                status = Int(field.value)
            } else if !field.name.hasPrefix(":") {
                headers.add(name: field.name, value: field.value)
            }
        }
        guard let status, (100...999).contains(status) else {
            throw ExchangeStateMachine.Failure("the server's HTTP/2 response has no valid :status")
        }
        guard status != 101 else {
            throw ExchangeStateMachine.Failure("the server answered 101 over HTTP/2, which has no protocol switch (RFC 9113 §8.6)")
        }
        let head = HTTPResponseHead(version: .http2, status: .init(statusCode: status), headers: headers)
        switch try stream.machine.receivedHead(head) {
        case .informational:
            // 103 Early Hints, say: the real head follows.
            if endStream {
                throw ExchangeStateMachine.Failure("the server ended the stream after an informational response")
            }
            stream.shared.informational(status: status, headers: headers)
            return false
        case .final:
            stream.shared.timing.withLockedValue { $0.responseStart = Date() }
            // Handed over once this read is done, with the whole content if the stream ends in it.
            headsPending.append(stream.id)
            return true
        }
    }

    private func applySettings(_ payload: ByteBuffer, context: ChannelHandlerContext) throws {
        var payload = payload
        while let raw = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch HTTP2Frame.Setting(rawValue: raw) {
            case .headerTableSize:
                try? encoder.setDynamicTableSize(min(Int(value), HPACKEncoder.defaultDynamicTableSize))
            case .maximumConcurrentStreams:
                events.maximumStreams(Int(value))
            case .initialWindowSize:
                guard Int(value) <= HTTP2Frame.maximumWindow else {
                    throw HTTP2Frame.Violation(code: .flowControlError, message: "an initial window of \(value)")
                }
                let delta = Int(value) - peerInitialWindow
                peerInitialWindow = Int(value)
                for stream in streams.values { stream.sendWindow += delta }
            case .maximumFrameSize:
                guard (HTTP2Frame.defaultMaximumFrameSize...0xFF_FFFF).contains(Int(value)) else {
                    throw HTTP2Frame.Violation(code: .protocolError, message: "a maximum frame size of \(value)")
                }
                peerMaximumFrameSize = Int(value)
            case .enablePush, .maximumHeaderListSize, nil:
                break
            }
        }
        try countAnswer(context: context, "SETTINGS")
        queue(context: context) { $0.writeHTTP2SettingsAck() }
        sendAllOutbound(context: context)
    }

    private func windowUpdate(stream id: UInt32, increment: Int, context: ChannelHandlerContext) throws {
        if id == 0 {
            guard increment > 0 else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "a WINDOW_UPDATE of 0 for the connection")
            }
            connectionSendWindow += increment
            guard connectionSendWindow <= HTTP2Frame.maximumWindow else {
                throw HTTP2Frame.Violation(code: .flowControlError, message: "the connection's window grew past 2^31-1")
            }
            sendAllOutbound(context: context)
            return
        }
        guard let stream = streams[id] else { return }
        stream.sendWindow += increment
        if increment == 0 || stream.sendWindow > HTTP2Frame.maximumWindow {
            fail(id, FerryError(.badServerResponse, "the server sent an invalid WINDOW_UPDATE for the stream"), reset: .flowControlError)
            return
        }
        sendOutbound(id, context: context)
    }

    private func reset(_ id: UInt32, by code: HTTP2Frame.ErrorCode) {
        guard let stream = streams[id] else { return }
        if code == .refusedStream, !stream.machine.receivedAnything {
            fail(id, ConnectionError.refused("HTTP/2 REFUSED_STREAM"), reset: nil)
        } else if code == .noError, stream.machine.response == .complete {
            // The server took the answer as the end (it need not read the rest of the request).
            return
        } else {
            fail(
                id,
                FerryError(.networkConnectionLost, "the server reset the HTTP/2 stream (\(code)) before the response was complete"),
                reset: nil
            )
        }
    }

    private func goAway(lastProcessed: UInt32, code: HTTP2Frame.ErrorCode, context: ChannelHandlerContext) {
        announceGoAway()
        // Streams above the last one the server processed were not: safe to send again elsewhere.
        for id in Array(streams.keys) where id > lastProcessed {
            fail(id, ConnectionError.refused("GOAWAY (\(code)) below the stream"), reset: nil)
        }
        closeIfDrained(context: context)
    }

    /// Tells the owner, once, that no new stream may go here.
    private func announceGoAway() {
        goingAway = true
        guard !announcedGoAway else { return }
        announcedGoAway = true
        events.goAway()
    }

    // MARK: Streams

    /// The server ended stream `id`'s response.
    private func responseEnded(_ id: UInt32, context: ChannelHandlerContext) {
        guard let stream = streams[id] else { return }
        let end: ExchangeStateMachine.End
        do {
            end = try stream.machine.responseEnded()
        } catch {
            fail(id, error.error, reset: nil)
            return
        }
        if end.requestAbandoned {
            // An answer before the whole request (an early 413, say): the rest is not sent (RFC 9113 §8.1).
            for pending in stream.outbound { pending.promise?.fail(FerryError(.cancelled, "the server answered before the whole request")) }
            stream.outbound = []
            queue(context: context) { $0.writeHTTP2ResetStream(stream: id, code: .noError) }
        }
        finish(id, head: end.answerWithHead)
    }

    /// Ends stream `id` with its response complete; `head` when the caller has not been given it yet.
    private func finish(_ id: UInt32, head: HTTPResponseHead?) {
        guard let stream = remove(id) else { return }
        let pieces = stream.takeBatch()
        stream.shared.finished()
        if let head, pieces.count <= 1 {
            // The whole answer came in this read: it goes with its content, no sequence needed.
            let promise = stream.answer
            stream.answer = nil
            promise?.succeed(ExchangeAnswer(head: head, body: .complete(pieces.first ?? ByteBuffer())))
            return
        }
        if let head { startStreaming(stream, head: head) }
        if !pieces.isEmpty { _ = stream.source?.yield(contentsOf: pieces) }
        stream.source?.finish()
    }

    /// Hands stream `id`'s response head over with a sequence its content streams through (its read is
    /// done and the stream goes on).
    private func startStreaming(_ id: UInt32) {
        guard let stream = streams[id], let head = stream.machine.readComplete() else { return }
        startStreaming(stream, head: head)
    }

    private func startStreaming(_ stream: HTTP2Stream, head: HTTPResponseHead) {
        // Pieces are up to 64 KiB (content is copied into buffers of that size): up to 4 MiB, the
        // stream's window, waits for the reader. With 2 and 4, as over HTTP/1.1, the reader paused and
        // resumed thousands of times a GiB when pieces were 8 KiB DATA frames, each a wake-up of the
        // loop (4,029 eventfd writes for 1 GiB, measured).
        let made = ResponseBody.make(
            slot: stream.slot,
            shared: stream.shared,
            id: stream.exchange,
            watermarks: (16, 64)
        )
        let promise = stream.answer
        stream.answer = nil
        stream.source = made.source
        promise?.succeed(ExchangeAnswer(head: head, body: .streaming(made.sequence)))
    }

    /// Ends stream `id` with `error`, telling the server with RST_STREAM `reset` when given.
    private func fail(_ id: UInt32, _ error: any Error, reset code: HTTP2Frame.ErrorCode?) {
        guard let stream = remove(id) else { return }
        if let code, let context, !closed {
            queue(context: context) { $0.writeHTTP2ResetStream(stream: id, code: code) }
            flushIfNeeded(context: context)
        }
        for pending in stream.outbound { pending.promise?.fail(error) }
        stream.shared.finished()
        switch stream.machine.fail() {
        case .failAnswer: stream.answer?.fail(error)
        case .failBody: stream.source?.finish(error)
        case .nothing: break
        }
    }

    private func remove(_ id: UInt32) -> HTTP2Stream? {
        guard let stream = streams.removeValue(forKey: id) else { return nil }
        exchanges[stream.exchange] = nil
        events.streamClosed()
        if let context { closeIfDrained(context: context) }
        return stream
    }

    /// After GOAWAY, the connection closes once its last stream has ended.
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard goingAway, streams.isEmpty, !closed else { return }
        closed = true
        flushIfNeeded(context: context)
        context.close(promise: nil)
    }

    /// Gives each reader what arrived for it in this read, and the server window for what it took.
    private func handOverBatches() {
        for id in batched {
            guard let stream = streams[id] else { continue }
            let pieces = stream.takeBatch()
            guard !pieces.isEmpty else { continue }
            if stream.source?.yield(contentsOf: pieces) == .stopProducing { stream.paused = true }
            acknowledge(id)
        }
        batched.removeAll(keepingCapacity: true)
    }

    /// Gives the server window again for what stream `id` received, unless its reader is full, once a
    /// quarter of the window is owed (fewer frames; the server still has three quarters to send into).
    private func acknowledge(_ id: UInt32) {
        guard let stream = streams[id], !stream.paused, stream.machine.response != .complete, stream.unacknowledged > 0,
            stream.unacknowledged >= settings.streamWindow / 4, let context
        else { return }
        let increment = stream.unacknowledged
        stream.unacknowledged = 0
        stream.receiveWindow += increment
        queue(context: context) { $0.writeHTTP2WindowUpdate(stream: id, increment: increment) }
    }

    /// Writes what the windows allow of every stream's waiting content (a window grew).
    private func sendAllOutbound(context: ChannelHandlerContext) {
        for id in Array(streams.keys) { sendOutbound(id, context: context) }
    }

    /// Writes what the windows allow of stream `id`'s waiting content.
    private func sendOutbound(_ id: UInt32, context: ChannelHandlerContext) {
        guard let stream = streams[id] else { return }
        while let (waiting, end, given) = stream.outbound.first {
            var bytes = waiting
            var promise = given
            let allowed = min(stream.sendWindow, connectionSendWindow, peerMaximumFrameSize)
            if bytes.readableBytes > 0, allowed <= 0 { break }
            let count = min(allowed, bytes.readableBytes)
            let last = count == bytes.readableBytes
            let piece = bytes.readSlice(length: count)!
            stream.sendWindow -= count
            connectionSendWindow -= count
            var frame = takeOutbox(context: context, capacity: HTTP2Frame.headerLength)
            frame.writeHTTP2FrameHeader(
                length: count,
                kind: .data,
                flags: last && end ? HTTP2Frame.Flag.endStream : 0,
                stream: id
            )
            context.write(wrapOutboundOut(frame), promise: nil)
            if last {
                stream.outbound.removeFirst()
                if end {
                    // (Written only while the request is being sent: ``send(exchange:_:end:promise:)``'s guard.)
                    _ = try? stream.machine.requestSent()
                    let shared = stream.shared
                    let written = context.eventLoop.makePromise(of: Void.self)
                    written.futureResult.whenSuccess { shared.timing.withLockedValue { $0.requestEnd = Date() } }
                    if let promise { written.futureResult.cascade(to: promise) }
                    promise = written
                }
                context.write(wrapOutboundOut(piece), promise: promise)
            } else {
                stream.outbound[0].bytes = bytes
                context.write(wrapOutboundOut(piece), promise: nil)
            }
            needsFlush = true
        }
    }

    // MARK: Writing

    /// Appends a control frame to the outbox (written with the next write, or at the end of the read).
    private func queue(context: ChannelHandlerContext, _ write: (inout ByteBuffer) -> Void) {
        if outbox == nil { outbox = context.channel.allocator.buffer(capacity: 64) }
        write(&outbox!)
        needsFlush = true
    }

    /// The outbox's frames, to be written ahead of a frame of `capacity` more bytes.
    private func takeOutbox(context: ChannelHandlerContext, capacity: Int) -> ByteBuffer {
        if var frames = outbox {
            outbox = nil
            frames.reserveCapacity(minimumWritableBytes: capacity)
            return frames
        }
        return context.channel.allocator.buffer(capacity: capacity)
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        if let frames = outbox {
            outbox = nil
            context.write(wrapOutboundOut(frames), promise: nil)
            needsFlush = true
        }
        if needsFlush {
            needsFlush = false
            context.flush()
        }
    }

    /// Counts an answer (PING or SETTINGS acknowledgement) queued while the connection cannot write:
    /// a server that sends frames to be answered and reads none of the answers makes them pile up
    /// (370 MB under a PING flood before this). Past ``maximumUnwrittenAnswers`` it is a flood:
    /// ENHANCE_YOUR_CALM, as nghttp2 answers it.
    /// Also past ``maximumAnswersInARow`` PING and SETTINGS frames with nothing else between them (no
    /// response, no data, no request of ours): a loopback socket's buffers hold hundreds of thousands of
    /// answers before the connection stops being writable, each costing a moment of a core.
    private func countAnswer(context: ChannelHandlerContext, _ frame: String) throws {
        answersInARow += 1
        guard answersInARow <= Self.maximumAnswersInARow else {
            throw HTTP2Frame.Violation(
                code: .enhanceYourCalm,
                message: "more than \(Self.maximumAnswersInARow) PING and SETTINGS frames in a row with nothing else (a flood)"
            )
        }
        guard !context.channel.isWritable else { return }
        unwrittenAnswers += 1
        guard unwrittenAnswers <= Self.maximumUnwrittenAnswers else {
            throw HTTP2Frame.Violation(
                code: .enhanceYourCalm,
                message: "more than \(Self.maximumUnwrittenAnswers) \(frame) frames to answer while it reads none of the answers (a flood)"
            )
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { unwrittenAnswers = 0 }
        context.fireChannelWritabilityChanged()
    }

    /// A protocol breach by the server: GOAWAY names it, every stream fails, the connection closes.
    private func connectionError(_ violation: HTTP2Frame.Violation, context: ChannelHandlerContext) {
        guard !closed else { return }
        goingAway = true
        queue(context: context) {
            $0.writeHTTP2GoAway(lastStream: 0, code: violation.code, message: violation.message)
        }
        flushIfNeeded(context: context)
        let failure = FerryError(.badServerResponse, "the server broke the HTTP/2 protocol: \(violation.message)")
        for id in Array(streams.keys) { fail(id, failure, reset: nil) }
        closed = true
        context.close(promise: nil)
    }

    private func checkServerStream(_ id: UInt32, _ frame: String) throws {
        guard id != 0 else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "\(frame) on stream 0")
        }
        guard id & 1 == 1, id < nextStream else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "\(frame) on stream \(id), which this client never opened")
        }
    }

    private static func unpadded(_ payload: ByteBuffer, _ frame: String) throws -> ByteBuffer {
        var payload = payload
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a \(frame) frame's padding is longer than the frame")
        }
        return payload.readSlice(length: payload.readableBytes - Int(padding))!
    }

    // MARK: Timers

    /// Makes the stream watchdog fire by `due` (sooner if it already would).
    private func armStreamWatchdog(_ due: NIODeadline, context: ChannelHandlerContext) {
        streamWatchdog.arm(due, on: context.eventLoop) { [self] in streamWatchdogFired() }
    }

    /// Ends the streams past their resource timeout or quiet for their idle timeout, and sets the
    /// watchdog for the next moment that matters to the others.
    private func streamWatchdogFired() {
        streamWatchdog.reset()
        guard let context else { return }
        let now = context.eventLoop.now
        var next = NIODeadline.distantFuture
        for (id, stream) in streams.sorted(by: { $0.key < $1.key }) {
            switch ExchangeEnds.check(
                deadline: stream.deadline,
                paused: stream.paused,
                lastActivity: stream.lastActivity,
                idle: stream.idle,
                now: now
            ) {
            case .ended(let error): fail(id, error, reset: .cancel)
            case .checkAgain(let due): next = min(next, due)
            }
        }
        if next < .distantFuture, self.context != nil { armStreamWatchdog(next, context: context) }
    }

    private func arm(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: settings.pingInterval) { [self] in
            tick(context: context)
        }
    }

    /// Every `pingInterval`: an idle connection is pinged, and closed when the previous PING went
    /// unanswered (its peer is gone) or once it has been idle for `idleTimeout`.
    private func tick(context: ChannelHandlerContext) {
        guard context.channel.isActive, !closed else { return }
        guard streams.isEmpty, events.isIdle() else {
            // Streams are open: their own timeouts watch the connection.
            idleTicks = 0
            unansweredPing = nil
            arm(context: context)
            return
        }
        idleTicks += 1
        if unansweredPing != nil || settings.pingInterval * idleTicks >= settings.idleTimeout {
            announceGoAway()
            queue(context: context) { $0.writeHTTP2GoAway(lastStream: 0, code: .noError) }
            closed = true
            flushIfNeeded(context: context)
            context.close(promise: nil)
            return
        }
        pingsSent += 1
        unansweredPing = pingsSent
        queue(context: context) { [pingsSent] in $0.writeHTTP2Ping(pingsSent, ack: false) }
        flushIfNeeded(context: context)
        arm(context: context)
    }
}

