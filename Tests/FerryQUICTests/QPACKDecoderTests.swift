import FerryTestServer
import Foundation
import Testing

@testable import FerryQUIC

/// QPACK's dynamic table (RFC 9204) as the decoding side: ls-qpack (pylsqpack, aioquic's encoder)
/// writes the encoder stream and the sections, and every field decodes here as it was given, in order,
/// blocked sections included; what a server could make this side hold is bounded.
@Suite struct QPACKDecoderTests {
    typealias Fields = [(name: String, value: String)]

    /// ls-qpack's encoder stream bytes and section for each field list, on streams 0, 4, 8, ...
    static func encoded(_ lists: [Fields], capacity: Int = 4096, blocked: Int = 16) throws -> [(encoder: [UInt8], section: [UInt8])] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: lists.map { $0.map { [$0.name, $0.value] } }), as: UTF8.self)
        return try QPACKTests.oracle(["dynamic", "\(capacity)", "\(blocked)", json]).map { line in
            let parts = line.split(separator: " ").map(String.init)
            return (parts[0] == "-" ? [] : hex(parts[0]), hex(parts[1]))
        }
    }

    /// Fifty responses as a server sends them: the same server and type, dates and ids that change.
    static let responses: [Fields] = (0..<50).map { index in
        [
            (":status", index % 7 == 0 ? "404" : "200"), ("server", "ferry-test/1.0 (aioquic)"), ("content-type", "application/octet-stream"),
            ("date", "Fri, 27 Nov 2026 20:\(10 + index / 10):0\(index % 10) GMT"), ("x-request-id", "req-\(index % 5)"),
            ("cache-control", "max-age=\(60 * (index % 3))"), ("x-long", String(repeating: "v", count: 200)),
        ]
    }

    static func same(_ decoded: QPACKDecoder.Outcome, _ expected: Fields) -> Bool {
        guard case .fields(let fields) = decoded else { return false }
        return fields.map { "\($0.name): \($0.value)" } == expected.map { "\($0.name): \($0.value)" }
    }

    @Test(.enabled(if: QPACKTests.pylsqpack, "Python's pylsqpack is not installed (.ci/run installs aioquic, which brings it)"))
    func sectionsThatUseTheDynamicTableDecodeAsLsQpackEncodedThem() throws {
        let encoded = try Self.encoded(Self.responses)
        var decoder = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 16)
        var dynamic = 0
        for (index, (encoder, section)) in encoded.enumerated() {
            // The encoder stream a byte at a time: instructions wait for their ends.
            for byte in encoder { _ = try decoder.encoderStream([byte]) }
            if section[0] != 0 { dynamic += 1 }
            #expect(Self.same(try decoder.decode(section, stream: UInt64(index * 4)), Self.responses[index]), "response \(index)")
        }
        // ls-qpack used the table for many of them (16 here: with nothing acknowledged, it stops
        // risking more blocked streams), so the test checks the dynamic table, not only the static.
        #expect(dynamic >= 10, "\(dynamic) sections referred to the dynamic table")
        #expect(decoder.insertCount > 5)
    }

    @Test(.enabled(if: QPACKTests.pylsqpack, "Python's pylsqpack is not installed (.ci/run installs aioquic, which brings it)"))
    func aSectionThatArrivesBeforeItsInsertsWaitsForThem() throws {
        let encoded = try Self.encoded(Array(Self.responses.prefix(3)))
        var decoder = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 16)
        _ = try decoder.encoderStream(encoded[0].encoder)
        #expect(Self.same(try decoder.decode(encoded[0].section, stream: 0), Self.responses[0]))
        // Response 1's section before its encoder bytes: blocked, then decodable once they arrive.
        let blocked = encoded.firstIndex { $0.section[0] != 0 && !$0.encoder.isEmpty }
        let index = try #require(blocked)
        for earlier in 1..<index { _ = try decoder.encoderStream(encoded[earlier].encoder) }
        guard case .blocked(let required) = try decoder.decode(encoded[index].section, stream: UInt64(index * 4)) else {
            Issue.record("section \(index) was not blocked")
            return
        }
        #expect(required > decoder.insertCount)
        #expect(decoder.blockedStreams.count == 1)
        #expect(try decoder.encoderStream(encoded[index].encoder) == [UInt64(index * 4)])
        #expect(Self.same(try decoder.decode(encoded[index].section, stream: UInt64(index * 4)), Self.responses[index]))
        #expect(decoder.blockedStreams.isEmpty)
    }

    @Test func theDecoderStreamSaysWhatArrived() throws {
        var decoder = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 2)
        // Set capacity 100; insert "x-a: one" with a literal name; duplicate it.
        _ = try decoder.encoderStream([0x3F, 0x45] + [0x43] + Array("x-a".utf8) + [0x03] + Array("one".utf8) + [0x00])
        #expect(decoder.takeInstructions() == [0x02])  // Insert Count Increment of 2
        // A section on stream 8: Required Insert Count 2 (encoded 3), base 2, indexed relative 0.
        let outcome = try decoder.decode([0x03, 0x00, 0x80], stream: 8)
        #expect(Self.same(outcome, [("x-a", "one")]))
        #expect(decoder.takeInstructions() == [0x88])  // Section Acknowledgment, stream 8
        decoder.cancel(stream: 12)
        #expect(decoder.takeInstructions() == [0x4C])  // Stream Cancellation, stream 12
    }

    @Test func whatAServerCouldMakeItHoldIsBounded() throws {
        var decoder = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 1, maximumFieldSectionSize: 16 << 10)
        // A capacity past the advertised one.
        #expect { _ = try decoder.encoderStream([0x3F, 0xE2, 0x1F]) } throws: { "\($0)".contains("past the 4096 allowed") }
        var fresh = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 1, maximumFieldSectionSize: 16 << 10)
        // A string longer than the table could hold is refused when its length arrives, not buffered.
        #expect { _ = try fresh.encoderStream([0x3F, 0xE1, 0x1F, 0x43] + Array("x-a".utf8) + [0x7F, 0xFF, 0xFF, 0x03]) } throws: {
            "\($0)".contains("past 4096")
        }
        var decoder2 = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 1, maximumFieldSectionSize: 16 << 10)
        // Capacity 4096; one entry of about 3,000 bytes.
        var insert: [UInt8] = [0x3F, 0xE1, 0x1F, 0x43] + Array("x-a".utf8)
        QPACK.appendInteger(3000, prefixBits: 7, flags: 0, to: &insert)
        insert += Array(repeating: UInt8(ascii: "v"), count: 3000)
        _ = try decoder2.encoderStream(insert)
        // A reference to an entry not in the table.
        #expect { _ = try decoder2.encoderStream([0x05]) } throws: { "\($0)".contains("not in the table") }
        // A short section referring to it ten times expands past the 16 KiB allowed.
        #expect { _ = try decoder2.decode([0x02, 0x00] + Array(repeating: 0x80, count: 10), stream: 0) } throws: {
            "\($0)".contains("past 16384 bytes once decoded")
        }
        // One blocked stream is allowed, a second is not.
        #expect(try { if case .blocked = try decoder2.decode([0x05, 0x00, 0x80], stream: 4) { true } else { false } }())
        #expect { _ = try decoder2.decode([0x05, 0x00, 0x80], stream: 8) } throws: { "\($0)".contains("more QPACK-blocked streams than the 1") }
        // A reference past the section's own Required Insert Count.
        #expect { _ = try decoder2.decode([0x02, 0x00, 0x10], stream: 12) } throws: { "\($0)".contains("past the section's Required Insert Count") }
    }
}
