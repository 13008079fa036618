import FerryQUIC
import FerryTestServer
import Testing

/// TLS 1.3 through BoringSSL's QUIC interface, a client and a server in memory: handshake bytes carried
/// level by level as CRYPTO frames would carry them, the same keys on both sides of each level, ALPN and
/// transport parameters exchanged, and a chain the client's judge refuses ends the handshake.
@Suite struct QUICTLSTests {
    /// A client and a server handshake, each one's bytes handed to the other until neither has more.
    struct Pair {
        let client: QUICTLS
        let server: QUICTLS
        var clientEvents: [QUICTLS.Event] = []
        var serverEvents: [QUICTLS.Event] = []

        mutating func run() throws {
            var toServer = try client.start()
            clientEvents += toServer
            var rounds = 0
            while rounds < 10 {
                rounds += 1
                var toClient: [QUICTLS.Event] = []
                for case .send(let level, let bytes) in toServer { toClient += try server.receive(bytes, at: level) }
                serverEvents += toClient
                toServer = []
                for case .send(let level, let bytes) in toClient { toServer += try client.receive(bytes, at: level) }
                clientEvents += toServer
                if !toServer.contains(where: { if case .send = $0 { true } else { false } }) { break }
            }
        }
    }

    static func parameters(_ id: UInt8) -> QUICTransportParameters {
        var parameters = QUICTransportParameters()
        parameters.initialMaxData = 1 << 20
        parameters.initialMaxStreamsBidi = 100
        parameters.initialSourceConnectionID = [id, id, id, id]
        return parameters
    }

    static func pair(accept: Bool = true, serverProtocols: [String] = ["h3"]) throws -> (Pair, [[[UInt8]]]) {
        let certificates = try TestCertificates.generate()
        var clientConfiguration = QUICTLS.Configuration(
            isClient: true, serverName: "localhost", applicationProtocols: ["h3"], transportParameters: parameters(1).encoded()
        )
        let seen = ChainBox()
        clientConfiguration.verify = { chain in
            seen.chains.append(chain)
            return accept
        }
        var serverConfiguration = QUICTLS.Configuration(isClient: false, applicationProtocols: serverProtocols, transportParameters: parameters(2).encoded())
        serverConfiguration.certificateChainPEM = certificates.chainPEM
        serverConfiguration.privateKeyPEM = certificates.privateKeyPEM
        return (Pair(client: try QUICTLS(clientConfiguration), server: try QUICTLS(serverConfiguration)), [])
    }

    final class ChainBox: @unchecked Sendable { var chains: [[[UInt8]]] = [] }

    @Test func bothSidesReachTheSameKeysLevelByLevel() throws {
        var (pair, _) = try Self.pair()
        try pair.run()
        #expect(pair.client.isComplete && pair.server.isComplete)
        #expect(pair.clientEvents.contains(.handshakeComplete) && pair.serverEvents.contains(.handshakeComplete))
        for level in [QUICEncryptionLevel.handshake, .application] {
            let clientWrite = pair.clientEvents.compactMap { if case .writeKeys(level, let keys) = $0 { keys } else { nil } }.first
            let serverRead = pair.serverEvents.compactMap { if case .readKeys(level, let keys) = $0 { keys } else { nil } }.first
            let serverWrite = pair.serverEvents.compactMap { if case .writeKeys(level, let keys) = $0 { keys } else { nil } }.first
            let clientRead = pair.clientEvents.compactMap { if case .readKeys(level, let keys) = $0 { keys } else { nil } }.first
            #expect(clientWrite != nil && clientWrite == serverRead, "\(level)")
            #expect(serverWrite != nil && serverWrite == clientRead, "\(level)")
            #expect(clientWrite != serverWrite)
        }
        #expect(pair.client.applicationProtocol == "h3" && pair.server.applicationProtocol == "h3")
        #expect(try pair.client.peerTransportParameters.map(QUICTransportParameters.decode) == Self.parameters(2))
        #expect(try pair.server.peerTransportParameters.map(QUICTransportParameters.decode) == Self.parameters(1))
        // The client's first flight is its ClientHello alone, at the Initial level.
        guard case .send(.initial, let hello)? = pair.clientEvents.first else { Issue.record("\(pair.clientEvents.first as Any)"); return }
        #expect(hello.first == 0x01)
    }

    @Test func aChainTheClientsJudgeRefusesEndsTheHandshake() throws {
        var (pair, _) = try Self.pair(accept: false)
        #expect(throws: QUICError.self) { try pair.run() }
        #expect(!pair.client.isComplete)
        #expect(pair.client.alert == 42)  // bad_certificate
    }

    @Test func noCommonApplicationProtocolEndsTheHandshake() throws {
        var (pair, _) = try Self.pair(serverProtocols: ["hq-interop"])
        #expect(throws: QUICError.self) { try pair.run() }
        #expect(!pair.client.isComplete && !pair.server.isComplete)
    }
}

/// Transport parameters (RFC 9000 §18) through their codec, and the values the RFC forbids.
@Suite struct QUICTransportParametersTests {
    @Test func aRoundTripKeepsEveryValue() throws {
        var parameters = QUICTransportParameters()
        parameters.originalDestinationConnectionID = [1, 2, 3]
        parameters.maxIdleTimeout = 30_000
        parameters.statelessResetToken = Array(0..<16)
        parameters.maxUDPPayloadSize = 1_452
        parameters.initialMaxData = 1 << 24
        parameters.initialMaxStreamDataBidiLocal = 1 << 20
        parameters.initialMaxStreamDataBidiRemote = 1 << 21
        parameters.initialMaxStreamDataUni = 1 << 19
        parameters.initialMaxStreamsBidi = 128
        parameters.initialMaxStreamsUni = 3
        parameters.ackDelayExponent = 8
        parameters.maxAckDelay = 40
        parameters.disableActiveMigration = true
        parameters.activeConnectionIDLimit = 4
        parameters.initialSourceConnectionID = [9]
        parameters.retrySourceConnectionID = [8, 8]
        #expect(try QUICTransportParameters.decode(parameters.encoded()) == parameters)
        // Unknown (greasing) parameters are skipped.
        #expect(try QUICTransportParameters.decode(hex("1b 02 abcd") + parameters.encoded()) == parameters)
    }

    @Test(arguments: [
        ("01 01 05 01 01 06", "given twice"), ("03 02 4400", "max_udp_payload_size below 1200"), ("0a 01 15", "ack_delay_exponent above 20"),
        ("0e 01 01", "active_connection_id_limit below 2"), ("02 03 010203", "stateless reset token of 3 bytes"),
        ("0c 01 00", "disable_active_migration with a value"), ("0f 15" + String(repeating: "00", count: 21), "21 bytes"),
    ])
    func forbiddenValuesAreRefused(bytes: String, words: String) {
        #expect { _ = try QUICTransportParameters.decode(hex(bytes)) } throws: { "\($0)".contains(words) }
    }
}
