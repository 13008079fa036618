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
    let settings: HTTP2Settings
    /// The streams' idle timeout unless a request asks for less.
    let idleTimeout: TimeAmount
    var context: ChannelHandlerContext?
    var reader: HTTP2FrameReader
    var encoder: HPACKEncoder
    var decoder: HPACKDecoder

    var streams: [UInt32: HTTP2Stream] = [:]
    /// Exchange numbers to stream ids.
    var exchanges: [Int: UInt32] = [:]
    /// The next stream id (odd, rising; internal so that tests can start near the end of the ids).
    var nextStream: UInt32 = 1
    /// Streams with content gathered in this read.
    var batched: [UInt32] = []
    /// Streams whose response head came in this read (handed over once the read is done).
    var headsPending: [UInt32] = []
    /// One timer for every stream's idle and resource timeouts, set for the earliest.
    var streamWatchdog = LoopWatchdog()
    /// A header block continued in CONTINUATION frames.
    var continuing: (stream: UInt32, block: ByteBuffer, endStream: Bool)?
    /// CONTINUATION frames of the block in ``continuing``.
    var continuationFrames = 0
    /// The largest header block taken (HEADERS and its CONTINUATIONs, still compressed), and the most
    /// CONTINUATION frames one block may have (empty ones cost nothing to send): 256 KiB and 1,024.
    static let maximumHeaderBlock = 256 * 1024
    static let maximumContinuationFrames = 1024
    /// PING and SETTINGS acknowledgements waiting for a connection that cannot write, at most.
    var unwrittenAnswers = 0
    static let maximumUnwrittenAnswers = 1024
    /// PING and SETTINGS frames answered since the last other frame or request, at most.
    var answersInARow = 0
    static let maximumAnswersInARow = 10_000

    // The server's settings and windows.
    var peerInitialWindow = HTTP2Frame.defaultWindow
    var peerMaximumFrameSize = HTTP2Frame.defaultMaximumFrameSize
    var connectionSendWindow = HTTP2Frame.defaultWindow
    /// Connection-level bytes received that the server has not been given window for again.
    var connectionUnacknowledged = 0
    /// What the server may still send on the connection before it oversteps the window.
    var connectionReceiveWindow = HTTP2Frame.defaultWindow

    /// GOAWAY received (or sent): no new streams.
    var goingAway = false
    /// The owner has been told that the connection takes no new streams.
    var announcedGoAway = false
    var closed = false
    /// Control frames waiting for the next write.
    var outbox: ByteBuffer?
    var needsFlush = false

    // Idle checks.
    var timer: Scheduled<Void>?
    var unansweredPing: UInt64?
    var pingsSent: UInt64 = 0
    var idleTicks: Int64 = 0

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
    func begin(context: ChannelHandlerContext) {
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
        answer: AnswerPromise,
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
            let refusal = ConnectionError.refused("its HTTP/2 connection is closing")
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
}
