import FerryCore
import Foundation
import NIOCore
import NIOWebSocket

/// What one received WebSocket frame asks of the connection (``WebSocketMessageAssembler``).
enum WebSocketInbound: Equatable {
    /// Part of a message; nothing to do yet.
    case none
    /// A whole message.
    case message(WebSocketMessage)
    /// Answer with a pong carrying these bytes.
    case ping(ByteBuffer)
    /// A pong arrived.
    case pong
    /// The peer closes: answer with a close frame and end. `code` nil: its frame had none.
    case close(code: WebSocketCloseCode?, reason: String)
    /// The peer broke the protocol: close with `code` and end, telling the caller `reason`.
    case fail(code: WebSocketCloseCode, reason: String)
}

/// A client's reading of RFC 6455 §5 (and RFC 7692 for compressed messages), frame by frame, as a value:
/// fragments joined into messages, control frames allowed between them, and every breach named with the
/// close code the RFC gives it. No I/O: ``WebSocketChannelHandler`` carries out what it returns.
///
/// The framing itself (lengths, masks, the 64-bit length's top bit) is NIOWebSocket's
/// `WebSocketFrameDecoder`; this is the layer above it, which NIOWebSocket leaves to its users.
struct WebSocketMessageAssembler {
    /// The largest message accepted (after decompression); a larger one is a 1009.
    var maximumMessageSize: Int
    /// The negotiated permessage-deflate, if any.
    var deflate: PerMessageDeflate?

    private var partial: Partial?

    private struct Partial {
        var text: Bool
        var compressed: Bool
        var bytes: ByteBuffer
        /// How far the UTF-8 check has read (text that is not compressed is checked as it arrives).
        var validator = UTF8Validator()
    }

    init(maximumMessageSize: Int, deflate: PerMessageDeflate? = nil) {
        self.maximumMessageSize = maximumMessageSize
        self.deflate = deflate
    }

    mutating func receive(_ frame: WebSocketFrame) -> WebSocketInbound {
        if frame.maskKey != nil {
            return .fail(code: .protocolError, reason: "the server masked a frame (RFC 6455 §5.1 forbids it)")
        }
        if frame.rsv2 || frame.rsv3 {
            return .fail(code: .protocolError, reason: "the server set a reserved bit no extension defines")
        }
        switch frame.opcode {
        case .ping, .pong, .connectionClose:
            if !frame.fin {
                return .fail(code: .protocolError, reason: "the server fragmented a control frame")
            }
            if frame.rsv1 {
                return .fail(code: .protocolError, reason: "the server set RSV1 on a control frame")
            }
            if frame.data.readableBytes > 125 {
                return .fail(code: .protocolError, reason: "the server sent a control frame longer than 125 bytes")
            }
            return control(frame)
        case .text, .binary:
            if partial != nil {
                return .fail(code: .protocolError, reason: "the server began a message inside another's fragments")
            }
            if frame.rsv1 && deflate == nil {
                return .fail(code: .protocolError, reason: "the server compressed a message without permessage-deflate")
            }
            partial = Partial(text: frame.opcode == .text, compressed: frame.rsv1, bytes: ByteBuffer())
            return append(frame)
        case .continuation:
            if partial == nil {
                return .fail(code: .protocolError, reason: "the server continued a message it had not begun")
            }
            if frame.rsv1 {
                return .fail(code: .protocolError, reason: "the server set RSV1 on a continuation frame")
            }
            return append(frame)
        default:
            return .fail(code: .protocolError, reason: "the server used the reserved opcode \(frame.opcode)")
        }
    }

    private mutating func control(_ frame: WebSocketFrame) -> WebSocketInbound {
        switch frame.opcode {
        case .ping:
            return .ping(frame.data)
        case .pong:
            return .pong
        default:
            var data = frame.data
            guard data.readableBytes > 0 else { return .close(code: nil, reason: "") }
            guard data.readableBytes >= 2, let raw = data.readInteger(as: UInt16.self) else {
                return .fail(code: .protocolError, reason: "the server's close frame had a one-byte code")
            }
            let code = WebSocketCloseCode(rawValue: raw)
            guard code.maySend else {
                return .fail(code: .protocolError, reason: "the server closed with the code \(raw), which may not be sent")
            }
            var validator = UTF8Validator()
            guard validator.feed(data.readableBytesView), validator.isComplete,
                let reason = data.readString(length: data.readableBytes)
            else {
                return .fail(code: .invalidFramePayloadData, reason: "the server's close reason is not UTF-8")
            }
            return .close(code: code, reason: reason)
        }
    }

    private mutating func append(_ frame: WebSocketFrame) -> WebSocketInbound {
        guard var current = partial else { return .none }
        partial = nil
        if current.bytes.readableBytes + frame.data.readableBytes > maximumMessageSize {
            return tooBig()
        }
        if current.text && !current.compressed {
            // Invalid UTF-8 fails at once, not after the last fragment (Autobahn 6.4: fail fast).
            guard current.validator.feed(frame.data.readableBytesView) else { return notUTF8() }
        }
        var data = frame.data
        current.bytes.writeBuffer(&data)
        guard frame.fin else {
            partial = current
            return .none
        }
        var bytes = current.bytes
        if current.compressed, let deflate {
            do {
                bytes = try deflate.inflate(bytes, limit: maximumMessageSize)
            } catch PerMessageDeflate.Failure.tooLarge {
                return tooBig()
            } catch {
                return .fail(code: .invalidFramePayloadData, reason: "the server's compressed message does not inflate: \(error)")
            }
            if current.text {
                guard current.validator.feed(bytes.readableBytesView) else { return notUTF8() }
            }
        }
        if current.text {
            guard current.validator.isComplete else { return notUTF8() }
            return .message(.string(bytes.readString(length: bytes.readableBytes) ?? ""))
        }
        return .message(.data(Data(bytes.readableBytesView)))
    }

    private func tooBig() -> WebSocketInbound {
        .fail(
            code: .messageTooBig,
            reason: "the server sent a message over maximumMessageSize (\(maximumMessageSize) bytes); raise it to accept larger ones"
        )
    }

    private func notUTF8() -> WebSocketInbound {
        .fail(code: .invalidFramePayloadData, reason: "the server sent a text message that is not UTF-8")
    }
}

/// An incremental UTF-8 check (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF), fed in
/// pieces that may split a character.
struct UTF8Validator {
    /// Bytes still owed by the character being read.
    private var needed = 0
    /// The allowed range of the next continuation byte (narrower right after some lead bytes).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether everything fed ends on a character boundary.
    var isComplete: Bool { needed == 0 }

    /// Reads `bytes`; false at the first byte that cannot be UTF-8 here.
    mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Bool {
        for byte in bytes {
            if needed == 0 {
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: needed = 1
                case 0xE0: needed = 2; lower = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: needed = 2
                case 0xED: needed = 2; upper = 0x9F
                case 0xF0: needed = 3; lower = 0x90
                case 0xF1...0xF3: needed = 3
                case 0xF4: needed = 3; upper = 0x8F
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else { return false }
                lower = 0x80
                upper = 0xBF
                needed -= 1
            }
        }
        return true
    }
}
