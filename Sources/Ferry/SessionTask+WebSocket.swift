public import FerryCore
import FerryEngine
public import Foundation
import NIOCore
import Synchronization

/// A WebSocket (URLSessionWebSocketTask): ws:// or wss:// through the session's TLS settings, proxy and
/// cookies. Resume it, then send and receive messages; ``cancel(with:reason:)`` closes it.
///
/// ```swift
/// let socket = session.webSocketTask(with: URL(string: "wss://example.com/chat")!)
/// socket.resume()
/// try await socket.send(.string("hello"))
/// let reply = try await socket.receive()
/// socket.cancel(with: .normalClosure, reason: nil)
/// ```
///
/// Sends and receives made before the connection is open wait for it. The task completes (didComplete)
/// when the connection ends: with no error after a closing handshake from either side, with
/// `FerryError/Code/networkConnectionLost` when the server drops it without one, with the reason when
/// the server breaks the protocol (the close code sent is in ``closeCode``).
public final class WebSocketTask: SessionTask, @unchecked Sendable {
    private let slot = ConnectionSlot<WebSocketConnection>()
    private let settings = Mutex(Settings())
    /// A close asked for before the connection opened.
    private let pendingClose = Mutex<(WebSocketCloseCode, String)?>(nil)

    private struct Settings {
        var maximumMessageSize = 1 << 20
        var compression = false
    }

    /// The largest message received, in bytes, after decompression; a larger one closes the connection
    /// with 1009 (message too big). 1 MiB by default, as Apple's. Set before ``SessionTask/resume()``.
    public var maximumMessageSize: Int {
        get { settings.withLock { $0.maximumMessageSize } }
        set { settings.withLock { $0.maximumMessageSize = max(125, newValue) } }
    }

    /// Offer permessage-deflate (RFC 7692) when connecting; the server decides. Off by default. Set
    /// before ``SessionTask/resume()``.
    public var compression: Bool {
        get { settings.withLock { $0.compression } }
        set { settings.withLock { $0.compression = newValue } }
    }

    /// The close code sent or received; `WebSocketCloseCode/invalid` until the connection ends.
    public var closeCode: WebSocketCloseCode { connectionNow()?.end?.code ?? .invalid }

    /// The close frame's reason, as UTF-8 bytes; nil when there was none.
    public var closeReason: Data? {
        guard let reason = connectionNow()?.end?.reason, !reason.isEmpty else { return nil }
        return Data(reason.utf8)
    }

    /// The subprotocol the server chose (Sec-WebSocket-Protocol), once open.
    public var selectedProtocol: String? { connectionNow()?.selectedProtocol }

    // MARK: Messages

    /// Sends a message; returns once it is written to the connection.
    /// - Throws: the connection's failure, or `FerryError/Code/notConnected` once it is closed.
    public func send(_ message: WebSocketMessage) async throws {
        try await connection().send(message)
    }

    /// Sends `messages` in order, written together; returns once the last is written. For many small
    /// messages this is much faster than awaiting ``send(_:)`` for each.
    public func send(contentsOf messages: [WebSocketMessage]) async throws {
        try await connection().send(contentsOf: messages)
    }

    /// The messages that have arrived, up to `limit` of them, in order; waits for one when none has.
    public func receive(atMost limit: Int) async throws -> [WebSocketMessage] {
        try await connection().receive(atMost: max(1, limit))
    }

    /// ``send(_:)`` with a completion handler (nil error on success).
    public func send(_ message: WebSocketMessage, completionHandler: @escaping @Sendable (FerryError?) -> Void) {
        Task {
            do {
                try await send(message)
                completionHandler(nil)
            } catch {
                completionHandler(Self.ferryError(error))
            }
        }
    }

    /// The next message, whole (fragments joined). Messages that arrived before a close come first.
    /// - Throws: the connection's failure, or `FerryError/Code/notConnected` once it is closed.
    public func receive() async throws -> WebSocketMessage {
        try await connection().receive()
    }

    /// ``receive()`` with a completion handler.
    public func receive(completionHandler: @escaping @Sendable (Result<WebSocketMessage, FerryError>) -> Void) {
        Task {
            do {
                completionHandler(.success(try await receive()))
            } catch {
                completionHandler(.failure(Self.ferryError(error)))
            }
        }
    }

    /// Sends a ping; `pongReceiveHandler` gets nil when its pong arrives, or the error that ended the
    /// connection first.
    public func sendPing(pongReceiveHandler: @escaping @Sendable (FerryError?) -> Void) {
        Task {
            do {
                try await sendPing()
                pongReceiveHandler(nil)
            } catch {
                pongReceiveHandler(Self.ferryError(error))
            }
        }
    }

    /// Sends a ping and returns when its pong arrives.
    public func sendPing() async throws {
        try await connection().sendPing()
    }

