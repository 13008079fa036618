import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// The last handler of one HTTP/1.1 client connection of ``NetworkTransport``: runs one exchange at a time,
/// hands the response head to the waiting caller once the read that brought it is done — with the whole
/// body when that read also ended it, else with an async sequence the body streams through, with
/// backpressure (reads stop while the reader is full) — and offers the connection back for reuse once
/// both directions are complete.
///
/// Lives on the connection's event loop; other threads reach it only through the loop.
final class HTTP1ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, ExchangeDriver {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// What a connection may be reused for after its exchange.
    enum Outcome {
        /// Both the request and the response are complete and both sides keep the connection.
        case reusable
        /// The connection was closed or must be.
        case closed
    }

    /// One request and its response: its state (``ExchangeStateMachine``) and what this handler does
    /// the I/O with.
    private struct Exchange {
        let id: Int
        /// What has been sent and received, and what comes next.
        var machine: ExchangeStateMachine
        /// Completed with the answer; nil once it has been.
        var answer: AnswerPromise?
        /// Body that came in the same read as the head.
        var early: ByteBuffer?
        /// Where the body streams once the answer went without it.
        var source: ResponseBody.Producer.Source?
        /// The body reader's way back to this handler.
        let slot: HandlerSlot
        let shared: ExchangeContext
        /// When the whole exchange must be over (the resource timeout).
        let deadline: NIODeadline
        var lastActivity: NIODeadline
        /// This exchange's idle timeout: the connection's, or the request's when shorter.
        var idle: TimeAmount
    }

    private let idleTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    /// The reader has as much as it wants: reads wait for its demand.
    private var paused = false
    private var readPending = false
    /// The connection's one timer: the exchange's idle and resource timeouts, and closing the connection
    /// once it has been unused for ``unusedTimeout``.
    private var watchdog = LoopWatchdog()
    /// A connection held after a 101 answer (its exchange's number, and when it is closed if nobody
    /// took it), until its caller takes it (``detach(id:)``) or ``parkedTimeout`` passes.
    private var parked: (id: Int, until: NIODeadline)?
    /// How long a connection that switched protocols waits for its caller before it is closed. The
    /// caller's delegate decides in between, so a loaded machine must not run it out (10 s once did).
    static let parkedTimeout = TimeAmount.seconds(60)
    /// Why the last parked connection was let go, for the error a late ``detach(id:)`` throws.
    private var parkedEnd: (id: Int, why: String)?
    /// When the last exchange ended (or the handler was added).
    private var unusedSince = NIODeadline.uptimeNanoseconds(0)
    /// How long a connection may stay unused before it is closed.
    static let unusedTimeout = TimeAmount.seconds(60)
    /// Called on the loop when an exchange ends with the connection reusable, or when it closes.
    var onOutcome: ((Outcome) -> Void)?
    /// Body bytes copied for the reader (over TLS only).
    private var copier = ContentCopier()
    private let copiesBody: Bool

    /// - Parameter copiesBody: copy the body into buffers of this handler's own instead of handing the
    ///   reader slices of the reads (over TLS: see ``ContentCopier``).
    init(idleTimeout: TimeAmount, copiesBody: Bool = false) {
        self.idleTimeout = idleTimeout
        self.copiesBody = copiesBody
    }

    /// Starts an exchange: `answer` completes once the response head has arrived (or the exchange
    /// fails); a body that streams is read through a sequence whose demand reaches this handler through
    /// `slot`. The caller writes the request after this.
    func begin(
        id: Int,
        answer: AnswerPromise,
        slot: HandlerSlot,
        shared: ExchangeContext,
        keepAlive: Bool,
        isHeadRequest: Bool = false,
        deadline: NIODeadline,
        idleTimeout requested: TimeAmount? = nil
    ) -> Bool {
        guard let context, context.channel.isActive, exchange == nil else {
            answer.fail(ConnectionError.closedBeforeResponse)
            return false
        }
        let idle = min(idleTimeout, requested ?? idleTimeout)
        let exchange = Exchange(
            id: id,
            machine: ExchangeStateMachine(isHeadRequest: isHeadRequest, keepAlive: keepAlive),
            answer: answer,
            slot: slot,
            shared: shared,
            deadline: deadline,
            lastActivity: context.eventLoop.now,
            idle: idle
        )
        self.exchange = exchange
        arm(min(exchange.lastActivity + idle, deadline), context: context)
        return true
    }

