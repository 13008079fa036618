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
