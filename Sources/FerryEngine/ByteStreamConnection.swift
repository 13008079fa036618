public import FerryCore
public import Foundation
import NIOConcurrencyHelpers
public import NIOCore

/// Reads and writes on a ``ByteStream`` (a stream task's TCP connection): reads of at least and at
/// most so many bytes, writes that return once written, half-closing, TLS added later. Thread safe.
///
/// Bytes that arrive before anyone reads wait here; past ``bufferLimit`` the connection stops reading
/// until they are taken.
public final class ByteStreamConnection: Sendable {
    /// Buffered bytes past which reading pauses.
    public static let bufferLimit = 1 << 20

    public let stream: ByteStream
    private let state = NIOLockedValueBox(State())
    private let handler: NIOLoopBound<ByteStreamReadHandler>

    struct State {
        var buffer = ByteBuffer()
        var atEOF = false
        var failure: FerryError?
        var waiter: Waiter?
        var paused = false
        var secure = false
    }

    struct Waiter {
        var minimum: Int
        var maximum: Int
        var continuation: CheckedContinuation<(Data, Bool), any Error>
        var timer: Scheduled<Void>?
    }

    private init(stream: ByteStream, handler: NIOLoopBound<ByteStreamReadHandler>) {
        self.stream = stream
        self.handler = handler
    }

    /// Starts reading `stream`.
    public static func attach(_ stream: ByteStream) async throws -> ByteStreamConnection {
        let channel = stream.channel
        return try await channel.eventLoop.submit {
            let reader = ByteStreamReadHandler()
            try channel.pipeline.syncOperations.addHandler(reader)
            return attach(stream, reader: reader)
        }.get()
    }

    /// A connection reading through `reader`, which is in `stream`'s pipeline already. On the loop.
    static func attach(_ stream: ByteStream, reader: ByteStreamReadHandler) -> ByteStreamConnection {
        let connection = ByteStreamConnection(stream: stream, handler: NIOLoopBound(reader, eventLoop: stream.channel.eventLoop))
        reader.attach(connection)
        return connection
    }

    /// Puts `bytes` before everything buffered (what came before the stream's reader was in place).
    func prepend(_ bytes: ByteBuffer) {
        guard bytes.readableBytes > 0 else { return }
        state.withLockedValue { state in
            var joined = bytes
            joined.writeBuffer(&state.buffer)
            state.buffer = joined
        }
    }

