/// A WebSocket close code (RFC 6455 §7.4; URLSessionWebSocketTask.CloseCode). A struct rather than an
/// enum: applications use their own codes, 4000–4999, and libraries theirs, 3000–3999.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// No code (Apple's `.invalid`): none was sent or received.
    public static let invalid = WebSocketCloseCode(rawValue: 0)
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// Reported, never sent: the close frame had no code.
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// Reported, never sent: the connection ended without a close frame.
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let mandatoryExtensionMissing = WebSocketCloseCode(rawValue: 1010)
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)
    /// Reported, never sent: the TLS handshake failed.
    public static let tlsHandshakeFailure = WebSocketCloseCode(rawValue: 1015)

    /// Whether the code may travel in a close frame (RFC 6455 §7.4.1–2: 1000–1003, 1007–1014,
    /// 3000–4999). 1004–1006 and 1015 are reserved; 1012–1014 were registered later (IANA).
    public var maySend: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String {
        switch rawValue {
        case 1000: "1000 (normal closure)"
        case 1001: "1001 (going away)"
        case 1002: "1002 (protocol error)"
        case 1003: "1003 (unsupported data)"
        case 1005: "1005 (no status received)"
        case 1006: "1006 (abnormal closure)"
        case 1007: "1007 (invalid payload data)"
        case 1008: "1008 (policy violation)"
        case 1009: "1009 (message too big)"
        case 1010: "1010 (mandatory extension missing)"
        case 1011: "1011 (internal server error)"
        case 1015: "1015 (TLS handshake failure)"
        default: "\(rawValue)"
        }
    }
}
