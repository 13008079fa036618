import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// The last handler of one HTTP/1.1 client connection of ``HTTP1Transport``: runs one exchange at a time,
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

    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyDemand
    >

    /// What a connection may be reused for after its exchange.
    enum Outcome {
        /// Both the request and the response are complete and both sides keep the connection.
        case reusable
        /// The connection was closed or must be.
        case closed
    }

    /// One request and its response.
    private struct Exchange {
        let id: Int
        /// Completed with the answer; nil once it has been.
        var answer: EventLoopPromise<ExchangeAnswer>?
        /// The head, held until the read that brought it is done.
        var head: HTTPResponseHead?
        /// Body that came in the same read as the head.
        var early: ByteBuffer?
        /// Body bytes still to come, when Content-Length said (buffers copied for the reader are no
        /// larger than that: a 1 KiB answer over TLS took a 64 KiB buffer).
        var remaining: Int?
        /// Where the body streams once the answer went without it.
        var source: Producer.Source?
        /// The body reader's way back to this handler.
        let slot: HandlerSlot
        let shared: HTTP1ExchangeState
        var requestDone = false
        var responseDone = false
        var keepAlive: Bool
        var receivedAnything = false
        /// The answer switched protocols (101): the connection is never reused, and is held for a moment
        /// in case its caller takes it as a byte stream (``detach(id:)``).
        var switchedProtocols = false
        /// The body comes in chunked transfer coding (its bytes as sent are not the body's).
        var chunked = false
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
        answer: EventLoopPromise<ExchangeAnswer>,
        slot: HandlerSlot,
        shared: HTTP1ExchangeState,
        keepAlive: Bool,
        deadline: NIODeadline,
        idleTimeout requested: TimeAmount? = nil
    ) -> Bool {
        guard let context, context.channel.isActive, exchange == nil else {
            answer.fail(HTTP1ConnectionError.closedBeforeResponse)
            return false
        }
        let idle = min(idleTimeout, requested ?? idleTimeout)
        let exchange = Exchange(
            id: id,
            answer: answer,
            slot: slot,
            shared: shared,
            keepAlive: keepAlive,
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
        exchange?.requestDone = true
        exchange?.lastActivity = now
        finishIfComplete()
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
        guard let exchange, exchange.id == id, !exchange.responseDone else { return }
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
        exchange!.receivedAnything = true
        switch part {
        case .head(let head) where head.status.code >= 100 && head.status.code < 200 && head.status != .switchingProtocols:
            // Informational (103 Early Hints, 100 Continue): the final head follows. NIO forwards these
            // (informationalResponseStrategy .forward) without an end of their own.
            if let tooMany = exchange!.shared.informational(status: Int(head.status.code), headers: head.headers) {
                failExchange(tooMany)
                context.close(promise: nil)
                return
            }
        case .head(let head):
            if !head.isKeepAlive { exchange!.keepAlive = false }
            if head.status == .switchingProtocols {
                exchange!.switchedProtocols = true
                exchange!.keepAlive = false
            }
            exchange!.chunked = head.headers[canonicalForm: "transfer-encoding"].contains { $0.lowercased() == "chunked" }
            exchange!.shared.timing.withLockedValue { $0.responseStart = Date() }
            exchange!.head = head
            exchange!.remaining = head.headers.first(name: "content-length").flatMap { Int($0) }
        case .body(let buffer):
            if copiesBody {
                let remaining = exchange!.remaining
                exchange!.remaining = remaining.map { $0 - buffer.readableBytes }
                if let full = copier.copy(buffer, allocator: context.channel.allocator, remaining: remaining) {
                    handOver(full)
                }
            } else {
                handOver(buffer)
            }
        case .end:
            handOverGathered()
            // The whole answer came in this read: it goes with its body, no sequence needed.
            let complete = exchange!.head.map { head in
                (exchange!.answer, ExchangeAnswer(head: head, body: .complete(exchange!.early ?? ByteBuffer())))
            }
            if complete != nil {
                exchange!.answer = nil
                exchange!.head = nil
                exchange!.early = nil
            }
            exchange!.responseDone = true
            if !exchange!.requestDone {
                // The server answered before taking the whole request (an early 413, say): the answer
                // stands, the rest of the request is not sent, and the connection is not reused.
                exchange!.requestDone = true
                exchange!.keepAlive = false
            }
            // Offered for reuse first, so the caller's next request can take the connection.
            finishIfComplete()
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
        guard let head = exchange?.head, let slot = exchange?.slot, let shared = exchange?.shared,
            let id = exchange?.id
        else { return }
        let made = HTTP1Transport.responseBody(slot: slot, shared: shared, id: id, watermarks: (2, 4))
        let promise = exchange!.answer
        exchange!.answer = nil
        exchange!.head = nil
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
        guard exchange?.head == nil else {
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
        if let exchange { failExchange(ExchangeEnds.closed(receivedAnything: exchange.receivedAnything)) }
        onOutcome?(.closed)
        onOutcome = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if ExchangeEnds.isUncleanShutdown(error) { return }
        // A reset before any byte of the answer is the server's close of an idle connection racing our
        // request (its kernel resets a socket closed with our request unread): as a clean close then,
        // the request may go again on a new connection.
        if let exchange, !exchange.receivedAnything, ExchangeEnds.isReset(error) {
            failExchange(HTTP1ConnectionError.closedBeforeResponse)
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

    private func finishIfComplete() {
        guard let done = exchange, done.requestDone, done.responseDone else { return }
        exchange = nil
        resumeReadingBetweenExchanges()
        done.shared.finished()
        if done.switchedProtocols, context?.channel.isActive != true {
            parkedEnd = (done.id, "the server closed it right after its 101 answer")
        }
        if done.switchedProtocols, let context, context.channel.isActive {
            // What follows is another protocol's: held for the caller, who may take it as a stream.
            let until = context.eventLoop.now + Self.parkedTimeout
            parked = (done.id, until)
            arm(until, context: context)
        } else if done.keepAlive, let context, context.channel.isActive {
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
        } else if let current = exchange, current.id == id, current.answer == nil, !current.responseDone {
            guard !current.chunked else {
                throw FerryError(
                    .invalidOperation,
                    "the response's body is chunked, so the bytes that follow its head are not the body; only an unframed body or a 101 answer can become a stream"
                )
            }
            detached.midBody = true
            if let gathered = copier.take() { detached.held = gathered }
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
        guard let failed = exchange else { return }
        exchange = nil
        _ = copier.take()
        resumeReadingBetweenExchanges()
        failed.shared.finished()
        failed.answer?.fail(error)
        failed.source?.finish(error)
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
            return FerryError(.badServerResponse, "the server's response is not valid HTTP/1.1 (\(error))")
        }
        return TransportErrors.ferryError(for: error)
    }
}

/// What the caller's side and the loop share about one exchange.
final class HTTP1ExchangeState: Sendable {
    let timing: NIOLockedValueBox<TransportTiming>
    private let done = Atomic<Bool>(false)
    /// The request's URL, which informational (1xx) answers are for.
    private let url: URL?
    /// Where informational answers go; nil: nobody listens (they are read and dropped).
    private let informationalResponses: TransferContext.InformationalResponses?
    private let informationalCount = Atomic<Int>(0)
    /// More informational answers than this before the final one fail the exchange: a server that
    /// sends them without end would otherwise keep it alive (and its listener busy) for ever.
    static let maximumInformationalResponses = 64

    var isFinished: Bool { done.load(ordering: .acquiring) }
    func finished() { done.store(true, ordering: .releasing) }

    /// - Parameters:
    ///   - url: the request's URL, which the informational answers are for.
    ///   - informational: the transfer's listener for them (``TransferContext/informationalResponses``).
    init(timing: TransportTiming = TransportTiming(), url: URL? = nil, informational: TransferContext.InformationalResponses? = nil) {
        self.timing = NIOLockedValueBox(timing)
        self.url = url
        self.informationalResponses = informational
    }

    /// An informational answer (1xx other than 101) arrived before the final one: handed to the
    /// listener, if any. Returns the error to fail the exchange with when there were more than
    /// ``maximumInformationalResponses``; nil otherwise.
    func informational(status: Int, headers: HTTPHeaders) -> FerryError? {
        let count = informationalCount.wrappingAdd(1, ordering: .relaxed).newValue
        guard count <= Self.maximumInformationalResponses else {
            return FerryError(
                .badServerResponse,
                "the server sent more than \(Self.maximumInformationalResponses) informational (1xx) responses before its answer"
            )
        }
        if let informationalResponses, let url {
            informationalResponses(url, status, Headers(headers.map { ($0.name, $0.value) }))
        }
        return nil
    }
}

/// What runs exchanges on a connection's loop: an HTTP/1.1 connection's handler, or an HTTP/2
/// connection's (whose streams are its exchanges). The body reader and the waiting caller reach it by the
/// exchange's number.
protocol ExchangeDriver: AnyObject {
    /// The reader wants more of exchange `id`'s body.
    func resume(id: Int)
    /// The reader stopped reading exchange `id`'s body (finished, failed or dropped it).
    func readerGone(id: Int)
    /// Ends exchange `id` with `error`.
    func fail(id: Int, _ error: any Error)
}

/// The timeouts and ends an exchange shares with every driver (HTTP/1.1 connections and HTTP/2 streams).
enum ExchangeEnds {
    /// What a watchdog finds for an exchange at `now`.
    enum Check {
        /// Past its `deadline` (``resourceTimeout``), or quiet for `idle` (``idleTimeout``).
        case ended(FerryError)
        /// Look again then: while the reader holds the body back, or bytes moved within `idle`.
        case checkAgain(NIODeadline)
    }

    /// Checks an exchange against its resource `deadline` and its idle timeout.
    static func check(
        deadline: NIODeadline,
        paused: Bool,
        lastActivity: NIODeadline,
        idle: TimeAmount,
        now: NIODeadline
    ) -> Check {
        if deadline <= now { return .ended(resourceTimeout) }
        if paused { return .checkAgain(min(now + idle, deadline)) }
        let due = lastActivity + idle
        return due > now ? .checkAgain(min(due, deadline)) : .ended(idleTimeout)
    }

    static var idleTimeout: FerryError {
        FerryError(.timedOut, "no data arrived within the request timeout; the transfer can be resumed")
    }

    static var resourceTimeout: FerryError {
        FerryError(.timedOut, "the transfer took longer than the resource timeout")
    }

    /// The connection closed under an exchange: lost if any of the answer came, else
    /// ``HTTP1ConnectionError/closedBeforeResponse`` (the request may go again on a reused connection).
    static func closed(receivedAnything: Bool) -> any Error {
        receivedAnything
            ? FerryError(.networkConnectionLost, "the server closed the connection before the response was complete")
            : HTTP1ConnectionError.closedBeforeResponse
    }

    /// A connection reset by the peer (ECONNRESET on a read, EPIPE on a write).
    static func isReset(_ error: any Error) -> Bool {
        guard let error = error as? IOError else { return false }
        return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
    }

    /// A TLS peer that closed without close_notify (common, and what curl accepts): not a failure in
    /// itself; the close that follows decides (a body whose length is known is complete or not).
    static func isUncleanShutdown(_ error: any Error) -> Bool {
        if let tls = error as? NIOSSLError, case .uncleanShutdown = tls { return true }
        return false
    }
}

/// The driver an exchange runs on, reached on its loop from other threads.
final class HandlerSlot: Sendable {
    private let run: @Sendable (@escaping @Sendable (any ExchangeDriver) -> Void) -> Void

    convenience init<Driver: ExchangeDriver>(_ driver: NIOLoopBound<Driver>) {
        self.init { body in driver.eventLoop.execute { body(driver.value) } }
    }

    /// A slot whose calls go through `run`, which must call its argument with the driver on its loop.
    init(run: @escaping @Sendable (@escaping @Sendable (any ExchangeDriver) -> Void) -> Void) {
        self.run = run
    }

    /// Runs `body` with the driver on its loop.
    func onLoop(_ body: @escaping @Sendable (any ExchangeDriver) -> Void) {
        run(body)
    }
}

/// Passes the body reader's demand to the connection's loop.
final class BodyDemand: NIOAsyncSequenceProducerDelegate, Sendable {
    private let slot: HandlerSlot
    private let shared: HTTP1ExchangeState
    private let id: Int

    init(slot: HandlerSlot, shared: HTTP1ExchangeState, id: Int) {
        self.slot = slot
        self.shared = shared
        self.id = id
    }

    func produceMore() {
        let id = self.id
        slot.onLoop { $0.resume(id: id) }
    }

    func didTerminate() {
        // Reading to the end is the common case: nothing for the loop to do then.
        guard !shared.isFinished else { return }
        let id = self.id
        slot.onLoop { $0.readerGone(id: id) }
    }
}

/// Internal failures of ``HTTP1ConnectionHandler`` the transport acts on.
enum HTTP1ConnectionError: Error {
    /// The connection closed before any byte of the response: a reused connection the server had
    /// already closed, so the request may be sent again on a new one.
    case closedBeforeResponse
    /// An HTTP/2 server refused the stream without processing it (REFUSED_STREAM, or a GOAWAY whose
    /// last stream is below it), or the connection could take no new stream: safe to send again elsewhere.
    case refused(String)
}
