public import Foundation

/// One WebSocket message (URLSessionWebSocketTask.Message): text or binary.
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message (UTF-8 on the wire).
    case string(String)
    /// A binary message.
    case data(Data)

    /// The message's bytes as sent on the wire (before compression).
    public var byteCount: Int {
        switch self {
        case .string(let text): text.utf8.count
        case .data(let data): data.count
        }
    }
}
