import FerryQUIC
import Testing

/// RFC 9001 Appendix A: the Initial keys of one Destination Connection ID, the client's and the
/// server's first packets protected with them, a Retry's integrity tag, and a short-header packet
/// under ChaCha20-Poly1305, byte for byte.
@Suite struct QUICPacketProtectionTests {
    static let destinationConnectionID = hex("8394c8f03e515708")

    @Test func initialKeysFromTheConnectionID() {
        let secrets = QUICInitialSecrets(destinationConnectionID: Self.destinationConnectionID)
        #expect(secrets.client.secret == hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"))
        #expect(secrets.client.key == hex("1f369613dd76d5467730efcbe3b1a22d"))
        #expect(secrets.client.iv == hex("fa044b2f42a3fd3b46fb255c"))
        #expect(secrets.client.headerProtectionKey == hex("9f50449e04a0e810283a1e9933adedd2"))
        #expect(secrets.server.secret == hex("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b"))
        #expect(secrets.server.key == hex("cf3a5331653c364c88f0f379b6067e37"))
        #expect(secrets.server.iv == hex("0ac1493ca1905853b0bba03e"))
        #expect(secrets.server.headerProtectionKey == hex("c206b8d9b9f0f37644430b490eeaa314"))
    }

    /// Appendix A.2: the client's Initial, a CRYPTO frame with the ClientHello padded to 1,162 bytes.
    static let clientHeader = hex("c300000001088394c8f03e5157080000449e00000002")
    static let clientPayload =
        hex(
            """
            060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868
            04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578
            616d706c652e636f6dff01000100000a00080006001d00170018001000070005
            04616c706e000500050100000000003300260024001d00209370b2c9caa47fba
            baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400
            0d0010000e0403050306030203080408050806002d00020101001c0002400100
            3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000
            75300901100f088394c8f03e51570806048000ffff
            """
        ) + [UInt8](repeating: 0, count: 917)

    @Test func theClientsInitialIsProtectedAsTheRFCShows() throws {
        let protection = QUICPacketProtection(keys: QUICInitialSecrets(destinationConnectionID: Self.destinationConnectionID).client)
        let packet = try protection.protect(header: Self.clientHeader, payload: Self.clientPayload, packetNumber: 2, packetNumberLength: 4)
        #expect(packet.count == 1200)
        #expect(hexString(Array(packet.prefix(48))) == "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8bab936b47d92ec356c")
        #expect(hexString(Array(packet.suffix(16))) == "e221af44860018ab0856972e194cd934")
        let opened = try protection.unprotect(packet, packetNumberOffset: 18, largestReceived: nil)
        #expect(opened.header == Self.clientHeader)
        #expect(opened.payload == Self.clientPayload)
        #expect(opened.packetNumber == 2 && opened.packetNumberLength == 4)
    }

    /// Appendix A.3: the server's Initial, an ACK and a CRYPTO frame with the ServerHello.
    @Test func theServersInitialIsProtectedAsTheRFCShows() throws {
        let header = hex("c1000000010008f067a5502a4262b50040750001")
        let payload = hex(
            """
            02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739
            88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94
            0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00
            020304
            """
        )
        let expected = hex(
            """
            cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a
            5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3
            dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84
            022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4
            2158407dd074ee
            """
        )
        let protection = QUICPacketProtection(keys: QUICInitialSecrets(destinationConnectionID: Self.destinationConnectionID).server)
        #expect(try protection.protect(header: header, payload: payload, packetNumber: 1, packetNumberLength: 2) == expected)
        let opened = try protection.unprotect(expected, packetNumberOffset: 18, largestReceived: nil)
        #expect(opened.payload == payload && opened.packetNumber == 1)
    }

    /// Appendix A.4: a Retry's integrity tag.
    @Test func aRetrysIntegrityTag() throws {
        let retry = hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba")
        #expect(try QUICRetry.integrityTag(Array(retry.dropLast(16)), originalDestinationConnectionID: Self.destinationConnectionID) == Array(retry.suffix(16)))
        #expect(QUICRetry.isValid(retry, originalDestinationConnectionID: Self.destinationConnectionID))
        #expect(!QUICRetry.isValid(retry, originalDestinationConnectionID: hex("8394c8f03e515709")))
    }

    /// Appendix A.5: a short-header packet under ChaCha20-Poly1305, its keys, and the next key phase's
    /// secret.
    @Test func aShortHeaderPacketUnderChaCha20() throws {
        let keys = QUICKeys(secret: hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"), suite: .chacha20Poly1305)
        #expect(keys.key == hex("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8"))
        #expect(keys.iv == hex("e0459b3474bdd0e44a41c144"))
        #expect(keys.headerProtectionKey == hex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"))
        #expect(keys.updated().secret == hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9"))
        #expect(keys.updated().headerProtectionKey == keys.headerProtectionKey)
        let protection = QUICPacketProtection(keys: keys)
        let expected = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb")
        #expect(try protection.protect(header: hex("4200bff4"), payload: hex("01"), packetNumber: 654_360_564, packetNumberLength: 3) == expected)
        let opened = try protection.unprotect(expected, packetNumberOffset: 1, largestReceived: 654_360_563)
        #expect(opened.header == hex("4200bff4") && opened.payload == hex("01") && opened.packetNumber == 654_360_564)
    }

    /// A changed byte anywhere, or another connection's keys: refused, nothing returned.
    @Test func aTamperedPacketDoesNotOpen() throws {
        let secrets = QUICInitialSecrets(destinationConnectionID: Self.destinationConnectionID)
        let packet = try QUICPacketProtection(keys: secrets.client).protect(
            header: Self.clientHeader, payload: Self.clientPayload, packetNumber: 2, packetNumberLength: 4
        )
        for index in [0, 5, 18, 40, 600, 1199] {
            var changed = packet
            changed[index] ^= 0x01
            #expect(throws: QUICError.decryptionFailed) {
                _ = try QUICPacketProtection(keys: secrets.client).unprotect(changed, packetNumberOffset: 18, largestReceived: nil)
            }
        }
        #expect(throws: QUICError.decryptionFailed) {
            _ = try QUICPacketProtection(keys: secrets.server).unprotect(packet, packetNumberOffset: 18, largestReceived: nil)
        }
    }
}
