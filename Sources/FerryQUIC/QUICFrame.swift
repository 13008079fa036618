/// A QUIC frame (RFC 9000 §19), as a value: what a packet's payload is made of.
public enum QUICFrame: Sendable, Hashable {
    /// Zero bytes: `count` of them in a row (§19.1).
    case padding(count: Int)
    case ping
    /// Acknowledged packet numbers, largest range first, with the sender's ACK delay (in its exponent's
    /// units) and ECN counts when sent as type 0x03 (§19.3).
    case ack(ranges: [ClosedRange<UInt64>], delay: UInt64, ecn: ECNCounts?)
    case resetStream(streamID: UInt64, errorCode: UInt64, finalSize: UInt64)
    case stopSending(streamID: UInt64, errorCode: UInt64)
    /// Handshake bytes at `offset` of the encryption level's crypto stream (§19.6).
    case crypto(offset: UInt64, data: [UInt8])
    case newToken([UInt8])
    /// Stream data at `offset`; `fin` ends the stream (§19.8).
    case stream(streamID: UInt64, offset: UInt64, data: [UInt8], fin: Bool)
    case maxData(UInt64)
    case maxStreamData(streamID: UInt64, maximum: UInt64)
    case maxStreams(bidirectional: Bool, maximum: UInt64)
    case dataBlocked(UInt64)
    case streamDataBlocked(streamID: UInt64, maximum: UInt64)
    case streamsBlocked(bidirectional: Bool, maximum: UInt64)
    case newConnectionID(sequence: UInt64, retirePriorTo: UInt64, connectionID: [UInt8], statelessResetToken: [UInt8])
    case retireConnectionID(sequence: UInt64)
    case pathChallenge([UInt8])
    case pathResponse([UInt8])
    /// An error closing the connection: a transport error (with the frame type that caused it) or, when
    /// `frameType` is nil, the application's (§19.19).
    case connectionClose(errorCode: UInt64, frameType: UInt64?, reason: String)
    case handshakeDone

    /// The ECN counts of an ACK frame of type 0x03.
    public struct ECNCounts: Sendable, Hashable {
        public var ect0: UInt64
        public var ect1: UInt64
        public var ce: UInt64
        public init(ect0: UInt64, ect1: UInt64, ce: UInt64) {
            self.ect0 = ect0
            self.ect1 = ect1
            self.ce = ce
        }
    }

    /// Whether a packet carrying this frame must be acknowledged (§13.2.1): all but ACK, PADDING and
    /// CONNECTION_CLOSE.
    public var isAckEliciting: Bool {
        switch self {
        case .ack, .padding, .connectionClose: false
        default: true
        }
    }
}

// MARK: Encoding

extension QUICFrame {
    /// Appends the frame's bytes to `bytes`.
    public func encode(into bytes: inout [UInt8]) {
        func varint(_ value: UInt64) { QUICVarint.append(value, to: &bytes) }
        switch self {
        case .padding(let count):
            bytes += [UInt8](repeating: 0, count: count)
        case .ping:
            varint(0x01)
        case .ack(let ranges, let delay, let ecn):
            precondition(!ranges.isEmpty, "an ACK frame acknowledges at least one packet")
            varint(ecn == nil ? 0x02 : 0x03)
            varint(ranges[0].upperBound)
            varint(delay)
            varint(UInt64(ranges.count - 1))
            varint(ranges[0].upperBound - ranges[0].lowerBound)
            var smallest = ranges[0].lowerBound
            for range in ranges.dropFirst() {
                // Gap: the unacknowledged packets between, less one; then the range's length, less one.
                varint(smallest - range.upperBound - 2)
                varint(range.upperBound - range.lowerBound)
                smallest = range.lowerBound
            }
            if let ecn {
                varint(ecn.ect0)
                varint(ecn.ect1)
                varint(ecn.ce)
            }
        case .resetStream(let id, let code, let finalSize):
            varint(0x04); varint(id); varint(code); varint(finalSize)
        case .stopSending(let id, let code):
            varint(0x05); varint(id); varint(code)
        case .crypto(let offset, let data):
            varint(0x06); varint(offset); varint(UInt64(data.count)); bytes += data
        case .newToken(let token):
            varint(0x07); varint(UInt64(token.count)); bytes += token
        case .stream(let id, let offset, let data, let fin):
            // Always with its length (so more frames may follow) and, when not zero, its offset.
            varint(0x08 | (offset > 0 ? 0x04 : 0) | 0x02 | (fin ? 0x01 : 0))
            varint(id)
            if offset > 0 { varint(offset) }
            varint(UInt64(data.count))
            bytes += data
        case .maxData(let maximum):
            varint(0x10); varint(maximum)
        case .maxStreamData(let id, let maximum):
            varint(0x11); varint(id); varint(maximum)
        case .maxStreams(let bidirectional, let maximum):
            varint(bidirectional ? 0x12 : 0x13); varint(maximum)
        case .dataBlocked(let maximum):
            varint(0x14); varint(maximum)
        case .streamDataBlocked(let id, let maximum):
            varint(0x15); varint(id); varint(maximum)
        case .streamsBlocked(let bidirectional, let maximum):
            varint(bidirectional ? 0x16 : 0x17); varint(maximum)
        case .newConnectionID(let sequence, let retirePriorTo, let connectionID, let token):
            varint(0x18); varint(sequence); varint(retirePriorTo)
            bytes.append(UInt8(connectionID.count)); bytes += connectionID; bytes += token
        case .retireConnectionID(let sequence):
            varint(0x19); varint(sequence)
        case .pathChallenge(let data):
            varint(0x1a); bytes += data
        case .pathResponse(let data):
            varint(0x1b); bytes += data
        case .connectionClose(let code, let frameType, let reason):
            let phrase = Array(reason.utf8)
            varint(frameType == nil ? 0x1d : 0x1c)
            varint(code)
            if let frameType { varint(frameType) }
            varint(UInt64(phrase.count))
            bytes += phrase
        case .handshakeDone:
            varint(0x1e)
        }
    }

