import Crypto
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
        var log = ServerLog(parameters: [:], frames: [:])
        try await HTTP3CommandTests.withH3Peer("h3_peer_qlog.py") { peer, directory in
            var cli = CLIRunner(directory: directory)
            cli.environment["FERRY_DEBUG_QUIC_MIGRATE"] = "1000000@127.0.0.2"
            let base = "https://127.0.0.1:\(peer.ports[0])/bytes/"
            let run = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "-s", "-Z", "--dir", "."] + ["40000000", "1", "2", "3", "4", "5"].map { base + $0 })
            guard run.status == 0 else { throw FerryError(.unknown, "the run failed: \(run.stderr)") }
            for event in try await Self.qlogEvents(of: peer, count: 1) {
                let body = event["data"] as? [String: Any] ?? [:]
                if event["name"] as? String == "transport:parameters_set", body["owner"] as? String == "remote" {
                    for (name, value) in body where name != "owner" { log.parameters[name] = "\(value)" }
                }
                for frame in Self.framesReceived(event) {
                    if let type = frame["frame_type"] as? String { log.frames[type, default: 0] += 1 }
                }
            }
        }
        return log
    }

    /// The events of the qlogs aioquic wrote (it writes one when a connection has ended, after its
    /// draining period), once there are `count` of them (30 s at most).
    static func qlogEvents(of peer: PythonPeer, count: Int) async throws -> [[String: Any]] {
        let directory = peer.directory + "/qlog"
        let end = Date().addingTimeInterval(30)
        while true {
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".qlog") }
            if files.count >= count {
                return try files.flatMap { file in
                    let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
                    let document = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                    return ((document?["traces"] as? [[String: Any]])?.first?["events"] as? [[String: Any]]) ?? []
                }
            }
            guard Date() < end else { throw FerryError(.timedOut, "aioquic wrote \(files.count) qlogs, not \(count)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The frames of a `transport:packet_received` event (none for other events).
    static func framesReceived(_ event: [String: Any]) -> [[String: Any]] {
        guard event["name"] as? String == "transport:packet_received" else { return [] }
        return (event["data"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
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

    /// Requests ended early are ended on the wire (RFC 9114 §4.1.1): a download past `--max-time`
    /// sends STOP_SENDING, an upload past it RESET_STREAM as well, both with H3_REQUEST_CANCELLED, as
    /// aioquic's qlog shows (the connection's window still counts their bytes).
    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func cancelledRequestsAreEndedOnTheWire() async throws {
        try await HTTP3CommandTests.withH3Peer("h3_peer_qlog.py") { peer, directory in
            try Data(count: 2_000_000).write(to: URL(fileURLWithPath: directory + "/up.bin"))
            let cli = CLIRunner(directory: directory)
            let base = "https://localhost:\(peer.ports[0])"
            let download = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "-s", "--max-time", "1", "\(base)/stall/5000", "-o", "s"])
            #expect(download.status != 0)
            let upload = try await cli.run([
                "put", "--http3-only", "--cacert", "ca.pem", "-s", "--max-time", "1", "--limit-rate", "200K", "up.bin", "\(base)/upload",
            ])
            #expect(upload.status != 0)
            var frames: [String: Int] = [:]
            for frame in try await Self.qlogEvents(of: peer, count: 2).flatMap(Self.framesReceived) {
                guard let type = frame["frame_type"] as? String, type == "stop_sending" || type == "reset_stream" else { continue }
                #expect(frame["error_code"] as? Int == 0x10c, "\(frame)")
                frames[type, default: 0] += 1
            }
            #expect((frames["stop_sending"] ?? 0) >= 2 && (frames["reset_stream"] ?? 0) >= 1, "\(frames)")
        }
    }

    /// Key updates this side starts (RFC 9001 §6), every 100 packets here (`FERRY_DEBUG_QUIC_KEY_UPDATE`)
    /// instead of every 2^22: aioquic follows each (its qlog's `key_updated`, triggered by the remote),
    /// and a 3 MB upload arrives whole.
    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func keyUpdatesThisSideStartsAreFollowed() async throws {
        try await HTTP3CommandTests.withH3Peer("h3_peer_qlog.py") { peer, directory in
            let body = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
            try body.write(to: URL(fileURLWithPath: directory + "/up.bin"))
            var cli = CLIRunner(directory: directory)
            cli.environment["FERRY_DEBUG_QUIC_KEY_UPDATE"] = "100"
            let run = try await cli.run([
                "put", "--http3-only", "--cacert", "ca.pem", "-s", "up.bin", "https://localhost:\(peer.ports[0])/upload", "-D", "head.txt",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let head = try String(contentsOfFile: directory + "/head.txt", encoding: .utf8).lowercased()
            let digest = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
            #expect(head.contains("x-body-sha256: \(digest)"), "\(head)")
            let updates = try await Self.qlogEvents(of: peer, count: 1).filter { event in
                event["name"] as? String == "security:key_updated" && (event["data"] as? [String: Any])?["trigger"] as? String == "remote_update"
            }
            // About 2,600 packets: some 20 updates (fewer when an acknowledgement is slow to come).
            #expect(updates.count >= 10, "\(updates.count) key updates followed")
        }
    }
}
