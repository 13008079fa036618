public import FerryCore
public import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOHTTP1
import NIOWebSocket

/// An open WebSocket (RFC 6455), client side: messages in and out, pings, the closing handshake.
///
/// Made by ``connect(through:request:options:deadline:)`` over a ``ByteStream`` (so through the session's proxy
/// and TLS). Thread safe. Messages that arrive before anyone calls ``receive()`` wait here; past
/// ``Options/bufferedMessages`` of them the connection stops reading until they are taken, so a slow
/// reader slows the server rather than filling memory.
public final class WebSocketConnection: Sendable {
    /// Settings for one connection.
    public struct Options: Sendable {
        /// The largest message accepted, after decompression; a larger one closes with 1009. 1 MiB, as
        /// URLSessionWebSocketTask's default.
        public var maximumMessageSize = 1 << 20
        /// How long a close waits for the server's close before dropping the connection.
        public var closeTimeout: TimeAmount = .seconds(5)
        /// Offer permessage-deflate (RFC 7692).
        public var compression = false
        /// Received messages kept before reading pauses.
        public var bufferedMessages = 64

        public init() {}
    }

    /// The upgrade request: where, with which fields and subprotocols.
    public struct UpgradeRequest: Sendable {
        /// The ws or wss URL.
        public var url: URL
        /// Fields to send besides the upgrade's own (cookies, authorization, your own).
        public var headers: Headers
        /// Subprotocols to offer, in order of preference (Sec-WebSocket-Protocol).
        public var protocols: [String]

        public init(url: URL, headers: Headers = Headers(), protocols: [String] = []) {
            self.url = url
            self.headers = headers
            self.protocols = protocols
        }
    }

    /// How the connection ended.
    public struct End: Sendable, Equatable {
        /// The close code sent (when this side closed) or received (when the server did);
        /// ``WebSocketCloseCode/abnormalClosure`` when there was no closing handshake.
        public var code: WebSocketCloseCode
        /// The close frame's reason, UTF-8.
        public var reason: String
        /// Nil for a closing handshake; otherwise what went wrong.
        public var error: FerryError?
    }

    /// The server's 101 answer.
    public let response: Response
    /// The subprotocol the server chose, if any.
    public let selectedProtocol: String?
    /// Whether permessage-deflate is in use.
    public let compressed: Bool

    let channel: any Channel
    private let handler: NIOLoopBound<WebSocketChannelHandler>
    private let state = NIOLockedValueBox(State())
    private let bufferedMessages: Int

    private struct State {
        var messages: [WebSocketMessage] = []
        var head = 0
        var receivers: [(id: Int, continuation: CheckedContinuation<WebSocketMessage, any Error>)] = []
        var pongs: [CheckedContinuation<Void, any Error>] = []
        var end: End?
        var endWaiters: [CheckedContinuation<End, Never>] = []
        /// The channel has closed: ``end`` is final.
        var concluded = false
        var nextID = 0
        var paused = false

        var queued: Int { messages.count - head }

        /// After taking messages: whether paused reading goes on now (the queue is down to `low`).
        mutating func resumes(below low: Int) -> Bool {
            guard paused, queued <= low else { return false }
            paused = false
            return true
        }

        mutating func pop() -> WebSocketMessage? {
            guard head < messages.count else { return nil }
            let message = messages[head]
            head += 1
            if head > 64, head * 2 > messages.count {
                messages.removeFirst(head)
                head = 0
            }
            return message
        }
    }

    init(
        channel: any Channel,
        handler: NIOLoopBound<WebSocketChannelHandler>,
        compressed: Bool,
        response: Response,
        selectedProtocol: String?,
        options: Options
    ) {
        self.channel = channel
        self.handler = handler
        self.response = response
        self.selectedProtocol = selectedProtocol
        self.compressed = compressed
        self.bufferedMessages = max(1, options.bufferedMessages)
    }

    // MARK: Using the connection

    /// Sends a message; returns once it is written to the socket.
    /// - Throws: ``FerryError/Code/notConnected`` once the connection is closing or closed.
    public func send(_ message: WebSocketMessage) async throws {
        let handler = self.handler
        try await channel.eventLoop.flatSubmit { handler.value.send([message]) }.get()
    }

    /// Sends `messages` in order with one flush; returns once the last is written. Many small messages
    /// go out faster this way than one ``send(_:)`` at a time, which waits for each.
    public func send(contentsOf messages: [WebSocketMessage]) async throws {
        guard !messages.isEmpty else { return }
        let handler = self.handler
        try await channel.eventLoop.flatSubmit { handler.value.send(messages) }.get()
    }

    /// The messages that have arrived, up to `limit`; waits for one when none has.
    public func receive(atMost limit: Int) async throws -> [WebSocketMessage] {
        let (taken, resume): ([WebSocketMessage], Bool) = state.withLockedValue { state in
            var taken: [WebSocketMessage] = []
            while taken.count < limit, let message = state.pop() { taken.append(message) }
            return (taken, state.resumes(below: bufferedMessages / 2))
        }
        if resume { resumeReading() }
        if !taken.isEmpty { return taken }
        return [try await receive()]
    }

