import FerryTestServer
import Foundation
import Testing

/// QPACK's dynamic table on the wire (RFC 9204): Ferry offers one (4,096 bytes, 16 blocked streams),
/// aioquic's encoder (ls-qpack) fills it and refers to it, and every file and header arrives whole.
@Suite struct HTTP3QPACKTests {
    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func responsesThatReferToTheDynamicTableArriveWhole() async throws {
        try await HTTP3CommandTests.withH3Peer { peer, directory in
            let sizes = (1...20).map { $0 * 1_000 }
            let urls = sizes.map { "https://localhost:\(peer.ports[0])/bytes/\($0)" }
            let run = try await CLIRunner(directory: directory).run(
                ["get", "--http3-only", "--cacert", "ca.pem", "-s", "--dir", ".", "-D", "heads.txt"] + urls
            )
            #expect(run.status == 0, "\(run.stderr)")
            for size in sizes {
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/\(size)")) == Data((0..<size).map { UInt8($0 % 256) }))
            }
            // Every head's fields as the server sent them (x-path names each request).
            let heads = try String(contentsOfFile: directory + "/heads.txt", encoding: .utf8)
            for size in sizes { #expect(heads.contains("x-path: /bytes/\(size)\r\n"), "\(size)") }
            // The server put entries in the table (its encoder stream), and this side's decoder stream
            // acknowledged them: the log's last line, written at the last request.
            let log = try String(contentsOfFile: peer.directory + "/qpack.log", encoding: .utf8)
            let last = try #require(log.split(separator: "\n").last?.split(separator: " ").compactMap { Int($0) })
            #expect(last.count == 2 && last[0] > 0 && last[1] > 0, "\(log)")
        }
    }

    /// A hundred downloads at once over one connection (`-Z --parallel-max 100`; aioquic allows 128
    /// streams): each head may refer to entries whose inserts are still on their way (blocked
    /// streams), and every file is byte-exact.
    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aHundredStreamsAtOnceAreByteExact() async throws {
        try await HTTP3CommandTests.withH3Peer { peer, directory in
            let sizes = (1...100).map { $0 * 3_001 }
            let urls = sizes.map { "https://localhost:\(peer.ports[0])/bytes/\($0)" }
            let run = try await CLIRunner(directory: directory).run(
                ["get", "--http3-only", "--cacert", "ca.pem", "-s", "-Z", "--parallel-max", "100", "--dir", "."] + urls
            )
            #expect(run.status == 0, "\(run.stderr)")
            for size in sizes {
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/\(size)")) == Data((0..<size).map { UInt8($0 % 256) }))
            }
            // One connection: the server saw one client address.
            let addresses = try String(contentsOfFile: peer.directory + "/addresses.log", encoding: .utf8).split(separator: "\n")
            #expect(addresses.count == 1, "\(addresses)")
        }
    }
}