    /// Closes the connection with `closeCode` and `reason` (at most 123 bytes; longer is cut): the close
    /// frame goes out, the server's answer is awaited (5 s at most), and the task completes. Codes the
    /// RFC reserves (1005, 1006, 1015, below 1000) are sent as 1000.
    public func cancel(with closeCode: WebSocketCloseCode, reason: Data?) {
        let code = closeCode.maySend ? closeCode : .normalClosure
        let text = reason.map { String(decoding: $0, as: UTF8.self) } ?? ""
        if let connection = slot.current {
            Task { await connection.close(code: code, reason: text) }
        } else if slot.isConnecting {
            pendingClose.withLock { $0 = (code, text) }
            if state == .suspended { cancel() }
        }
    }

    // MARK: The transfer

    /// Connects, tells the delegate, and runs until the connection ends.
    func transferWebSocket(_ request: Request, protocols: [String], deadline: NIODeadline) async throws -> TransferResult {
        do {
            let connection = try await open(request, protocols: protocols)
            slot.open(connection)
            if let webSocketDelegate = taskDelegateForEvents() as? any WebSocketDelegate {
                let session = self.session
                await session.queue.perform { [self] in
                    await webSocketDelegate.session(session, webSocketTask: self, didOpenWithProtocol: connection.selectedProtocol)
                }
            }
            if let (code, reason) = pendingClose.withLock({ $0 }) {
                await connection.close(code: code, reason: reason)
            }
            let end = await withTaskCancellationHandler {
                await connection.ended()
            } onCancel: {
                connection.cancel()
            }
            if end.error == nil, let webSocketDelegate = taskDelegateForEvents() as? any WebSocketDelegate {
                let session = self.session
                let reason = end.reason.isEmpty ? nil : Data(end.reason.utf8)
                await session.queue.perform { [self] in
                    await webSocketDelegate.session(session, webSocketTask: self, didCloseWith: end.code, reason: reason)
                }
            }
            if let error = end.error { throw error }
            return .closed
        } catch {
            let failure = Self.ferryError(error)
            slot.fail(failure)
            throw failure
        }
    }

    private func open(_ request: Request, protocols: [String]) async throws -> WebSocketConnection {
        guard let connector = session.transport.byteStreams else {
            throw FerryError(.unsupportedURL, "this session's transport carries HTTP exchanges only; WebSockets need Ferry's standard transport")
        }
        let url = request.url
        // Connecting and the handshake: the request's timeout, as an exchange's first byte.
        let deadline = session.requestDeadline(request)
        var headers = request.headers
        // Cookies as for the http(s) URL of the same place (RFC 6455 §4.1: the same rules apply).
        let cookieURL = WebSocketConnection.httpURL(for: url)
        if request.httpShouldHandleCookies, let cookies = session.transport.cookies, let cookieURL,
            !headers.contains("Cookie"), let header = cookies.cookieHeader(for: cookieURL)
        {
            headers.add(name: "Cookie", value: header)
        }
        var options = WebSocketConnection.Options()
        settings.withLock { settings in
            options.maximumMessageSize = settings.maximumMessageSize
            options.compression = settings.compression
        }
        let connection = try await WebSocketConnection.connect(
            through: connector,
            request: .init(url: url, headers: headers, protocols: protocols),
            options: options,
            deadline: deadline
        )
        if request.httpShouldHandleCookies, let cookies = session.transport.cookies, let cookieURL {
            cookies.receive(connection.response.headers, from: cookieURL)
        }
        _ = received(status: connection.response.statusCode, headers: connection.response.headers, request: request)
        return connection
    }

    private func connection() async throws -> WebSocketConnection {
        if let rejection { throw rejection }
        return try await slot.connection()
    }

    private func connectionNow() -> WebSocketConnection? { slot.current }

    /// A task that ends before it connects (cancelled, refused) fails those waiting to use it.
    override func markEnded(error: FerryError?) {
        slot.fail(error ?? FerryError(.notConnected, "the WebSocket task ended before it connected"))
        super.markEnded(error: error)
    }

    static func ferryError(_ error: any Error) -> FerryError {
        error as? FerryError ?? FerryError(.unknown, "\(error)")
    }
}

/// Events of WebSocket tasks (URLSessionWebSocketDelegate).
public protocol WebSocketDelegate: TaskDelegate {
    /// The handshake succeeded; `protocol` is the subprotocol the server chose, if any.
    func session(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) async

    /// A closing handshake ended the connection (either side's): the code and reason sent or received.
    func session(_ session: Session, webSocketTask: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: Data?) async
}

extension WebSocketDelegate {
    public func session(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) async {}
    public func session(_ session: Session, webSocketTask: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: Data?) async {}
}

extension Session {
    /// A WebSocket task for `url` (ws:// or wss://), offering `protocols` (Sec-WebSocket-Protocol).
    public func webSocketTask(with url: URL, protocols: [String] = []) -> WebSocketTask {
        webSocketTask(with: Request(url: url), protocols: protocols)
    }

    /// A WebSocket task for `request`: its URL (ws:// or wss://), header fields and timeout apply to the
    /// opening handshake.
    public func webSocketTask(with request: Request, protocols: [String] = []) -> WebSocketTask {
        register {
            WebSocketTask(
                session: self,
                identifier: $0,
                request: request,
                work: .webSocket(protocols: protocols),
                route: .delegates,
                rejection: $1
            )
        }
    }
}
