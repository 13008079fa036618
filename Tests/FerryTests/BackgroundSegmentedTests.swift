import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Segmented downloads and checksums in ferryd (SPEC S10.2, S10.3; D1 for each segment).
@Suite struct BackgroundSegmentedTests {
    @Test func aSegmentedDownloadSurvivesDaemonKillsSegmentBySegment() async throws {
        let size = 8_000_000
        let checkpoint = 256 * 1024
        try await TestServer.withServer { server in
            try await withDaemon(environment: [
                "FERRY_CHECKPOINT_BYTES": "\(checkpoint)", "FERRY_CHECKPOINT_SECONDS": "1000",
                "FERRY_RETRY_BASE_DELAY": "0.1",
            ]) { daemon in
                let session = "t.segkill"
                // The first eight responses (two runs of four segments) are each held 600 kB past where they
                // start (a gate never opened: the kills land mid-transfer however slow the machine); the
                // third run goes through.
                var download = request(server.url("/bytes/\(size)?seed=61&stall_after=600000&gate=never&only_first=8"))
                download.connections = 4
                download.minimumSegmentSize = 256 * 1024
                let created: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: ControlAPI.TaskCreation(kind: .download, request: download)
                )
                // Each run's four responses are held 600 kB past where they began, and the daemon is killed
                // there: the next run must begin each segment at its record.
                var kills = 0
                var unrecorded: Int64 = 0
                var recorded: Int64 = 0
                for run in 1...2 {
                    let held = recorded + 4 * 600_000
                    let before = recorded
                    recorded = try await daemon.killWhileHeld(
                        session,
                        server: server,
                        path: "/bytes/\(size)",
                        sent: Int64(run) * 4 * 600_000,
                        past: before
                    )
                    #expect(recorded > before, "run \(run) recorded no progress")
                    unrecorded += held - recorded
                    kills += 1
                    try await daemon.start()
                }
                try await eventually("the download completes", within: 60) {
                    await (try? daemon.tasks(session))?.first?.state == .completed
                }
                let task = try await #require(try daemon.tasks(session).first)
                #expect(task.taskIdentifier == created.taskIdentifier)
                #expect(task.error == nil)
                #expect(task.statusCode == 200)
                #expect(task.originalRequest.connections == 4)
                let events: [BackgroundEvent] = try await daemon.client.call("GET", "/v1/sessions/\(session)/events")
                let location = try #require(events.first?.location)
                #expect(try sha256(ofFile: location) == expectedSHA256(size, seed: 61))
                // At least four ranges a run (an idle connection also takes half of a slower one's rest),
                // and a kill cost what was not recorded: the segments went on from their recorded progress.
                // Beyond that, only a split's overlap: the four responses' bytes in flight when cut short.
                #expect(server.counters.requests(path: "/bytes/\(size)") >= 4 * (kills + 1))
                let again = server.counters.bodyBytesSent(path: "/bytes/\(size)") - Int64(size)
                print(
                    "segmented, daemon SIGKILLed \(kills)×: \(again) bytes fetched again, \(unrecorded) of them unrecorded at the kills (interval \(checkpoint))"
                )
                #expect(again >= unrecorded)
                #expect(again <= unrecorded + 4 * 512 * 1024)
            }
        }
    }

    @Test func aBackgroundDownloadWithTheWrongDigestFailsAndKeepsItsBytes() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.digest"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                var good = request(server.url("/bytes/300000?seed=62"))
                good.expectedDigest = ContentDigest("sha256=" + expectedSHA256(300_000, seed: 62))
                let fine = session.downloadTask(with: good)
                fine.resume()
                await fine.waitUntilFinished()
                #expect(fine.error == nil)

                var bad = good
                bad.expectedDigest = ContentDigest("sha256=" + expectedSHA256(300_000, seed: 63))
                let wrong = session.downloadTask(with: bad)
                wrong.resume()
                await wrong.waitUntilFinished()
                let error = try #require(wrong.error)
                #expect(error.code == .checksumMismatch)
                // Verified once, not retried, and the bytes are where the message says.
                #expect(server.counters.requests(path: "/bytes/300000") == 2)
                let words = error.message.split(separator: " ").map(String.init)
                let kept = try #require(words.firstIndex(of: "in").map { words[$0 + 1] })
                #expect(try sha256(ofFile: kept) == expectedSHA256(300_000, seed: 62))
            }
        }
    }
}
