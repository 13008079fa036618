/// The frames of one HTTP/3 request stream as its bytes arrive (RFC 9114 §7.1): a DATA frame's payload
/// is handed on as it comes, piece by piece, however long the frame (a server may send a whole body as
/// one DATA frame); any other frame is collected whole, up to `maximumPayload` bytes.
public struct HTTP3StreamReader: Sendable {
    /// What the bytes held.
    public enum Part: Sendable, Hashable {
        /// A complete HEADERS frame's field section.
        case headers([UInt8])
        /// Body bytes of a DATA frame (a part of one, possibly).
        case data([UInt8])
        /// Another complete frame (ignored by a request stream's reader, RFC 9114 §9).
        case other(type: UInt64, payload: [UInt8])
    }

    private enum State: Sendable {
        /// Reading a frame's type and length.
        case header([UInt8])
        /// Inside a DATA frame with this many payload bytes to come.
        case data(remaining: UInt64)
        /// Collecting another frame's payload.
        case collecting(type: UInt64, length: Int, payload: [UInt8])
    }

    private var state = State.header([])
    public let maximumPayload: Int

    public init(maximumPayload: Int = 64 << 10) {
        self.maximumPayload = maximumPayload
    }

    /// Whether the bytes so far end on a frame boundary (a stream may end only there).
    public var isAtFrameBoundary: Bool {
        if case .header(let bytes) = state { return bytes.isEmpty }
        return false
    }

    /// The parts `bytes` complete, in order. Throws for a frame longer than `maximumPayload` (other
    /// than DATA).
    public mutating func feed(_ bytes: [UInt8]) throws(QUICError) -> [Part] {
        var parts: [Part] = []
        var index = 0
        while index < bytes.count {
            switch state {
            case .data(let remaining):
                let take = min(UInt64(bytes.count - index), remaining)
                parts.append(.data(Array(bytes[index..<(index + Int(take))])))
                index += Int(take)
                state = take == remaining ? .header([]) : .data(remaining: remaining - take)
            case .collecting(let type, let length, var payload):
                let take = min(bytes.count - index, length - payload.count)
                payload += bytes[index..<(index + take)]
                index += take
                if payload.count == length {
                    parts.append(type == 0x01 ? .headers(payload) : .other(type: type, payload: payload))
                    state = .header([])
                } else {
                    state = .collecting(type: type, length: length, payload: payload)
                }
            case .header(var header):
                header.append(bytes[index])
                index += 1
                // Both varints complete? (their first bytes say their lengths)
                var reader = QUICReader(header)
                guard let type = try? reader.readVarint(), let length = try? reader.readVarint() else {
                    state = .header(header)
                    continue
                }
                if type == 0x00 {
                    state = length == 0 ? .header([]) : .data(remaining: length)
                } else {
                    guard length <= UInt64(maximumPayload) else { throw .malformed("an HTTP/3 frame of \(length) bytes") }
                    if length == 0 {
                        parts.append(type == 0x01 ? .headers([]) : .other(type: type, payload: []))
                        state = .header([])
                    } else {
                        state = .collecting(type: type, length: Int(length), payload: [])
                    }
                }
            }
        }
        return parts
    }
}
