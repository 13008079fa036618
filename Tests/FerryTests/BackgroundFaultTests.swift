import Ferry
import FerryTestServer
import Foundation
import Testing

/// Faults of the fault matrix (docs/RELIABILITY.md) that need a real ferryd.
@Suite struct BackgroundFaultTests {
    @Test func aFullDiskFailsTheTaskWithItsDataKept() async throws {
        try await TestServer.withServer { server in
            // The daemon's files fill a "disk" of 1,000,000 bytes (a debug build's FileSink).
            try await withDaemon(environment: ["FERRY_DEBUG_DISK_LIMIT": "1000000"]) { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.full"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                let task = session.downloadTask(with: request(server.url("/bytes/3000000?seed=5")))
                task.resume()
                await task.waitUntilFinished()
                let error = try #require(task.error)
                #expect(error.code == .cannotWriteToFile)
                #expect(error.message.contains("No space left on device"))
                let resumeData = try #require(error.resumeData)
                #expect(resumeData.bytesReceived == 1_000_000)
                #expect(FileManager.default.fileExists(atPath: resumeData.partialFilePath))
                // Not retried: one request reached the server.
                #expect(server.counters.requests(path: "/bytes/3000000") == 1)
            }
        }
    }

    @Test func aBusyServerIsTriedAgainWhenItSaysAndAnErrorAnswerIsTheResponse() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.busy"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                // Two "503, Retry-After: 1", then the file.
                let busy = session.downloadTask(
                    with: request(server.url("/bytes/200000?seed=6&fail=2&fail_status=503&retry_after=1&key=busy"))
                )
                // A 503 without Retry-After is the response (as URLSession delivers it), not retried.
                let refused = session.downloadTask(
                    with: request(server.url("/bytes/200001?fail=1&fail_status=503&retry_after=-1&key=refused"))
                )
                busy.resume()
                refused.resume()
                await busy.waitUntilFinished()
                await refused.waitUntilFinished()
                #expect(busy.error == nil)
                #expect(busy.response?.statusCode == 200)
                #expect(server.counters.requests(path: "/bytes/200000") == 3)
                let finished = recorder.events.compactMap { event -> String? in
                    if case .finished(let task, let sha, _) = event, task == busy.taskIdentifier { sha } else { nil }
                }
                #expect(finished == [expectedSHA256(200_000, seed: 6)])
                #expect(refused.error == nil)
                #expect(refused.response?.statusCode == 503)
                #expect(server.counters.requests(path: "/bytes/200001") == 1)
            }
        }
    }

    @Test func uploadsAreRetriedAfterRefusedConnectionsAndBusyAnswers() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_RETRY_BASE_DELAY": "0.1"]) { daemon in
                let file = try temporaryDirectory().appendingPathComponent("up.bin")
                let body = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
                try body.write(to: file)
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.upfaults"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                // "503, Retry-After: 1" once, then stored.
                var busy = request(server.url("/upload?keep=busy-up&fail=1&fail_status=503&retry_after=1&key=busy-up"))
                busy.method = "PUT"
                let task = session.uploadTask(with: busy, fromFile: file)
                // Nothing listens on port 1: refused, retried with backoff, then given up on.
                var refused = request("http://127.0.0.1:1/upload")
                refused.method = "PUT"
                let lost = session.uploadTask(with: refused, fromFile: file)
                task.resume()
                lost.resume()
                await task.waitUntilFinished()
                #expect(task.error == nil)
                #expect(task.response?.statusCode == 201)
                #expect(server.counters.requests(path: "/upload") == 2)
                let plain = try makeSession(trusting: server)
                defer { plain.invalidateAndCancel() }
                let (kept, _) = try await plain.data(for: request(server.url("/uploads/busy-up")))
                #expect(kept == body)
                // The refused upload is still being retried (12 tries over minutes); cancel it.
                let state = try await #require(
                    try daemon.tasks("t.upfaults").first { $0.taskIdentifier == lost.taskIdentifier }
                )
                #expect(state.state != .completed)
                lost.cancel()
                await lost.waitUntilFinished()
                #expect(lost.error?.code == .cancelled)
            }
        }
    }
}
