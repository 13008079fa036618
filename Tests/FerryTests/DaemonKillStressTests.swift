import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ferryd SIGKILLed at random moments of a large download (issue 7): no task is lost, every file is
/// exact, and each kill costs at most about one checkpoint interval of bytes fetched again.
///
/// The test command runs 20 kills; `FERRY_STRESS_KILLS=200 swift test --skip-build --filter
/// DaemonKillStressTests` runs more (docs/RELIABILITY.md). `FERRY_STRESS_SEED` repeats a run.
@Suite struct DaemonKillStressTests {
    @Test func randomKillsLoseNoTaskAndNoByte() async throws {
        let environment = ProcessInfo.processInfo.environment
        let kills = environment["FERRY_STRESS_KILLS"].flatMap(Int.init) ?? 20
        let seed = environment["FERRY_STRESS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max / 2)
        var random = SeededGenerator(seed: seed)
        let checkpoint = 256 * 1024
        let smallSizes = [300_000, 700_000]
        try await TestServer.withServer { server in
            try await withDaemon(environment: [
                "FERRY_CHECKPOINT_BYTES": "\(checkpoint)", "FERRY_CHECKPOINT_SECONDS": "1000",
                "FERRY_RETRY_BASE_DELAY": "0.05", "FERRY_THROUGHPUT_FLOOR": "0",
            ]) { daemon in
                let session = "t.stress"
                var created: [(identifier: Int, size: Int, seed: Int)] = []
                var bigSizes: [Int] = []
                /// A large download (a size of its own, so the server counts its bytes apart).
                func addBig() async throws {
                    let size = 16_000_000 + bigSizes.count
                    let seed = 91 + bigSizes.count
                    let task = try await daemon.download(
                        server.url("/bytes/\(size)?seed=\(seed)&throttle=6000000"),
                        session: session,
                        description: "big \(bigSizes.count)"
                    )
                    bigSizes.append(size)
                    created.append((task.taskIdentifier, size, seed))
                }
                try await addBig()
                for (index, small) in smallSizes.enumerated() {
                    let task = try await daemon.download(
                        server.url("/bytes/\(small)?seed=\(80 + index)&throttle=400000"),
                        session: session,
                        description: "small \(index)"
                    )
                    created.append((task.taskIdentifier, small, 80 + index))
                }
                // Every kill lands while a transfer runs: when all are done, another large one starts.
                var survived = 0
                while survived < kills {
                    if await allCompleted(daemon, session) { try await addBig() }
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 20...400, using: &random)))
                    try await daemon.stop(signal: SIGKILL)
                    survived += 1
                    try await daemon.start()
                }
                try await eventually("every task completes", within: 120) { await allCompleted(daemon, session) }
                let tasks = try await daemon.tasks(session)
                let events: [BackgroundEvent] = try await daemon.client.call("GET", "/v1/sessions/\(session)/events")
                var verified = 0
                var lost = 0
                for expected in created {
                    guard let task = tasks.first(where: { $0.taskIdentifier == expected.identifier }),
                        task.error == nil,
                        let location = events.first(where: {
                            $0.kind == .didFinishDownloading && $0.task?.taskIdentifier == expected.identifier
                        })?.location
                    else {
                        lost += 1
                        continue
                    }
                    if try sha256(ofFile: location) == expectedSHA256(expected.size, seed: UInt64(expected.seed)) {
                        verified += 1
                    }
                }
                let served = bigSizes.map { server.counters.bodyBytesSent(path: "/bytes/\($0)") }.reduce(0, +)
                let again = served - Int64(bigSizes.reduce(0, +))
                print(
                    "ferryd kills survived: \(survived), files verified: \(verified)/\(created.count), tasks lost: \(lost), bytes of the large files fetched again: \(again) (\(again / Int64(max(survived, 1))) a kill; checkpoint \(checkpoint)); seed \(seed)"
                )
                #expect(survived == kills)
                #expect(lost == 0, "seed \(seed)")
                #expect(verified == created.count, "seed \(seed)")
                #expect(again <= Int64(survived) * Int64(checkpoint + 512 * 1024), "seed \(seed)")
            }
        }
    }

    /// Whether the daemon answers and reports every task of `session` completed (no answer: not yet).
    private func allCompleted(_ daemon: DaemonFixture, _ session: String) async -> Bool {
        guard let tasks = try? await daemon.tasks(session), !tasks.isEmpty else { return false }
        return tasks.allSatisfy { $0.state == .completed }
    }
}