    /// The whole request has been written.
    func requestWritten(id: Int) {
        guard exchange?.id == id else { return }
        exchange!.lastActivity = now
        do {
            if try exchange!.machine.requestSent() { finishExchange() }
        } catch {
            failExchange(error.error)
            context?.close(promise: nil)
        }
    }

    /// Something was written for the request (the idle timer counts it as activity).
    func wrote(id: Int) {
        guard exchange?.id == id else { return }
        exchange?.lastActivity = now
    }

    /// Ends exchange `id` with `error` and closes the connection.
    func fail(id: Int, _ error: any Error) {
        if parked?.id == id {
            parked = nil
            parkedEnd = (id, "it was cancelled (\(error))")
            context?.close(promise: nil)
            return
        }
        guard exchange?.id == id else { return }
        failExchange(error)
        context?.close(promise: nil)
    }

    /// The reader wants more: reads resume.
    func resume(id: Int) {
        guard exchange?.id == id, paused else { return }
        paused = false
        if readPending, let context {
            readPending = false
            context.read()
        }
    }

    /// The reader stopped reading (finished, failed or dropped the body).
    func readerGone(id: Int) {
        guard let exchange, exchange.id == id, exchange.machine.response != .complete else { return }
        // The body is unread: the connection cannot carry another exchange.
        failExchange(FerryError(.cancelled, "the response body was abandoned"))
        context?.close(promise: nil)
    }

    /// Fails the exchange in progress, if any, with ``FerryError/Code/cancelled`` and closes the connection.
    func shutDown() {
        failExchange(FerryError(.cancelled, "the transfer was cancelled: the session's connections were shut down"))
        context?.close(promise: nil)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        unusedSince = context.eventLoop.now
    }

    /// The loop's clock (an embedded loop's in tests).
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    func handlerRemoved(context: ChannelHandlerContext) {
        watchdog.reset()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard exchange != nil else {
            // A response nobody asked for: the connection is out of step.
            context.close(promise: nil)
            return
        }
        exchange!.lastActivity = context.eventLoop.now
        do {
            try receive(part, context: context)
        } catch {
            failExchange(error.error)
            context.close(promise: nil)
        }
    }

