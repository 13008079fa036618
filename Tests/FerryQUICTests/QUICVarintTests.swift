import FerryQUIC
import Testing

/// RFC 9000 Appendix A.1's examples, and the reader's refusals.
@Suite struct QUICVarintTests {
    @Test(arguments: [
        ("c2197c5eff14e88c", UInt64(151_288_809_941_952_652)), ("9d7f3e7d", 494_878_333), ("7bbd", 15_293), ("25", 37),
        ("4025", 37),
    ])
    func decodesTheRFCsExamples(encoded: String, value: UInt64) throws {
        var reader = QUICReader(hex(encoded))
        #expect(try reader.readVarint() == value)
        #expect(reader.isAtEnd)
    }

    @Test func encodesInTheShortestFormAndInAGivenLength() {
        #expect(QUICVarint.encode(151_288_809_941_952_652) == hex("c2197c5eff14e88c"))
        #expect(QUICVarint.encode(494_878_333) == hex("9d7f3e7d"))
        #expect(QUICVarint.encode(15_293) == hex("7bbd"))
        #expect(QUICVarint.encode(37) == hex("25"))
        var padded: [UInt8] = []
        QUICVarint.append(37, to: &padded, length: 2)
        #expect(padded == hex("4025"))
        for value: UInt64 in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, QUICVarint.maximum] {
            var reader = QUICReader(QUICVarint.encode(value))
            #expect((try? reader.readVarint()) == value)
        }
    }

    @Test func aCutVarintOrALengthPastTheEndIsRefused() {
        var cut = QUICReader(hex("9d7f3e"))
        #expect(throws: QUICError.truncated) { try cut.readVarint() }
        // A length of 2^62 - 1 with three bytes left: refused before anything is read or allocated.
        var huge = QUICReader(hex("ffffffffffffffff 010203"))
        #expect(throws: QUICError.truncated) { try huge.readLength() }
    }
}

/// RFC 9000 Appendix A.2 and A.3: how many bytes a packet number takes, and its recovery.
@Suite struct QUICPacketNumberTests {
    @Test func encodedLengthFollowsWhatIsInFlight() {
        #expect(QUICPacketNumber.encodedLength(of: 0xac5c02, largestAcknowledged: 0xabe8b3) == 2)
        #expect(QUICPacketNumber.encodedLength(of: 0xace8fe, largestAcknowledged: 0xabe8b3) == 3)
        #expect(QUICPacketNumber.encodedLength(of: 0, largestAcknowledged: nil) == 1)
        #expect(QUICPacketNumber.encodedLength(of: 1 << 40, largestAcknowledged: 0) == 4)
    }

    @Test func decodingRecoversTheFullNumber() {
        #expect(QUICPacketNumber.decode(0x9b32, length: 2, largestReceived: 0xa82f30ea) == 0xa82f9b32)
        #expect(QUICPacketNumber.decode(0, length: 1, largestReceived: nil) == 0)
        // Just past a wrap of the window, and just before it.
        #expect(QUICPacketNumber.decode(0x01, length: 1, largestReceived: 0xff) == 0x101)
        #expect(QUICPacketNumber.decode(0xfe, length: 1, largestReceived: 0x100) == 0xfe)
    }
}