    /// Between `minimum` and `maximum` bytes (fewer only at the end of the stream), and whether the
    /// stream has ended. Waits for `minimum` bytes, at most `timeout` (nil: no limit).
    /// - Throws: ``FerryError/Code/timedOut``; the connection's error; ``FerryError/Code/invalidOperation``
    ///   when another read is waiting.
    public func read(minimum: Int, maximum: Int, timeout: TimeAmount?) async throws -> (Data, atEOF: Bool) {
        let maximum = max(1, maximum)
        let minimum = min(max(0, minimum), maximum)
        let loop = stream.channel.eventLoop
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Bool), any Error>) in
            enum Next {
                case done((Data, Bool))
                case failure(any Error)
                case wait
            }
            let (next, resume): (Next, Bool) = state.withLockedValue { state in
                if state.waiter != nil {
                    return (.failure(FerryError(.invalidOperation, "another read is waiting on this stream")), false)
                }
                if let taken = Self.take(&state, minimum: minimum, maximum: maximum) {
                    let resume = state.paused && state.buffer.readableBytes < Self.bufferLimit
                    if resume { state.paused = false }
                    return (.done(taken), resume)
                }
                if let failure = state.failure { return (.failure(failure), false) }
                var waiter = Waiter(minimum: minimum, maximum: maximum, continuation: continuation)
                if let timeout {
                    waiter.timer = loop.scheduleTask(in: timeout) { [self] in
                        let waiting = self.state.withLockedValue { locked -> CheckedContinuation<(Data, Bool), any Error>? in
                            defer { locked.waiter = nil }
                            return locked.waiter?.continuation
                        }
                        waiting?.resume(throwing: FerryError(.timedOut, "no \(minimum) bytes arrived within the read's timeout"))
                    }
                }
                state.waiter = waiter
                // Reading may have paused on a full buffer that holds less than asked for.
                let resume = state.paused
                state.paused = false
                return (.wait, resume)
            }
            if resume { resumeReading() }
            switch next {
            case .done(let taken): continuation.resume(returning: taken)
            case .failure(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// Writes `data`; returns once it is written to the socket.
    public func write(_ data: Data) async throws {
        let channel = stream.channel
        do {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: data)).get()
        } catch {
            throw TransportErrors.ferryError(for: error)
        }
    }

    /// Ends this side's writing (TCP FIN; over TLS, close_notify first). Reading goes on.
    /// - Parameter whenClosed: called on the connection's event loop as the write side closes, so before
    ///   anything the peer sends in answer to the end of the stream is read (a caller that reports both
    ///   keeps them in the order they happened).
    public func closeWrite(whenClosed: (@Sendable () -> Void)? = nil) async {
        let closing = stream.channel.eventLoop.makePromise(of: Void.self)
        if let whenClosed { closing.futureResult.whenComplete { _ in whenClosed() } }
        stream.channel.close(mode: .output, promise: closing)
        try? await closing.futureResult.get()
    }

    /// Stops reading: bytes that arrive from now on are dropped, and reads return the end of the stream.
    public func closeRead() {
        let waiter = state.withLockedValue { state -> Waiter? in
            state.atEOF = true
            state.buffer.clear()
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: (Data(), true))
    }

    /// Closes the connection.
    public func close() {
        stream.channel.close(promise: nil)
    }

    /// Returns when the connection has closed.
    public func closed() async {
        try? await stream.channel.closeFuture.get()
    }

    /// Adds TLS over the connection, checked as `connector`'s https (STARTTLS).
    public func startTLS(_ connector: any ByteStreamConnector, deadline: NIODeadline) async throws {
        try await connector.startTLS(on: stream, deadline: deadline)
        state.withLockedValue { $0.secure = true }
    }

    /// Whether TLS is in place.
    public var secure: Bool { stream.secure || state.withLockedValue { $0.secure } }

    private static func take(_ state: inout State, minimum: Int, maximum: Int) -> (Data, Bool)? {
        let available = state.buffer.readableBytes
        guard available >= max(minimum, 1) || state.atEOF || (minimum == 0 && available > 0) else { return nil }
        let count = min(available, maximum)
        let bytes = state.buffer.readBytes(length: count) ?? []
        if state.buffer.readableBytes == 0 { state.buffer.discardReadBytes() }
        return (Data(bytes), state.atEOF && state.buffer.readableBytes == 0)
    }

    private func resumeReading() {
        let handler = self.handler
        stream.channel.eventLoop.execute { handler.value.resumeReading() }
    }

    // MARK: From the handler (on the event loop)

    /// Bytes arrived; returns whether reading should pause.
    func received(_ bytes: inout ByteBuffer) -> Bool {
        let (done, waiter, pause): ((Data, Bool)?, Waiter?, Bool) = state.withLockedValue { state in
            if state.atEOF { return (nil, nil, false) }
            state.buffer.writeBuffer(&bytes)
            guard let waiter = state.waiter, let taken = Self.take(&state, minimum: waiter.minimum, maximum: waiter.maximum) else {
                let pause = state.buffer.readableBytes >= Self.bufferLimit
                if pause { state.paused = true }
                return (nil, nil, pause)
            }
            state.waiter = nil
            return (taken, waiter, false)
        }
        if let waiter, let done {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: done)
        }
        return pause
    }

    /// The stream ended (`failure` nil: the peer closed).
    func ended(_ failure: FerryError?) {
        let (done, waiter): ((Data, Bool)?, Waiter?) = state.withLockedValue { state in
            if failure == nil { state.atEOF = true } else if state.failure == nil { state.failure = failure }
            guard let waiter = state.waiter else { return (nil, nil) }
            state.waiter = nil
            return (Self.take(&state, minimum: waiter.minimum, maximum: waiter.maximum), waiter)
        }
        guard let waiter else { return }
        waiter.timer?.cancel()
        if let done {
            waiter.continuation.resume(returning: done)
        } else {
            waiter.continuation.resume(throwing: failure ?? FerryError(.networkConnectionLost, "the connection closed"))
        }
    }
}

/// Hands a byte stream's reads to its ``ByteStreamConnection`` and pauses reading when it is full.
final class ByteStreamReadHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private weak var connection: ByteStreamConnection?
    private var early = ByteBuffer()
    private var ended: FerryError??
    private var gate = ReadGate()
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func attach(_ connection: ByteStreamConnection) {
        self.connection = connection
        if early.readableBytes > 0, connection.received(&early) { gate.pause() }
        if let ended { connection.ended(ended) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard let connection else {
            early.writeBuffer(&bytes)
            return
        }
        if connection.received(&bytes) { gate.pause() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { finish(nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(TransportErrors.ferryError(for: error))
        context.close(promise: nil)
    }

    private func finish(_ failure: FerryError?) {
        guard ended == nil else { return }
        ended = .some(failure)
        connection?.ended(failure)
    }

    func read(context: ChannelHandlerContext) {
        gate.read(context)
    }

    func resumeReading() {
        gate.resume(context)
    }
}
