import FerryCore
@testable import FerryDaemon
import FerryStore
import Foundation
import Logging
import Synchronization
import Testing

@Suite struct JSONLogHandlerTests {
    @Test func aLineIsOneJSONObjectWithTheTaskFieldsAtTheTop() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "ferryd") { label in
            JSONLogHandler(label: label, level: .info) { line in lines.withLock { $0.append(line) } }
        }
        logger[metadataKey: "component"] = "scheduler"
        logger.debug("not at info")
        let key = TaskKey(session: "s.one", identifier: 7)
        logger.info("s.one#7 failed: \"quoted\"\nsecond line", metadata: key.metadata)
        logger.warning("careful")
        let written = lines.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.allSatisfy { $0.hasSuffix("\n") && $0.dropLast().contains("\n") == false })
        let first = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(first["message"] as? String == "s.one#7 failed: \"quoted\"\nsecond line")
        #expect(first["session"] as? String == "s.one")
        #expect(first["task"] as? Int == 7)
        #expect(first["level"] as? String == "info")
        #expect(first["component"] as? String == "scheduler")
        let time = try #require(first["time"] as? String)
        #expect(try #require(try? Date(time, strategy: .iso8601)).timeIntervalSinceNow.magnitude < 60)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(written[1].utf8)) as? [String: Any])
        #expect((second["source"] as? String)?.hasPrefix("LogAndMetricsTests.swift:") == true)
    }
}

@Suite struct RotatingLogFileTests {
    @Test func theFileIsRotatedPastItsCapAndKeepsWholeLines() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-log-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/ferryd.log"
        let file = try RotatingLogFile(path: path, maximumBytes: 4096)
        let line = String(repeating: "x", count: 99) + "\n"
        for _ in 0..<100 { file.append(line) }
        let current = try Data(contentsOf: URL(fileURLWithPath: path))
        let rotated = try Data(contentsOf: URL(fileURLWithPath: path + ".1"))
        #expect(current.count <= 4096 && rotated.count <= 4096)
        #expect(current.count % 100 == 0 && rotated.count == 4000)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        // Reopened, it goes on from the size it finds.
        let again = try RotatingLogFile(path: path, maximumBytes: 4096)
        again.append(line)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == current.count + 100)
    }
}

@Suite struct MetricsEndpointTests {
    @Test func onlyLoopbackAddressesWithAPortAreTaken() throws {
        #expect(try MetricsEndpoint.parse("127.0.0.1:9466") == ("127.0.0.1", 9466))
        #expect(try MetricsEndpoint.parse("[::1]:0") == ("::1", 0))
        #expect(try MetricsEndpoint.parse("localhost:9") == ("127.0.0.1", 9))
        for refused in ["0.0.0.0:9466", "192.168.1.2:9466", "127.0.0.1", "example.com:80", "[::]:9466", "127.0.0.1:99999", "127.1:80"] {
            #expect(throws: FerryError.self, "\(refused)") { try MetricsEndpoint.parse(refused) }
        }
    }
}

@Suite struct DaemonMetricsTests {
    @Test func theExpositionNamesEveryStateOfASessionAndDropsASessionThatIsGone() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(3, suspended: true)
        let metrics = DaemonMetrics()
        metrics.retried(FerryError(.timedOut, "slow"))
        metrics.retried(FerryError(.timedOut, "slow"))
        metrics.failed(FerryError(.cannotConnectToHost, "refused"))
        metrics.checkpointSynchronized(.milliseconds(3))
        var text = try metrics.exposition(store: fixture.store, rate: 1234.5)
        #expect(text.contains(#"ferry_tasks{session="s",state="suspended"} 3.0"#))
        #expect(text.contains(#"ferry_tasks{session="s",state="pending"} 0.0"#))
        #expect(text.contains(#"ferry_retries_total{reason="timedOut"} 2"#))
        #expect(text.contains(#"ferry_failures_total{reason="cannotConnectToHost"} 1"#))
        #expect(text.contains(#"ferry_checkpoint_sync_seconds_bucket{le="0.005"} 1"#))
        #expect(text.contains("ferry_transfer_rate_bytes_per_second 1234.5"))
        #expect(text.contains("# HELP ferry_tasks "))
        try fixture.store.removeSession("s")
        text = try metrics.exposition(store: fixture.store, rate: 0)
        #expect(!text.contains(#"session="s""#))
    }
}