    /// The frame's bytes.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        return bytes
    }
}

// MARK: Decoding

extension QUICFrame {
    /// Every frame of a packet's payload, in order. Throws for an unknown type, a field past the end, or
    /// a value the RFC forbids (a payload must hold at least one frame).
    public static func decodeAll(_ payload: [UInt8]) throws(QUICError) -> [QUICFrame] {
        var reader = QUICReader(payload)
        var frames: [QUICFrame] = []
        while !reader.isAtEnd { frames.append(try decode(&reader)) }
        guard !frames.isEmpty else { throw .malformed("a packet without frames") }
        return frames
    }

    /// The next frame from `reader`.
    public static func decode(_ reader: inout QUICReader) throws(QUICError) -> QUICFrame {
        let type = try reader.readVarint()
        switch type {
        case 0x00:
            var count = 1
            while reader.remaining > 0, reader.bytes[reader.offset] == 0 {
                _ = try reader.readByte()
                count += 1
            }
            return .padding(count: count)
        case 0x01: return .ping
        case 0x02, 0x03: return try decodeAck(&reader, ecn: type == 0x03)
        case 0x04: return .resetStream(streamID: try reader.readVarint(), errorCode: try reader.readVarint(), finalSize: try reader.readVarint())
        case 0x05: return .stopSending(streamID: try reader.readVarint(), errorCode: try reader.readVarint())
        case 0x06:
            let offset = try reader.readVarint()
            let data = try reader.readBytes(try reader.readLength())
            guard offset + UInt64(data.count) <= QUICVarint.maximum else { throw .malformed("CRYPTO data past 2^62 - 1") }
            return .crypto(offset: offset, data: data)
        case 0x07:
            let token = try reader.readBytes(try reader.readLength())
            guard !token.isEmpty else { throw .malformed("an empty NEW_TOKEN") }
            return .newToken(token)
        case 0x08...0x0f: return try decodeStream(&reader, type: type)
        case 0x10: return .maxData(try reader.readVarint())
        case 0x11: return .maxStreamData(streamID: try reader.readVarint(), maximum: try reader.readVarint())
        case 0x12, 0x13:
            let maximum = try reader.readVarint()
            guard maximum <= 1 << 60 else { throw .malformed("MAX_STREAMS above 2^60") }
            return .maxStreams(bidirectional: type == 0x12, maximum: maximum)
        case 0x14: return .dataBlocked(try reader.readVarint())
        case 0x15: return .streamDataBlocked(streamID: try reader.readVarint(), maximum: try reader.readVarint())
        case 0x16, 0x17:
            let maximum = try reader.readVarint()
            guard maximum <= 1 << 60 else { throw .malformed("STREAMS_BLOCKED above 2^60") }
            return .streamsBlocked(bidirectional: type == 0x16, maximum: maximum)
        case 0x18: return try decodeNewConnectionID(&reader)
        case 0x19: return .retireConnectionID(sequence: try reader.readVarint())
        case 0x1a: return .pathChallenge(try reader.readBytes(8))
        case 0x1b: return .pathResponse(try reader.readBytes(8))
        case 0x1c, 0x1d:
            let code = try reader.readVarint()
            let frameType = type == 0x1c ? try reader.readVarint() : nil
            let phrase = try reader.readBytes(try reader.readLength())
            return .connectionClose(errorCode: code, frameType: frameType, reason: String(decoding: phrase, as: UTF8.self))
        case 0x1e: return .handshakeDone
        default: throw .unknownFrame(type)
        }
    }

