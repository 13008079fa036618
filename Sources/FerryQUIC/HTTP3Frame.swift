/// HTTP/3 frames (RFC 9114 §7.2) as they travel on a stream: a type and a length, both varints.
public enum HTTP3Frame: Sendable, Hashable {
    case data([UInt8])
    case headers([UInt8])
    case settings([(UInt64, UInt64)])
    case goAway(UInt64)
    /// Any other type (reserved, PUSH_PROMISE, ...), kept whole; unknown types are ignored (§9).
    case other(type: UInt64, payload: [UInt8])

    /// What a client's control stream opens with (RFC 9114 §6.2.1): its type (0x00) and SETTINGS with
    /// no dynamic QPACK table (capacity 0, no blocked streams), so nothing ever waits on an encoder
    /// stream.
    public static let clientControlStreamOpening: [UInt8] = [0x00] + HTTP3Frame.settings([(0x01, 0), (0x07, 0)]).encoded

    /// A client's control stream opening that offers the server a QPACK dynamic table of `decoder`'s
    /// capacity and blocked streams, and says the largest field section it takes
    /// (SETTINGS_MAX_FIELD_SECTION_SIZE, 0x06).
    public static func clientControlStreamOpening(for decoder: QPACKDecoder) -> [UInt8] {
        let settings: [(UInt64, UInt64)] = [
            (0x01, UInt64(decoder.maximumCapacity)), (0x06, UInt64(decoder.maximumFieldSectionSize)),
            (0x07, UInt64(decoder.maximumBlockedStreams)),
        ]
        return [0x00] + HTTP3Frame.settings(settings).encoded
    }

    public static func == (lhs: HTTP3Frame, rhs: HTTP3Frame) -> Bool { lhs.encoded == rhs.encoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(encoded) }

    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        func frame(_ type: UInt64, _ payload: [UInt8]) {
            QUICVarint.append(type, to: &bytes)
            QUICVarint.append(UInt64(payload.count), to: &bytes)
            bytes += payload
        }
        switch self {
        case .data(let payload): frame(0x00, payload)
        case .headers(let payload): frame(0x01, payload)
        case .settings(let settings):
            var payload: [UInt8] = []
            for (id, value) in settings {
                QUICVarint.append(id, to: &payload)
                QUICVarint.append(value, to: &payload)
            }
            frame(0x04, payload)
        case .goAway(let id): frame(0x07, QUICVarint.encode(id))
        case .other(let type, let payload): frame(type, payload)
        }
        return bytes
    }

    /// Why a frame of `type` may not arrive on a request stream, with the HTTP/3 error code the
    /// connection closes with (RFC 9114 §7.2): CANCEL_PUSH, SETTINGS, GOAWAY and MAX_PUSH_ID belong to
    /// the control stream, HTTP/2's own types have no HTTP/3 meaning, and PUSH_PROMISE names a push
    /// this side never allowed (it sends no MAX_PUSH_ID). Nil for a frame a response may carry
    /// (unknown types are skipped, §9).
    public static func violationOnRequestStream(type: UInt64) -> (code: UInt64, words: String)? {
        switch type {
        case 0x03, 0x04, 0x07, 0x0d:
            let name = [0x03: "CANCEL_PUSH", 0x04: "SETTINGS", 0x07: "GOAWAY", 0x0d: "MAX_PUSH_ID"][type]!
            return (0x105, "the server sent a \(name) frame on a request stream (H3_FRAME_UNEXPECTED)")
        case 0x02, 0x06, 0x08, 0x09:
            return (0x105, "the server sent HTTP/2's frame type 0x\(String(type, radix: 16)), reserved in HTTP/3 (H3_FRAME_UNEXPECTED)")
        case 0x05:
            return (0x108, "the server sent a PUSH_PROMISE, though this side allowed no push (H3_ID_ERROR)")
        default:
            return nil
        }
    }

    /// The complete frames at the start of `bytes`, and how many bytes they took (a frame cut short
    /// waits for more). A frame longer than `maximumPayload` is refused (H3_EXCESSIVE_LOAD) rather than
    /// buffered, except DATA, whose payload is body.
    public static func parse(_ bytes: [UInt8], maximumPayload: Int = 64 << 10) throws(QUICError) -> (frames: [HTTP3Frame], consumed: Int) {
        var reader = QUICReader(bytes)
        var frames: [HTTP3Frame] = []
        var consumed = 0
        while !reader.isAtEnd {
            guard let type = try? reader.readVarint(), let length = try? reader.readVarint() else { break }
            guard type == 0x00 || length <= UInt64(maximumPayload) else { throw .malformed("an HTTP/3 frame of \(length) bytes") }
            guard length <= UInt64(reader.remaining) else { break }
            let payload = try reader.readBytes(Int(length))
            switch type {
            case 0x00: frames.append(.data(payload))
            case 0x01: frames.append(.headers(payload))
            case 0x04:
                var settings: [(UInt64, UInt64)] = []
                var inner = QUICReader(payload)
                while !inner.isAtEnd { settings.append((try inner.readVarint(), try inner.readVarint())) }
                frames.append(.settings(settings))
            case 0x07:
                var inner = QUICReader(payload)
                frames.append(.goAway(try inner.readVarint()))
            default: frames.append(.other(type: type, payload: payload))
            }
            consumed = reader.offset
        }
        return (frames, consumed)
    }
}
