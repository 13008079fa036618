/// QUIC's transport parameters (RFC 9000 §18): what each side tells the other in its TLS handshake —
/// limits on data and streams, timeouts, connection IDs. Encoded as (id, length, value) triples.
public struct QUICTransportParameters: Sendable, Hashable {
    public var originalDestinationConnectionID: [UInt8]?
    /// Milliseconds; 0: no idle timeout.
    public var maxIdleTimeout: UInt64 = 0
    public var statelessResetToken: [UInt8]?
    public var maxUDPPayloadSize: UInt64 = 65_527
    public var initialMaxData: UInt64 = 0
    public var initialMaxStreamDataBidiLocal: UInt64 = 0
    public var initialMaxStreamDataBidiRemote: UInt64 = 0
    public var initialMaxStreamDataUni: UInt64 = 0
    public var initialMaxStreamsBidi: UInt64 = 0
    public var initialMaxStreamsUni: UInt64 = 0
    public var ackDelayExponent: UInt64 = 3
    /// Milliseconds.
    public var maxAckDelay: UInt64 = 25
    public var disableActiveMigration = false
    /// The server's preferred address, as sent (kept whole; the connection does not use it yet).
    public var preferredAddress: [UInt8]?
    public var activeConnectionIDLimit: UInt64 = 2
    public var initialSourceConnectionID: [UInt8]?
    public var retrySourceConnectionID: [UInt8]?

    public init() {}

    private enum ID: UInt64 {
        case originalDestinationConnectionID = 0x00, maxIdleTimeout, statelessResetToken, maxUDPPayloadSize, initialMaxData,
            initialMaxStreamDataBidiLocal, initialMaxStreamDataBidiRemote, initialMaxStreamDataUni, initialMaxStreamsBidi,
            initialMaxStreamsUni, ackDelayExponent, maxAckDelay, disableActiveMigration, preferredAddress,
            activeConnectionIDLimit, initialSourceConnectionID, retrySourceConnectionID
    }

    /// The parameters' bytes; defaults are left out.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        func add(_ id: ID, _ value: [UInt8]) {
            QUICVarint.append(id.rawValue, to: &bytes)
            QUICVarint.append(UInt64(value.count), to: &bytes)
            bytes += value
        }
        func add(_ id: ID, integer value: UInt64, unless standard: UInt64) {
            if value != standard { add(id, QUICVarint.encode(value)) }
        }
        if let id = originalDestinationConnectionID { add(.originalDestinationConnectionID, id) }
        add(.maxIdleTimeout, integer: maxIdleTimeout, unless: 0)
        if let token = statelessResetToken { add(.statelessResetToken, token) }
        add(.maxUDPPayloadSize, integer: maxUDPPayloadSize, unless: 65_527)
        add(.initialMaxData, integer: initialMaxData, unless: 0)
        add(.initialMaxStreamDataBidiLocal, integer: initialMaxStreamDataBidiLocal, unless: 0)
        add(.initialMaxStreamDataBidiRemote, integer: initialMaxStreamDataBidiRemote, unless: 0)
        add(.initialMaxStreamDataUni, integer: initialMaxStreamDataUni, unless: 0)
        add(.initialMaxStreamsBidi, integer: initialMaxStreamsBidi, unless: 0)
        add(.initialMaxStreamsUni, integer: initialMaxStreamsUni, unless: 0)
        add(.ackDelayExponent, integer: ackDelayExponent, unless: 3)
        add(.maxAckDelay, integer: maxAckDelay, unless: 25)
        if disableActiveMigration { add(.disableActiveMigration, []) }
        if let address = preferredAddress { add(.preferredAddress, address) }
        add(.activeConnectionIDLimit, integer: activeConnectionIDLimit, unless: 2)
        if let id = initialSourceConnectionID { add(.initialSourceConnectionID, id) }
        if let id = retrySourceConnectionID { add(.retrySourceConnectionID, id) }
        return bytes
    }

    /// The parameters in `bytes`; unknown ones (and reserved greasing ones) are skipped. Throws for a
    /// parameter given twice or a value the RFC forbids (TRANSPORT_PARAMETER_ERROR).
    public static func decode(_ bytes: [UInt8]) throws(QUICError) -> QUICTransportParameters {
        var reader = QUICReader(bytes)
        var parameters = QUICTransportParameters()
        var seen = Set<UInt64>()
        while !reader.isAtEnd {
            let id = try reader.readVarint()
            let value = try reader.readBytes(try reader.readLength())
            guard seen.insert(id).inserted else { throw .malformed("transport parameter 0x\(String(id, radix: 16)) given twice") }
            guard let known = ID(rawValue: id) else { continue }
            try parameters.set(known, value)
        }
        return parameters
    }

    private mutating func set(_ id: ID, _ value: [UInt8]) throws(QUICError) {
        func integer() throws(QUICError) -> UInt64 {
            var reader = QUICReader(value)
            let number = try reader.readVarint()
            guard reader.isAtEnd else { throw .malformed("transport parameter \(id) longer than its integer") }
            return number
        }
        func connectionID() throws(QUICError) -> [UInt8] {
            guard value.count <= 20 else { throw .malformed("a connection ID of \(value.count) bytes in \(id)") }
            return value
        }
        switch id {
        case .originalDestinationConnectionID: originalDestinationConnectionID = try connectionID()
        case .maxIdleTimeout: maxIdleTimeout = try integer()
        case .statelessResetToken:
            guard value.count == 16 else { throw .malformed("a stateless reset token of \(value.count) bytes") }
            statelessResetToken = value
        case .maxUDPPayloadSize:
            maxUDPPayloadSize = try integer()
            guard maxUDPPayloadSize >= 1_200 else { throw .malformed("max_udp_payload_size below 1200") }
        case .initialMaxData: initialMaxData = try integer()
        case .initialMaxStreamDataBidiLocal: initialMaxStreamDataBidiLocal = try integer()
        case .initialMaxStreamDataBidiRemote: initialMaxStreamDataBidiRemote = try integer()
        case .initialMaxStreamDataUni: initialMaxStreamDataUni = try integer()
        case .initialMaxStreamsBidi:
            initialMaxStreamsBidi = try integer()
            guard initialMaxStreamsBidi <= 1 << 60 else { throw .malformed("initial_max_streams_bidi above 2^60") }
        case .initialMaxStreamsUni:
            initialMaxStreamsUni = try integer()
            guard initialMaxStreamsUni <= 1 << 60 else { throw .malformed("initial_max_streams_uni above 2^60") }
        case .ackDelayExponent:
            ackDelayExponent = try integer()
            guard ackDelayExponent <= 20 else { throw .malformed("ack_delay_exponent above 20") }
        case .maxAckDelay:
            maxAckDelay = try integer()
            guard maxAckDelay < 1 << 14 else { throw .malformed("max_ack_delay of 2^14 ms or more") }
        case .disableActiveMigration:
            guard value.isEmpty else { throw .malformed("disable_active_migration with a value") }
            disableActiveMigration = true
        case .preferredAddress: preferredAddress = value
        case .activeConnectionIDLimit:
            activeConnectionIDLimit = try integer()
            guard activeConnectionIDLimit >= 2 else { throw .malformed("active_connection_id_limit below 2") }
        case .initialSourceConnectionID: initialSourceConnectionID = try connectionID()
        case .retrySourceConnectionID: retrySourceConnectionID = try connectionID()
        }
    }
}
