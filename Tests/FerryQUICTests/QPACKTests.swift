import FerryTestServer
import Foundation
import Testing

@testable import FerryQUIC

/// QPACK field sections (RFC 9204) against ls-qpack (pylsqpack, what aioquic uses): every static table
/// entry as that encoder refers to it decodes to the same field here, Huffman-coded literals included,
/// and what this side encodes, that decoder reads back.
@Suite struct QPACKTests {
    static let pylsqpack = PythonPeer.hasModule("pylsqpack")

    static func oracle(_ arguments: [String]) throws -> [String] {
        let process = try ChildProcess.spawn("/usr/bin/env", arguments: ["python3", PythonPeer.script("qpack_oracle.py")] + arguments)
        let output = String(decoding: process.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return output.split(separator: "\n").map(String.init)
    }

    @Test(.enabled(if: pylsqpack, "Python's pylsqpack is not installed (.ci/run installs aioquic, which brings it)"))
    func everyStaticEntryDecodesAsLsQpackEncodesIt() throws {
        let entries = QPACKStaticTable.entries
        // Each entry, and each entry's name with another value (a literal with a static name reference,
        // its value Huffman-coded when that is shorter), and a name not in the table.
        var fields = entries.map { ($0.name, $0.value) }
        fields += entries.map { ($0.name, "another value, longer than most") }
        fields.append(("x-not-in-the-table", "/bytes/10?a=b"))
        let sections = try Self.oracle(["encode"] + fields.flatMap { [$0.0, $0.1] })
        #expect(sections.count == fields.count)
        for (field, section) in zip(fields, sections) {
            let decoded = try QPACK.decode(hex(section))
            #expect(decoded.count == 1 && decoded.first?.name == field.0 && decoded.first?.value == field.1, "\(field) from \(section)")
        }
        // The exact entries come as single indexed field lines: two prefix bytes and one or two more.
        for (entry, section) in zip(entries, sections) where section.count > 8 {
            Issue.record("\(entry) was not encoded as a static index: \(section)")
        }
    }

    @Test(.enabled(if: pylsqpack, "Python's pylsqpack is not installed (.ci/run installs aioquic, which brings it)"))
    func whatThisSideEncodesLsQpackDecodes() throws {
        let fields: [(name: String, value: String)] = [
            (":method", "GET"), (":scheme", "https"), (":authority", "localhost:4433"), (":path", "/bytes/1000?x=1"),
            ("user-agent", "ferry/0.1"), ("accept", "*/*"), ("x-custom", "a value"),
        ]
        let decoded = try Self.oracle(["decode", hexString(QPACK.encode(fields))])
        #expect(decoded == fields.map { "\($0.name)\t\($0.value)" })
    }

    @Test(arguments: [
        ("0100", "a field section that needs the dynamic table"), ("000080", "a reference to the dynamic table"),
        ("0000ff2b", "static table index 106"), ("000040", "a name from the dynamic table"), ("000010", "a post-base reference"),
        ("000023616263", "the QUIC bytes end"), ("00005f1d05", "the QUIC bytes end"),
    ])
    func sectionsThatNeedWhatThisSideRefusedAreRefused(section: String, words: String) {
        #expect { _ = try QPACK.decode(hex(section)) } throws: { "\($0)".contains(words) }
    }
}
