/// Reads QUIC's wire formats from bytes: big-endian integers, varints and runs of bytes, each failing
/// with ``QUICError/truncated`` instead of reading past the end.
public struct QUICReader: Sendable {
    public let bytes: [UInt8]
    /// Where the next read starts.
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// Bytes left to read.
    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    public mutating func readByte() throws(QUICError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A big-endian integer of `count` bytes (1 to 8).
    public mutating func readInteger(bytes count: Int) throws(QUICError) -> UInt64 {
        guard count <= remaining else { throw .truncated }
        var value: UInt64 = 0
        for index in offset..<(offset + count) { value = value << 8 | UInt64(bytes[index]) }
        offset += count
        return value
    }

    /// A varint (RFC 9000 §16).
    public mutating func readVarint() throws(QUICError) -> UInt64 {
        let first = try readByte()
        let length = 1 << Int(first >> 6)
        var value = UInt64(first & 0x3F)
        guard length - 1 <= remaining else { throw .truncated }
        for _ in 1..<length { value = value << 8 | UInt64(bytes[offset]); offset += 1 }
        return value
    }

    /// A varint used as a length or count, bounded by what is left to read (a peer's 2^62 is refused
    /// before anything is allocated for it).
    public mutating func readLength() throws(QUICError) -> Int {
        let value = try readVarint()
        guard value <= UInt64(remaining) else { throw .truncated }
        return Int(value)
    }

    public mutating func readBytes(_ count: Int) throws(QUICError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw .truncated }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// The rest of the bytes.
    public mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

/// What QUIC's codecs refuse.
public enum QUICError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes end before the field does.
    case truncated
    /// A frame type this endpoint does not know (FRAME_ENCODING_ERROR, RFC 9000 §12.4).
    case unknownFrame(UInt64)
    /// A field whose value the RFC forbids, in words.
    case malformed(String)
    /// Packet protection could not be removed: the packet was not sent with these keys, or was changed.
    case decryptionFailed

    public var description: String {
        switch self {
        case .truncated: "the QUIC bytes end in the middle of a field"
        case .unknownFrame(let type): "an unknown QUIC frame type 0x\(String(type, radix: 16))"
        case .malformed(let what): "a malformed QUIC field: \(what)"
        case .decryptionFailed: "a QUIC packet whose protection does not open with these keys"
        }
    }
}
