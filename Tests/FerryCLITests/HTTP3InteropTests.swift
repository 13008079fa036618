import FerryCore
import FerryTestServer
import Foundation
import Testing

/// What aioquic's server parsed of Ferry's QUIC, from its qlog (`h3_peer_qlog.py`): every transport
/// parameter Ferry sends with its value, and every frame type Ferry sends, at least once, from one
/// run that exercises them all (issue 42): a 40 MB download past the flow-control windows, five more
/// requests than the three streams allowed, and a move to 127.0.0.2 mid-way.
@Suite struct HTTP3InteropTests {
    /// The server's view of the client: its transport parameters and how often each frame type came.
    struct ServerLog: Sendable {
        var parameters: [String: String]
        var frames: [String: Int]
    }

    /// The one run every test here reads (started by the first that asks).
    static let log = Task { try await run() }

    static func run() async throws -> ServerLog {
        let peer = try await PythonPeer.start("h3_peer_qlog.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        var cli = CLIRunner(directory: directory)
        cli.environment["FERRY_DEBUG_QUIC_MIGRATE"] = "1000000@127.0.0.2"
        let base = "https://127.0.0.1:\(peer.ports[0])/bytes/"
        let run = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "-s", "-Z", "--dir", "."] + ["40000000", "1", "2", "3", "4", "5"].map { base + $0 })
        guard run.status == 0 else { throw FerryError(.unknown, "the run failed: \(run.stderr)") }
        // aioquic writes the qlog when the connection has ended (after its draining period).
        let qlogs = peer.directory + "/qlog"
        let end = Date().addingTimeInterval(30)
        var file: String?
        while file == nil {
            file = (try? FileManager.default.contentsOfDirectory(atPath: qlogs))?.first { $0.hasSuffix(".qlog") }
            guard file == nil else { break }
            guard Date() < end else { throw FerryError(.timedOut, "aioquic wrote no qlog") }
            try await Task.sleep(for: .milliseconds(100))
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: qlogs + "/" + file!))
        let document = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let events = ((document?["traces"] as? [[String: Any]])?.first?["events"] as? [[String: Any]]) ?? []
        var log = ServerLog(parameters: [:], frames: [:])
        for event in events {
            let body = event["data"] as? [String: Any] ?? [:]
            if event["name"] as? String == "transport:parameters_set", body["owner"] as? String == "remote" {
                for (name, value) in body where name != "owner" { log.parameters[name] = "\(value)" }
            }
            if event["name"] as? String == "transport:packet_received" {
                for frame in body["frames"] as? [[String: Any]] ?? [] {
                    if let type = frame["frame_type"] as? String { log.frames[type, default: 0] += 1 }
                }
            }
        }
        return log
    }

    /// Every transport parameter Ferry sends (RFC 9000 §18.2), as the server decoded it.
    @Test(
        .enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"),
        arguments: [
            ("max_idle_timeout", "30000"), ("initial_max_data", "67108864"), ("initial_max_stream_data_bidi_local", "16777216"),
            ("initial_max_stream_data_bidi_remote", "16777216"), ("initial_max_stream_data_uni", "16777216"),
            ("initial_max_streams_uni", "100"), ("active_connection_id_limit", "4"), ("disable_active_migration", "0"),
        ]
    )
    func theServerReadsTheTransportParameter(name: String, value: String) async throws {
        let log = try await Self.log.value
        #expect(log.parameters[name] == value, "\(log.parameters)")
    }

    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func theServerReadsTheInitialSourceConnectionID() async throws {
        let log = try await Self.log.value
        #expect(log.parameters["initial_source_connection_id"]?.count == 16, "eight bytes in hex: \(log.parameters)")
    }

    /// Every frame type Ferry sends (RFC 9000 §19), parsed by the server at least once.
    @Test(
        .enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"),
        arguments: [
            "padding", "ping", "ack", "crypto", "stream", "max_data", "max_stream_data", "streams_blocked", "new_connection_id",
            "retire_connection_id", "path_challenge", "path_response", "connection_close",
        ]
    )
    func theServerParsesTheFrameType(_ type: String) async throws {
        let log = try await Self.log.value
        #expect((log.frames[type] ?? 0) > 0, "\(log.frames)")
    }
}