    /// The next message. Messages that arrived before the close are delivered first.
    /// - Throws: the connection's error once it failed; ``FerryError/Code/notConnected`` after a close;
    ///   ``FerryError/Code/cancelled`` when the calling task is cancelled.
    public func receive() async throws -> WebSocketMessage {
        let id = state.withLockedValue { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<WebSocketMessage, any Error>) in
                enum Next {
                    case message(WebSocketMessage, resume: Bool)
                    case failure(any Error)
                    case wait
                }
                let next: Next = state.withLockedValue { state in
                    if let message = state.pop() {
                        return .message(message, resume: state.resumes(below: bufferedMessages / 2))
                    }
                    if let end = state.end { return .failure(Self.failure(after: end)) }
                    if Task.isCancelled { return .failure(FerryError(.cancelled, "the receive was cancelled")) }
                    state.receivers.append((id, continuation))
                    return .wait
                }
                switch next {
                case .message(let message, let resume):
                    if resume { resumeReading() }
                    continuation.resume(returning: message)
                case .failure(let error):
                    continuation.resume(throwing: error)
                case .wait:
                    break
                }
            }
        } onCancel: {
            let waiting = state.withLockedValue { state in
                let index = state.receivers.firstIndex { $0.id == id }
                return index.map { state.receivers.remove(at: $0).continuation }
            }
            waiting?.resume(throwing: FerryError(.cancelled, "the receive was cancelled"))
        }
    }

    /// Sends a ping and returns when its pong arrives.
    /// - Throws: the connection's error, or ``FerryError/Code/notConnected``, if it ends first.
    public func sendPing() async throws {
        let handler = self.handler
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ended: End? = state.withLockedValue { state in
                if let end = state.end { return end }
                state.pongs.append(continuation)
                return nil
            }
            if let ended {
                continuation.resume(throwing: Self.failure(after: ended))
                return
            }
            channel.eventLoop.execute { handler.value.sendPing() }
        }
    }

    /// Starts the closing handshake with `code` and `reason` (at most 123 bytes of UTF-8) and returns once
    /// the connection has ended: the server answered, or ``Options/closeTimeout`` passed.
    @discardableResult
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async -> End {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.close(code: code, reason: reason) }
        return await ended()
    }

    /// Drops the connection without a closing handshake; the end is ``FerryError/Code/cancelled``.
    public func cancel() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.abort(FerryError(.cancelled, "the WebSocket was cancelled")) }
    }

    /// How the connection ended, once it has.
    public var end: End? { state.withLockedValue { $0.end } }

    /// Returns when the connection has ended, with how.
    public func ended() async -> End {
        await withCheckedContinuation { (continuation: CheckedContinuation<End, Never>) in
            let end: End? = state.withLockedValue { state in
                if state.concluded, let end = state.end { return end }
                state.endWaiters.append(continuation)
                return nil
            }
            if let end { continuation.resume(returning: end) }
        }
    }

    private static func failure(after end: End) -> FerryError {
        if let error = end.error { return error }
        return FerryError(.notConnected, "the WebSocket is closed (\(end.code)\(end.reason.isEmpty ? "" : ": \(end.reason)"))")
    }

    private func resumeReading() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.resumeReading() }
    }

    // MARK: From the handler (on the event loop)

    /// A message arrived; returns whether reading should pause.
    func delivered(_ message: WebSocketMessage) -> Bool {
        let (receiver, pause): (CheckedContinuation<WebSocketMessage, any Error>?, Bool) = state.withLockedValue { state in
            if !state.receivers.isEmpty { return (state.receivers.removeFirst().continuation, false) }
            state.messages.append(message)
            if state.queued >= bufferedMessages {
                state.paused = true
                return (nil, true)
            }
            return (nil, false)
        }
        receiver?.resume(returning: message)
        return pause
    }

    func pongReceived() {
        let waiter = state.withLockedValue { state in state.pongs.isEmpty ? nil : state.pongs.removeFirst() }
        waiter?.resume()
    }

    /// The connection is ending (first call wins): nothing more arrives, so receivers and pings waiting
    /// now wait in vain. Messages still queued are delivered first.
    func finish(_ end: End) {
        let (receivers, pongs) = state.withLockedValue { state -> ([CheckedContinuation<WebSocketMessage, any Error>], [CheckedContinuation<Void, any Error>]) in
            guard state.end == nil else { return ([], []) }
            state.end = end
            defer {
                state.receivers = []
                state.pongs = []
            }
            return (state.receivers.map(\.continuation), state.pongs)
        }
        let failure = Self.failure(after: end)
        for receiver in receivers { receiver.resume(throwing: failure) }
        for pong in pongs { pong.resume(throwing: failure) }
    }

    /// The channel has closed: wakes those waiting for the end.
    func concluded() {
        let (end, waiters) = state.withLockedValue { state -> (End?, [CheckedContinuation<End, Never>]) in
            state.concluded = true
            defer { state.endWaiters = [] }
            return (state.end, state.endWaiters)
        }
        let final = end ?? End(code: .abnormalClosure, reason: "", error: FerryError(.networkConnectionLost, "the WebSocket connection closed"))
        for waiter in waiters { waiter.resume(returning: final) }
    }
}
