import FerryQUIC
import Testing

/// QUIC frames (RFC 9000 §19): the RFC 9001 examples' payloads decode to the frames they hold, every
/// frame type survives a round trip, and what a hostile peer sends is refused without being kept.
@Suite struct QUICFrameTests {
    @Test func theRFCsInitialPayloadsDecode() throws {
        let client = try QUICFrame.decodeAll(QUICPacketProtectionTests.clientPayload)
        #expect(client.count == 2)
        guard case .crypto(let offset, let hello) = client[0] else { Issue.record("\(client[0])"); return }
        #expect(offset == 0 && hello.count == 241 && hello.first == 0x01)  // a ClientHello
        #expect(client[1] == .padding(count: 917))

        let server = try QUICFrame.decodeAll(hex("02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
            + "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
            + "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304"))
        #expect(server.first == .ack(ranges: [0...0], delay: 0, ecn: nil))
        guard case .crypto(0, let serverHello) = server[1] else { Issue.record("\(server)"); return }
        #expect(serverHello.count == 90 && serverHello.first == 0x02)  // a ServerHello
    }

    static let everyKind: [QUICFrame] = [
        .padding(count: 3), .ping,
        .ack(ranges: [90...100, 50...80, 7...7, 0...2], delay: 25, ecn: nil),
        .ack(ranges: [1_000_000...1_000_000], delay: 0, ecn: .init(ect0: 5, ect1: 0, ce: 1)),
        .resetStream(streamID: 4, errorCode: 0x10c, finalSize: 12_345), .stopSending(streamID: 8, errorCode: 0x10b),
        .crypto(offset: 1_500, data: [1, 2, 3]), .newToken([9, 9, 9]),
        .stream(streamID: 0, offset: 0, data: Array("GET /".utf8), fin: false),
        .stream(streamID: 4, offset: 70_000, data: [], fin: true),
        .maxData(1 << 30), .maxStreamData(streamID: 4, maximum: 1 << 24), .maxStreams(bidirectional: true, maximum: 100),
        .maxStreams(bidirectional: false, maximum: 3), .dataBlocked(12), .streamDataBlocked(streamID: 8, maximum: 9),
        .streamsBlocked(bidirectional: false, maximum: 7),
        .newConnectionID(sequence: 3, retirePriorTo: 1, connectionID: [1, 2, 3, 4, 5, 6, 7, 8], statelessResetToken: Array(0..<16)),
        .retireConnectionID(sequence: 2), .pathChallenge(Array(10..<18)), .pathResponse(Array(10..<18)),
        .connectionClose(errorCode: 0x0a, frameType: 0x08, reason: "protocol violation"),
        .connectionClose(errorCode: 0x100, frameType: nil, reason: ""), .handshakeDone,
    ]

    @Test func everyFrameSurvivesARoundTrip() throws {
        var payload: [UInt8] = []
        for frame in Self.everyKind { frame.encode(into: &payload) }
        #expect(try QUICFrame.decodeAll(payload) == Self.everyKind)
        #expect(!QUICFrame.ack(ranges: [0...0], delay: 0, ecn: nil).isAckEliciting && QUICFrame.ping.isAckEliciting)
    }

    @Test(arguments: [
        ("02 05 00 ffffffffffffffff 00", QUICError.truncated),  // 2^62 ranges announced, none there
        ("02 05 00 00 06", QUICError.malformed("an ACK range below packet number 0")),  // first range past 0
        ("02 05 00 01 02 03 00", QUICError.malformed("an ACK range below packet number 0")),  // a gap past 0
        ("18 01 00 00", QUICError.malformed("a connection ID of 0 bytes")),
        ("18 01 00 15", QUICError.malformed("a connection ID of 21 bytes")),
        ("18 01 02 08", QUICError.malformed("NEW_CONNECTION_ID retiring beyond its own sequence")),
        ("06 00 44", QUICError.truncated),  // CRYPTO of 4 bytes with none
        ("0a 00 4fff 01", QUICError.truncated),  // STREAM of 4095 bytes with one
        ("1f", QUICError.unknownFrame(0x1f)),
        ("07 00", QUICError.malformed("an empty NEW_TOKEN")),
        ("12 d000000000000001", QUICError.malformed("MAX_STREAMS above 2^60")),
        ("", QUICError.malformed("a packet without frames")),
    ])
    func hostileFramesAreRefused(bytes: String, error: QUICError) {
        #expect(throws: error) { _ = try QUICFrame.decodeAll(hex(bytes)) }
    }

    /// A frame of data that no longer fits a packet (a Retry's token, a longer connection ID) is cut:
    /// the first part fits the room, and the two parts together are the original.
    @Test func dataFramesSplitToFitTheRoomLeft() throws {
        let data = (0..<1_150).map { UInt8(truncatingIfNeeded: $0) }
        for frame in [QUICFrame.crypto(offset: 7, data: data), .stream(streamID: 4, offset: 100, data: data, fin: true)] {
            let (head, rest) = try #require(frame.split(fitting: 1_000))
            #expect(head.encoded.count <= 1_000)
            switch (head, rest) {
            case (.crypto(let a, let first), .crypto(let b, let second)):
                #expect(a == 7 && b == 7 + UInt64(first.count) && first + second == data)
            case (.stream(4, let a, let first, false), .stream(4, let b, let second, true)):
                #expect(a == 100 && b == 100 + UInt64(first.count) && first + second == data)
            default:
                Issue.record("not split as data: \(head), \(rest)")
            }
        }
        #expect(QUICFrame.ping.split(fitting: 1_000) == nil)
        #expect(QUICFrame.crypto(offset: 0, data: data).split(fitting: 10) == nil, "not a byte fits")
    }
}