    /// One part of the answer, for the exchange in progress.
    private func receive(_ part: HTTPClientResponsePart, context: ChannelHandlerContext) throws(ExchangeStateMachine.Failure) {
        switch part {
        case .head(let head):
            // Informational heads (103 Early Hints, 100 Continue) come before the final one. NIO forwards
            // them (informationalResponseStrategy .forward) without an end of their own.
            switch try exchange!.machine.receivedHead(head) {
            case .informational:
                exchange!.shared.informational(status: Int(head.status.code), headers: head.headers)
            case .final:
                exchange!.shared.timing.withLockedValue { $0.responseStart = Date() }
            }
        case .body(let buffer):
            let count = buffer.readableBytes
            try exchange!.machine.receivedBody(count: count)
            if copiesBody {
                // Copies are no larger than the bytes still to come (a 1 KiB answer over TLS took a
                // 64 KiB buffer); the count includes this piece.
                let remaining = exchange!.machine.remainingLength.map { Int(clamping: $0) + count }
                if let full = copier.copy(buffer, allocator: context.channel.allocator, remaining: remaining) {
                    handOver(full)
                }
            } else {
                handOver(buffer)
            }
        case .end:
            handOverGathered()
            let end = try exchange!.machine.responseEnded()
            // The whole answer came in this read: it goes with its body, no sequence needed.
            let complete = end.answerWithHead.map { head in
                (exchange!.answer, ExchangeAnswer(head: head, body: .complete(exchange!.early ?? ByteBuffer())))
            }
            if complete != nil {
                exchange!.answer = nil
                exchange!.early = nil
            }
            // Offered for reuse first, so the caller's next request can take the connection.
            if end.exchangeOver { finishExchange() }
            if let (promise, answer) = complete { promise?.succeed(answer) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        handOverGathered()
        startStreaming()
        context.fireChannelReadComplete()
    }

    /// The read that brought the head is done and the body goes on: the answer goes with a sequence
    /// the body streams through (starting with what came with the head).
    private func startStreaming() {
        guard exchange != nil, let head = exchange!.machine.handOverHead() else { return }
        let made = ResponseBody.make(slot: exchange!.slot, shared: exchange!.shared, id: exchange!.id, watermarks: (2, 4))
        let promise = exchange!.answer
        exchange!.answer = nil
        exchange!.source = made.source
        if let early = exchange!.early {
            exchange!.early = nil
            handOver(early)
        }
        promise?.succeed(ExchangeAnswer(head: head, body: .streaming(made.sequence)))
    }

    /// Gives the reader what was copied for it.
    private func handOverGathered() {
        if let buffer = copier.take() { handOver(buffer) }
    }

    private func handOver(_ buffer: ByteBuffer) {
        guard exchange != nil else { return }
        if case .headHeld = exchange!.machine.response {
            // Held with the head until its read is done; a second piece in the meantime (over TLS) makes
            // the body a stream at once.
            if exchange!.early == nil {
                exchange!.early = buffer
            } else {
                startStreaming()
                handOver(buffer)
            }
            return
        }
        if exchange?.source?.yield(buffer) == .stopProducing { paused = true }
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            readPending = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        watchdog.reset()
        if let exchange { failExchange(ExchangeEnds.closed(receivedAnything: exchange.machine.receivedAnything)) }
        onOutcome?(.closed)
        onOutcome = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if ExchangeEnds.isUncleanShutdown(error) { return }
        // A reset before any byte of the answer is the server's close of an idle connection racing our
        // request (its kernel resets a socket closed with our request unread): as a clean close then,
        // the request may go again on a new connection.
        if let exchange, !exchange.machine.receivedAnything, ExchangeEnds.isReset(error) {
            failExchange(ConnectionError.closedBeforeResponse)
        } else {
            failExchange(Self.ferryError(for: error))
        }
        context.close(promise: nil)
    }

    // MARK: Internals

    /// Makes the watchdog fire by `due` (sooner if it already would).
    private func arm(_ due: NIODeadline, context: ChannelHandlerContext) {
        watchdog.arm(due, on: context.eventLoop) { [self] in watchdogFired() }
    }

    /// Ends an exchange past its resource timeout or quiet for its idle timeout, closes a connection
    /// unused for ``unusedTimeout``, and otherwise sets the watchdog for the next moment that matters.
    private func watchdogFired() {
        watchdog.reset()
        guard let context else { return }
        let now = context.eventLoop.now
        guard let exchange else {
            if let held = parked {
                // A timer armed for an earlier moment may fire first: only the parked deadline lets go.
                guard held.until <= now else {
                    arm(held.until, context: context)
                    return
                }
                // Nobody took the connection that switched protocols.
                parked = nil
                parkedEnd = (held.id, "nobody took it within \(Self.parkedTimeout.nanoseconds / 1_000_000_000) s")
                context.close(promise: nil)
                return
            }
            let due = unusedSince + Self.unusedTimeout
            if due <= now { context.close(promise: nil) } else { arm(due, context: context) }
            return
        }
        switch ExchangeEnds.check(
            deadline: exchange.deadline,
            paused: paused,
            lastActivity: exchange.lastActivity,
            idle: exchange.idle,
            now: now
        ) {
        case .ended(let error): fail(id: exchange.id, error)
        case .checkAgain(let next): arm(next, context: context)
        }
    }

    /// The exchange in progress is over (its machine says so): the connection is held for its caller after
    /// a 101 answer, offered for reuse, or closed.
    private func finishExchange() {
        guard let done = exchange else { return }
        exchange = nil
        resumeReadingBetweenExchanges()
        done.shared.finished()
        if done.machine.switchedProtocols, context?.channel.isActive != true {
            parkedEnd = (done.id, "the server closed it right after its 101 answer")
        }
        if done.machine.switchedProtocols, let context, context.channel.isActive {
            // What follows is another protocol's: held for the caller, who may take it as a stream.
            let until = context.eventLoop.now + Self.parkedTimeout
            parked = (done.id, until)
            arm(until, context: context)
        } else if done.machine.isReusable, let context, context.channel.isActive {
            // Offered for reuse before the reader sees the end, so its next request can take it. (The
            // watchdog closes it once unused for long enough.)
            unusedSince = context.eventLoop.now
            arm(unusedSince + Self.unusedTimeout, context: context)
            onOutcome?(.reusable)
        } else {
            context?.close(promise: nil)
        }
        done.source?.finish()
    }

    /// How ``detach(id:)`` left the connection for its new owner.
    struct Detached {
        /// Bytes of the body this handler held that the body sequence had not been given yet.
        var held: ByteBuffer
        /// Whether the connection was reading the body still (the stream's reader goes before the HTTP
        /// decoder, which has parsed everything it was given) or had switched protocols (the decoder
        /// stopped parsing and holds what followed the head; the reader goes after it).
        var midBody: Bool
        /// A read was held back for the body's reader: the stream's reader must ask for it.
        var readPending: Bool
    }

    /// Gives up the connection of exchange `id` to a byte stream (a data task that becomes a stream
    /// task): the exchange ends without an outcome for the pool, which forgets the connection. Possible
    /// while the body is streaming in (not chunked), or after a 101 answer.
    /// - Throws: ``FerryError/Code/invalidOperation`` saying why the connection cannot be handed over.
    func detach(id: Int) throws -> Detached {
        var detached = Detached(held: ByteBuffer(), midBody: false, readPending: readPending)
        if parked?.id == id {
            parked = nil
        } else if var current = exchange, current.id == id, current.machine.isStreamingBody {
            guard !current.machine.chunked else {
                throw FerryError(
                    .invalidOperation,
                    "the response's body is chunked, so the bytes that follow its head are not the body; only an unframed body or a 101 answer can become a stream"
                )
            }
            detached.midBody = true
            if let gathered = copier.take() { detached.held = gathered }
            _ = current.machine.abandon()
            exchange = nil
            current.shared.finished()
            // What the sequence holds is read before the stream's bytes.
            current.source?.finish()
        } else if let end = parkedEnd, end.id == id {
            throw FerryError(.networkConnectionLost, "the connection that switched protocols is gone: \(end.why)")
        } else {
            throw FerryError(
                .invalidOperation,
                "the response was complete when its head arrived and its connection went back to the session's pool; only a body still streaming in, or a 101 answer, can become a stream"
            )
        }
        watchdog.reset()
        paused = false
        readPending = false
        onOutcome?(.closed)
        onOutcome = nil
        return detached
    }

    private func failExchange(_ error: any Error) {
        guard var failed = exchange else { return }
        exchange = nil
        _ = copier.take()
        resumeReadingBetweenExchanges()
        failed.shared.finished()
        switch failed.machine.fail() {
        case .failAnswer: failed.answer?.fail(error)
        case .failBody: failed.source?.finish(error)
        case .nothing: break
        }
    }

    /// Between exchanges the connection reads (so a close by the server is seen at once), whatever the
    /// last reader wanted.
    private func resumeReadingBetweenExchanges() {
        paused = false
        if readPending, let context {
            readPending = false
            context.read()
        }
    }

    static func ferryError(for error: any Error) -> any Error {
        if let error = error as? HTTPParserError {
            if case .invalidEOFState = error {
                return FerryError(
                    .networkConnectionLost,
                    "the server closed the connection before the response was complete"
                )
            }
            return FerryError(.badServerResponse, "the server's response is not valid HTTP/1.1: \(Self.words(for: error))")
        }
        return TransportErrors.ferryError(for: error)
    }

    /// What the parser found wrong, in words (issue 41: "unknown (http_parser error)" and "invalid
    /// constant string" told a user nothing).
    static func words(for error: HTTPParserError) -> String {
        switch error {
        case .invalidConstant: return "its status line or a header line is malformed"
        case .invalidVersion: return "its status line has no valid HTTP version"
        case .invalidStatus: return "its status code is not a number of three digits"
        case .headerOverflow: return "its head is too large"
        case .invalidHeaderToken, .invalidCharactersUsed: return "a header has characters HTTP does not allow there"
        case .invalidContentLength: return "its Content-Length is not a valid length"
        case .unexpectedContentLength: return "it has a Content-Length where none is allowed (with Transfer-Encoding)"
        case .invalidChunkSize: return "a chunk's size in its chunked body is not valid"
        case .lfExpected: return "a line does not end with CRLF"
        case .trailingGarbage: return "bytes follow where the response should have ended"
        case .closedConnection: return "the server closed the connection in the middle of it"
        default: return "it could not be parsed (the parser said: \(error))"
        }
    }
}
