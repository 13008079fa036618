import FerryCore
import Foundation
import NIOCore
import NIOWebSocket

/// The WebSocket's owner on its event loop: reads frames through ``WebSocketMessageAssembler``, carries
/// out what it says (deliver, pong, close, fail), writes the client's masked frames, and runs the closing
/// handshake (RFC 6455 §7). Sits behind NIOWebSocket's frame encoder and decoder.
final class WebSocketChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var assembler: WebSocketMessageAssembler
    private let deflate: PerMessageDeflate?
    private let closeTimeout: TimeAmount
    /// Who hears of messages and the end; set by ``attach(_:)`` once the upgrade is through.
    private weak var connection: WebSocketConnection?
    /// What arrived before ``attach(_:)`` (a server may send in the same read as its 101).
    private var early: [WebSocketMessage] = []
    private var concluded = false
    private var context: ChannelHandlerContext?

    /// A close frame went out (ours, or our answer to the server's).
    private var closeSent = false
    /// This side began the closing handshake: messages still arrive until the server's close (§7.1.2:
    /// the server may send what it had before answering).
    private var closingHere = false
    /// How the connection ends, decided when the closing starts; told to the connection at the latest
    /// when the channel goes.
    private var ending: WebSocketConnection.End?
    private var gate = ReadGate()
    private var closeTimer: Scheduled<Void>?


    private let eventLoop: any EventLoop

    init(eventLoop: any EventLoop, maximumMessageSize: Int, deflate: PerMessageDeflate?, closeTimeout: TimeAmount) {
        self.eventLoop = eventLoop
        self.assembler = WebSocketMessageAssembler(maximumMessageSize: maximumMessageSize, deflate: deflate)
        self.deflate = deflate
        self.closeTimeout = closeTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard ending == nil || closeSent else { return }
        let frame = unwrapInboundIn(data)
        switch assembler.receive(frame) {
        case .none:
            break
        case .message(let message):
            guard ending == nil || closingHere else { return }
            guard let connection else {
                early.append(message)
                return
            }
            if connection.delivered(message) { gate.pause() }
        case .ping(let payload):
            guard !closeSent else { return }
            write(context: context, WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: payload), promise: nil)
        case .pong:
            connection?.pongReceived()
        case .close(let code, let reason):
            if closeSent {
                // The answer to our close: the handshake is done.
                conclude()
                context.close(promise: nil)
                return
            }
            settle(WebSocketConnection.End(code: code ?? .noStatusReceived, reason: reason, error: nil))
            // Echo the code (none when the server sent none), then let the server close TCP first
            // (§7.1.1), as long as closeTimeout.
            var payload = context.channel.allocator.buffer(capacity: 2)
            if let code { payload.writeInteger(code.rawValue) }
            closeSent = true
            write(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload), promise: nil)
            armCloseTimer(context: context)
        case .fail(let code, let reason):
            fail(context: context, code: code, error: Self.error(code, reason))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        channelGone()
        context.fireChannelInactive()
    }

    /// The channel closed before this handler was in its pipeline (the server answered 101 and closed
    /// at once, while the upgrade was being put in place), so ``channelInactive(context:)`` never came:
    /// the connection ends as it would have, after the messages that came before.
    func channelClosedBeforeAdded() {
        guard !concluded else { return }
        channelGone()
    }

    /// The connection is gone: it ends as its closing said, or as lost when nothing was said.
    private func channelGone() {
        if ending == nil {
            ending = WebSocketConnection.End(
                code: .abnormalClosure,
                reason: "",
                error: FerryError(.networkConnectionLost, "the server closed the connection without a WebSocket close frame")
            )
        }
        conclude()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case NIOWebSocketError.invalidFrameLength:
            let limit = assembler.maximumMessageSize
            fail(
                context: context,
                code: .messageTooBig,
                error: Self.error(.messageTooBig, "the server sent a frame over maximumMessageSize (\(limit) bytes); raise it to accept larger ones")
            )
        case NIOWebSocketError.fragmentedControlFrame:
            fail(context: context, code: .protocolError, error: Self.error(.protocolError, "the server fragmented a control frame"))
        case NIOWebSocketError.multiByteControlFrameLength:
            fail(context: context, code: .protocolError, error: Self.error(.protocolError, "the server sent a control frame longer than 125 bytes"))
        default:
            if ending == nil {
                ending = WebSocketConnection.End(
                    code: .abnormalClosure,
                    reason: "",
                    error: TransportErrors.ferryError(for: error)
                )
            }
            context.close(promise: nil)
        }
    }

    /// Hands what arrived so far to `connection`, and everything from now on.
    func attach(_ connection: WebSocketConnection) {
        self.connection = connection
        for message in early where connection.delivered(message) { gate.pause() }
        early = []
        if let ending { connection.finish(ending) }
        if concluded { connection.concluded() }
    }

    // MARK: Reading pauses

    func read(context: ChannelHandlerContext) {
        gate.read(context)
    }

    func resumeReading() {
        gate.resume(context)
    }

    // MARK: Outbound (called on the event loop by the connection)

    /// Writes `messages` in order and flushes once; the future completes when the last is written.
    func send(_ messages: [WebSocketMessage]) -> EventLoopFuture<Void> {
        guard let context else {
            return eventLoop.makeFailedFuture(FerryError(.notConnected, "the WebSocket is not connected"))
        }
        guard ending == nil, !closeSent else {
            return context.eventLoop.makeFailedFuture(FerryError(.notConnected, "the WebSocket is closing or closed; it sends nothing more"))
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        for (index, message) in messages.enumerated() {
            var payload: ByteBuffer
            let opcode: WebSocketOpcode
            switch message {
            case .string(let text):
                payload = context.channel.allocator.buffer(string: text)
                opcode = .text
            case .data(let data):
                payload = context.channel.allocator.buffer(bytes: data)
                opcode = .binary
            }
            var compressed = false
            if let deflate {
                do {
                    payload = try deflate.deflate(payload)
                    compressed = true
                } catch {
                    context.flush()
                    promise.fail(FerryError(.unknown, "the message could not be compressed: \(error)"))
                    return promise.futureResult
                }
            }
            var frame = WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: payload)
            frame.rsv1 = compressed
            context.write(wrapOutboundOut(frame), promise: index == messages.count - 1 ? promise : nil)
        }
        context.flush()
        return promise.futureResult
    }

    func sendPing() {
        guard let context, ending == nil, !closeSent else { return }
        write(context: context, WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: ByteBuffer()), promise: nil)
    }

    func close(code: WebSocketCloseCode, reason: String) {
        guard let context, !closeSent, ending == nil else { return }
        var payload = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        payload.writeInteger(code.rawValue)
        // At most 123 bytes of reason fit a control frame; cut on a character boundary.
        var kept = ""
        for character in reason where kept.utf8.count + String(character).utf8.count <= 123 { kept.append(character) }
        payload.writeString(kept)
        // The end is told when the server answers (or the channel goes): receives go on until then.
        ending = WebSocketConnection.End(code: code, reason: kept, error: nil)
        closingHere = true
        closeSent = true
        write(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload), promise: nil)
        armCloseTimer(context: context)
    }

    func abort(_ error: FerryError) {
        closingHere = false
        settle(WebSocketConnection.End(code: .abnormalClosure, reason: "", error: error))
        context?.close(promise: nil)
    }

    // MARK: Helpers

    /// Fails the connection (§7.1.7): a close frame with `code`, then the socket closes.
    private func fail(context: ChannelHandlerContext, code: WebSocketCloseCode, error: FerryError) {
        if closeSent {
            // Closing already: a breach in what still arrives ends it now, and says why.
            if closingHere, let closing = ending { ending = WebSocketConnection.End(code: closing.code, reason: closing.reason, error: error) }
            closingHere = false
            context.close(promise: nil)
            return
        }
        settle(WebSocketConnection.End(code: code, reason: "", error: error))
        if !closeSent {
            closeSent = true
            var payload = context.channel.allocator.buffer(capacity: 2)
            payload.writeInteger(code.rawValue)
            let written = context.eventLoop.makePromise(of: Void.self)
            write(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload), promise: written)
            written.futureResult.whenComplete { _ in context.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }

    private func settle(_ end: WebSocketConnection.End) {
        if ending == nil { ending = end }
        // Receivers learn at once that nothing more comes; the end is final when the channel goes.
        if let connection, let ending { connection.finish(ending) }
    }

    private func conclude() {
        closeTimer?.cancel()
        closeTimer = nil
        concluded = true
        if let ending { connection?.finish(ending) }
        connection?.concluded()
    }

    private func armCloseTimer(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        let channel = context.channel
        closeTimer = context.eventLoop.scheduleTask(in: closeTimeout) { channel.close(promise: nil) }
    }

    private func write(context: ChannelHandlerContext, _ frame: WebSocketFrame, promise: EventLoopPromise<Void>?) {
        context.writeAndFlush(wrapOutboundOut(frame), promise: promise)
    }


    static func error(_ code: WebSocketCloseCode, _ reason: String) -> FerryError {
        switch code {
        case .messageTooBig: FerryError(.dataLengthExceedsMaximum, reason)
        default: FerryError(.badServerResponse, "\(reason); closed with \(code)")
        }
    }
}