    /// A CRYPTO or STREAM frame cut in two where its first part takes at most `room` bytes encoded
    /// (the second starts where the first ends); nil for other frames, or when not a byte fits.
    public func split(fitting room: Int) -> (QUICFrame, QUICFrame)? {
        switch self {
        case .crypto(let offset, let data):
            // Type, offset and length take at most 1 + 8 + 8 bytes.
            let take = min(data.count - 1, room - 17)
            guard take > 0 else { return nil }
            return (.crypto(offset: offset, data: Array(data[..<take])), .crypto(offset: offset + UInt64(take), data: Array(data[take...])))
        case .stream(let id, let offset, let data, let fin):
            // Type, stream ID, offset and length take at most 1 + 8 + 8 + 8 bytes.
            let take = min(data.count - 1, room - 25)
            guard take > 0 else { return nil }
            return (
                .stream(streamID: id, offset: offset, data: Array(data[..<take]), fin: false),
                .stream(streamID: id, offset: offset + UInt64(take), data: Array(data[take...]), fin: fin)
            )
        default:
            return nil
        }
    }

    private static func decodeAck(_ reader: inout QUICReader, ecn: Bool) throws(QUICError) -> QUICFrame {
        let largest = try reader.readVarint()
        let delay = try reader.readVarint()
        // Each further range takes at least two bytes: a count beyond that cannot be honest, and is
        // refused before anything is kept for it (a flood of ranges costs only what it sent).
        let count = try reader.readVarint()
        guard count <= UInt64(reader.remaining / 2) else { throw .truncated }
        let first = try reader.readVarint()
        guard first <= largest else { throw .malformed("an ACK range below packet number 0") }
        var ranges = [(largest - first)...largest]
        var smallest = largest - first
        for _ in 0..<count {
            let gap = try reader.readVarint()
            let length = try reader.readVarint()
            guard smallest >= gap + 2, smallest - gap - 2 >= length else { throw .malformed("an ACK range below packet number 0") }
            let upper = smallest - gap - 2
            ranges.append((upper - length)...upper)
            smallest = upper - length
        }
        let counts = ecn ? ECNCounts(ect0: try reader.readVarint(), ect1: try reader.readVarint(), ce: try reader.readVarint()) : nil
        return .ack(ranges: ranges, delay: delay, ecn: counts)
    }

    private static func decodeStream(_ reader: inout QUICReader, type: UInt64) throws(QUICError) -> QUICFrame {
        let id = try reader.readVarint()
        let offset = type & 0x04 != 0 ? try reader.readVarint() : 0
        let length = type & 0x02 != 0 ? try reader.readLength() : reader.remaining
        let data = try reader.readBytes(length)
        guard offset + UInt64(data.count) <= QUICVarint.maximum else { throw .malformed("STREAM data past 2^62 - 1") }
        return .stream(streamID: id, offset: offset, data: data, fin: type & 0x01 != 0)
    }

    private static func decodeNewConnectionID(_ reader: inout QUICReader) throws(QUICError) -> QUICFrame {
        let sequence = try reader.readVarint()
        let retirePriorTo = try reader.readVarint()
        guard retirePriorTo <= sequence else { throw .malformed("NEW_CONNECTION_ID retiring beyond its own sequence") }
        let length = Int(try reader.readByte())
        guard (1...20).contains(length) else { throw .malformed("a connection ID of \(length) bytes") }
        return .newConnectionID(
            sequence: sequence,
            retirePriorTo: retirePriorTo,
            connectionID: try reader.readBytes(length),
            statelessResetToken: try reader.readBytes(16)
        )
    }
}
