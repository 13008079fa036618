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
                var download = request(server.url("/bytes/\(size)?seed=61&throttle=700000"))
                download.connections = 4
                download.minimumSegmentSize = 256 * 1024
                let created: BackgroundTaskInfo = try daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: ControlAPI.TaskCreation(kind: .download, request: download)
                )
                var kills = 0
                for fraction in [0.25, 0.55] {
                    try await eventually("\(Int(fraction * 100)) % is on disk", within: 30) {
                        ((try? daemon.tasks(session))?.first?.bytesReceived ?? 0) >= Int64(Double(size) * fraction)
                    }
                    try await daemon.stop(signal: SIGKILL)
                    kills += 1
                    try daemon.start()
                }
                try await eventually("the download completes", within: 60) {
                    (try? daemon.tasks(session))?.first?.state == .completed
                }
                let task = try #require(try daemon.tasks(session).first)
                #expect(task.taskIdentifier == created.taskIdentifier)
                #expect(task.error == nil)
                #expect(task.statusCode == 200)
                #expect(task.originalRequest.connections == 4)
                let events: [BackgroundEvent] = try daemon.client.call("GET", "/v1/sessions/\(session)/events")
                let location = try #require(events.first?.location)
                #expect(try sha256(ofFile: location) == expectedSHA256(size, seed: 61))
                // Several ranges were asked for, and each kill cost about one checkpoint plus what the four
                // connections had in flight: the segments went on from their recorded progress.
                #expect(server.counters.requests(path: "/bytes/\(size)") >= 4 + kills)
                let again = server.counters.bodyBytesSent(path: "/bytes/\(size)") - Int64(size)
                print("segmented, daemon SIGKILLed \(kills)×: \(again) bytes fetched again (interval \(checkpoint))")
                #expect(again <= Int64(kills) * Int64(checkpoint + 4 * 512 * 1024))
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
