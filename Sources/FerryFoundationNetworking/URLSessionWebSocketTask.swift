import Ferry
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A WebSocket connection (Apple's `URLSessionWebSocketTask`) on Ferry's WebSocket client: RFC 6455
/// with permessage-deflate, over ws:// and wss://, through the session's proxy. Make one with
/// ``URLSession/webSocketTask(with:)-(URL)`` and ``URLSessionTask/resume()`` it; messages sent before the
/// handshake ends wait for it. Completion handlers run on the session's delegate queue.
open class URLSessionWebSocketTask: URLSessionTask, @unchecked Sendable {
    /// A close code (RFC 6455 §7.4.1), as Apple's.
    public enum CloseCode: Int, Sendable {
        case invalid = 0
        case normalClosure = 1000
        case goingAway = 1001
        case protocolError = 1002
        case unsupportedData = 1003
        case noStatusReceived = 1005
        case abnormalClosure = 1006
        case invalidFramePayloadData = 1007
        case policyViolation = 1008
        case messageTooBig = 1009
        case mandatoryExtensionMissing = 1010
        case internalServerError = 1011
        case tlsHandshakeFailure = 1015
    }

    /// A message: text or binary.
    public enum Message: Sendable {
        case data(Data)
        case string(String)
    }

    private var webSocket: WebSocketTask? { ferry as? WebSocketTask }

    /// The largest message ``receive()`` accepts (1 MiB by default, as Apple's); a larger one fails the
    /// receive and closes the connection with `messageTooBig`.
    open var maximumMessageSize: Int {
        get { webSocket?.maximumMessageSize ?? 1_048_576 }
        set { webSocket?.maximumMessageSize = newValue }
    }

    /// The code the connection closed with (`.invalid` while open). A code Apple's enum lacks (an
    /// application's 4000–4999) reads `.invalid`; Ferry's `Session` gives the number.
    open var closeCode: CloseCode {
        guard let code = webSocket?.closeCode.rawValue else { return .invalid }
        return CloseCode(rawValue: Int(code)) ?? .invalid
    }

    /// The reason the connection closed with, if any.
    open var closeReason: Data? { webSocket?.closeReason }

    // MARK: Messages

    /// Sends `message`; `completionHandler` gets nil once it is written, or the error.
    open func send(_ message: Message, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        guard let webSocket else { return onQueue { completionHandler(URLError(.badURL)) } }
        let url = currentRequest?.url
        webSocket.send(Self.ferry(message)) { [weak self] error in
            let converted = error.map { FoundationBridge.error($0, url: url) }
            self?.onQueue { completionHandler(converted) }
        }
    }

    /// Sends `message`; returns once it is written.
    open func send(_ message: Message) async throws {
        guard let webSocket else { throw URLError(.badURL) }
        do { try await webSocket.send(Self.ferry(message)) } catch let error as FerryError {
            throw FoundationBridge.error(error, url: currentRequest?.url)
        }
    }

    /// Receives the next message; `completionHandler` gets it, or the error (the connection closed).
    open func receive(completionHandler: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        guard let webSocket else { return onQueue { completionHandler(.failure(URLError(.badURL))) } }
        let url = currentRequest?.url
        webSocket.receive { [weak self] result in
            let converted: Result<Message, any Error> = result.map(Self.apple).mapError { FoundationBridge.error($0, url: url) }
            self?.onQueue { completionHandler(converted) }
        }
    }

    /// Receives the next message.
    open func receive() async throws -> Message {
        guard let webSocket else { throw URLError(.badURL) }
        do { return Self.apple(try await webSocket.receive()) } catch let error as FerryError {
            throw FoundationBridge.error(error, url: currentRequest?.url)
        }
    }

    /// Sends a ping; `pongReceiveHandler` gets nil when its pong arrives, or the error.
    open func sendPing(pongReceiveHandler: @escaping @Sendable ((any Error)?) -> Void) {
        guard let webSocket else { return onQueue { pongReceiveHandler(URLError(.badURL)) } }
        let url = currentRequest?.url
        webSocket.sendPing { [weak self] error in
            let converted = error.map { FoundationBridge.error($0, url: url) }
            self?.onQueue { pongReceiveHandler(converted) }
        }
    }

    /// Sends a ping; returns when its pong arrives.
    open func sendPing() async throws {
        guard let webSocket else { throw URLError(.badURL) }
        do { try await webSocket.sendPing() } catch let error as FerryError {
            throw FoundationBridge.error(error, url: currentRequest?.url)
        }
    }

    /// Closes the connection with `closeCode` and `reason` (at most 123 bytes), and ends the task.
    open func cancel(with closeCode: CloseCode, reason: Data?) {
        guard let webSocket else { return cancel() }
        webSocket.cancel(with: WebSocketCloseCode(rawValue: UInt16(closeCode.rawValue)), reason: reason)
    }

    // MARK: Conversions

    private func onQueue(_ body: @escaping @Sendable () -> Void) {
        owner.delegateQueue.addOperation(body)
    }

    static func ferry(_ message: Message) -> WebSocketMessage {
        switch message {
        case .data(let data): .data(data)
        case .string(let text): .string(text)
        }
    }

    static func apple(_ message: WebSocketMessage) -> Message {
        switch message {
        case .data(let data): .data(data)
        case .string(let text): .string(text)
        }
    }
}

/// A WebSocket task's own events (Apple's `URLSessionWebSocketDelegate`).
public protocol URLSessionWebSocketDelegate: URLSessionTaskDelegate {
    /// The opening handshake succeeded; `protocol` is the subprotocol the server chose, if any.
    func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?)
    /// A closing handshake ended the connection: the code and reason sent or received.
    func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode,
        reason: Data?
    )
}

extension URLSessionWebSocketDelegate {
    public func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?) {}
    public func urlSession(
        _ session: URLSession,
        webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode,
        reason: Data?
    ) {}
}
