/// The unprotected parts of a QUIC packet's header (RFC 9000 §17): enough to find its keys, its
/// packet number and where it ends in a datagram that may carry several.
public struct QUICPacketHeader: Sendable, Hashable {
    /// The packet's kind: the long header's four, and the short header's 1-RTT.
    public enum Kind: Sendable, Hashable {
        case initial
        case zeroRTT
        case handshake
        case retry
        case versionNegotiation
        case oneRTT
    }

    public var kind: Kind
    public var version: UInt32
    public var destinationConnectionID: [UInt8]
    public var sourceConnectionID: [UInt8]
    /// An Initial's token, or a Retry's.
    public var token: [UInt8]
    /// Where the (protected) packet number starts, from the packet's first byte.
    public var packetNumberOffset: Int
    /// The packet's length in the datagram, from its first byte.
    public var packetLength: Int
    /// The versions a Version Negotiation packet lists.
    public var supportedVersions: [UInt32] = []

    /// The encryption level of a packet of this kind; nil for Retry and Version Negotiation.
    public var level: QUICEncryptionLevel? {
        switch kind {
        case .initial: .initial
        case .zeroRTT: .earlyData
        case .handshake: .handshake
        case .oneRTT: .application
        case .retry, .versionNegotiation: nil
        }
    }

    /// Parses the header of the packet at `offset` in `datagram`. A short header's connection ID has no
    /// length on the wire: `shortConnectionIDLength` is the length this endpoint chose for its own.
    public static func parse(_ datagram: [UInt8], at offset: Int = 0, shortConnectionIDLength: Int) throws(QUICError) -> QUICPacketHeader {
        var reader = QUICReader(datagram, offset: offset)
        let first = try reader.readByte()
        guard first & 0x80 != 0 else {
            // Short header: the fixed bit, then the destination connection ID; the rest is the packet.
            guard first & 0x40 != 0 else { throw .malformed("a short header without its fixed bit") }
            let id = try reader.readBytes(shortConnectionIDLength)
            return QUICPacketHeader(
                kind: .oneRTT, version: 1, destinationConnectionID: id, sourceConnectionID: [], token: [],
                packetNumberOffset: reader.offset - offset, packetLength: datagram.count - offset
            )
        }
        let version = UInt32(try reader.readInteger(bytes: 4))
        let destination = try readConnectionID(&reader)
        let source = try readConnectionID(&reader)
        if version == 0 {
            var versions: [UInt32] = []
            while reader.remaining >= 4 { versions.append(UInt32(try reader.readInteger(bytes: 4))) }
            return QUICPacketHeader(
                kind: .versionNegotiation, version: 0, destinationConnectionID: destination, sourceConnectionID: source, token: [],
                packetNumberOffset: 0, packetLength: datagram.count - offset, supportedVersions: versions
            )
        }
        guard version == 1 else { throw .malformed("QUIC version 0x\(String(version, radix: 16)), not 1") }
        guard first & 0x40 != 0 else { throw .malformed("a long header without its fixed bit") }
        let kinds: [Kind] = [.initial, .zeroRTT, .handshake, .retry]
        let kind = kinds[Int((first >> 4) & 0x03)]
        if kind == .retry {
            guard reader.remaining >= 16 else { throw .truncated }
            let token = try reader.readBytes(reader.remaining - 16)
            return QUICPacketHeader(
                kind: .retry, version: version, destinationConnectionID: destination, sourceConnectionID: source, token: token,
                packetNumberOffset: 0, packetLength: datagram.count - offset
            )
        }
        let token = kind == .initial ? try reader.readBytes(try reader.readLength()) : []
        let length = try reader.readLength()
        return QUICPacketHeader(
            kind: kind, version: version, destinationConnectionID: destination, sourceConnectionID: source, token: token,
            packetNumberOffset: reader.offset - offset, packetLength: reader.offset - offset + length
        )
    }

    private static func readConnectionID(_ reader: inout QUICReader) throws(QUICError) -> [UInt8] {
        let length = Int(try reader.readByte())
        guard length <= 20 else { throw .malformed("a connection ID of \(length) bytes") }
        return try reader.readBytes(length)
    }

    /// A long header for `kind` (Initial, 0-RTT or Handshake) up to and including its truncated packet
    /// number, its Length field written in 2 bytes for a payload of `payloadLength` bytes (the AEAD
    /// tag included).
    public static func long(
        _ kind: Kind,
        destination: [UInt8],
        source: [UInt8],
        token: [UInt8] = [],
        packetNumber: UInt64,
        packetNumberLength: Int,
        payloadLength: Int
    ) -> [UInt8] {
        let type: UInt8 =
            switch kind {
            case .initial: 0x00
            case .zeroRTT: 0x01
            case .handshake: 0x02
            default: 0x03
            }
        var bytes: [UInt8] = [0xC0 | type << 4 | UInt8(packetNumberLength - 1), 0, 0, 0, 1]
        bytes.append(UInt8(destination.count))
        bytes += destination
        bytes.append(UInt8(source.count))
        bytes += source
        if kind == .initial {
            QUICVarint.append(UInt64(token.count), to: &bytes)
            bytes += token
        }
        QUICVarint.append(UInt64(packetNumberLength + payloadLength), to: &bytes, length: 2)
        appendPacketNumber(packetNumber, length: packetNumberLength, to: &bytes)
        return bytes
    }

    /// A short (1-RTT) header up to and including its truncated packet number.
    public static func short(destination: [UInt8], packetNumber: UInt64, packetNumberLength: Int, keyPhase: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = [0x40 | (keyPhase ? 0x04 : 0) | UInt8(packetNumberLength - 1)]
        bytes += destination
        appendPacketNumber(packetNumber, length: packetNumberLength, to: &bytes)
        return bytes
    }

    private static func appendPacketNumber(_ number: UInt64, length: Int, to bytes: inout [UInt8]) {
        for index in stride(from: length - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: number >> (UInt64(index) * 8))) }
    }
}
