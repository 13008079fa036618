import Ferry
import FerryTestServer
import Foundation
import Testing

/// What ferryd does on its own for background transfers: retries with resume, the throughput floor,
/// uploads from files, discretionary tasks (SPEC S6.10).
@Suite(.serialized) struct BackgroundTransferTests {
    @Test func aNetworkErrorIsRetriedAndContinuesFromItsOffset() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_RETRY_BASE_DELAY": "0.1"]) { daemon in
                let path = "/bytes/2000000"
                _ = try await daemon.download(
                    server.url("\(path)?seed=5&close_after=700000&only_first=1&key=retry"),
                    session: "t.retry"
                )
                try await eventually("the download completes", within: 30) {
                    await (try? daemon.tasks("t.retry"))?.first?.state == .completed
                }
                let task = try await #require(try daemon.tasks("t.retry").first)
                #expect(task.error == nil)
                #expect(task.statusCode == 206)
                #expect(server.counters.requests(path: path) == 2)
                // Only what was not on disk was fetched again.
                #expect(server.counters.bodyBytesSent(path: path) < 2_000_000 + 700_000)
                let events: [BackgroundEvent] = try await daemon.client.call("GET", "/v1/sessions/t.retry/events")
                let location = try #require(events.first?.location)
                #expect(try sha256(ofFile: location) == expectedSHA256(2_000_000, seed: 5))
            }
        }
    }

    @Test func aTransferUnderTheThroughputFloorStopsWithItsDataKept() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: [
                "FERRY_THROUGHPUT_FLOOR": "1000000", "FERRY_THROUGHPUT_WINDOW": "0.5",
                "FERRY_CHECKPOINT_SECONDS": "0.1",
            ]) { daemon in
                _ = try await daemon.download(server.url("/bytes/5000000?throttle=200000"), session: "t.slow")
                try await eventually("the slow transfer is stopped", within: 20) {
                    await (try? daemon.tasks("t.slow"))?.first?.state == .completed
                }
                let task = try await #require(try daemon.tasks("t.slow").first)
                #expect(task.error?.code == .timedOut)
                #expect(task.error?.message.contains("under 1000000 bytes a second") == true)
                #expect(task.bytesReceived > 0)
            }
        }
    }

    @Test func anUploadFromAFileRunsInTheDaemon() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let file = try temporaryDirectory().appendingPathComponent("body.bin")
                let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                try body.write(to: file)
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.upload"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                var upload = request(server.url("/upload?keep=bg-upload"))
                upload.method = "PUT"
                let task = session.uploadTask(with: upload, fromFile: file)
                task.resume()
                await task.waitUntilFinished()
                #expect(task.error == nil)
                #expect(task.response?.statusCode == 201)
                #expect(task.countOfBytesSent == 300_000)
                // Upload progress comes from the daemon: totals never go down, the last is the whole body,
                // and it arrives before the completion.
                let events = recorder.events
                let sent: [Int64] = events.compactMap { if case .sent(_, let total, _) = $0 { total } else { nil } }
                #expect(!sent.isEmpty)
                #expect(sent == sent.sorted())
                #expect(sent.last == 300_000)
                #expect(events.contains(.sent(task: task.taskIdentifier, total: 300_000, expected: 300_000)))
                let lastSent = events.lastIndex { if case .sent = $0 { true } else { false } }
                let completed = events.firstIndex { if case .complete = $0 { true } else { false } }
                #expect(lastSent != nil && completed != nil && lastSent! < completed!)
                let plain = try makeSession(trusting: server)
                defer { plain.invalidateAndCancel() }
                let (kept, _) = try await plain.data(for: request(server.url("/uploads/bg-upload")))
                #expect(sha256(kept) == sha256(body))
            }
        }
    }

    @Test func tasksCreatedWithNoClientAttachedAreDiscretionary() async throws {
        try await withDaemon { daemon in
            let detached = try await daemon.download("http://127.0.0.1:1/x", session: "t.disc")
            #expect(detached.isDiscretionary)
            let session = Session(
                configuration: .background(identifier: "t.disc"),
                delegate: Recorder(),
                daemon: daemon.client
            )
            defer { session.finishTasksAndInvalidate() }
            let attached = session.downloadTask(with: request("http://127.0.0.1:1/y"))
            // allTasks asks the daemon after the creation went out, and includes the task this process
            // did not make (S6.8); getAllTasks knows it too from then on.
            #expect(
                Set(await session.allTasks.map(\.taskIdentifier)) == [detached.taskIdentifier, attached.taskIdentifier]
            )
            #expect(Set(session.getAllTasks().map(\.taskIdentifier)) == [detached.taskIdentifier, attached.taskIdentifier])
            let infos = try await daemon.tasks("t.disc")
            #expect(infos.first { $0.taskIdentifier == attached.taskIdentifier }?.isDiscretionary == false)
        }
    }

    @Test func theSessionsConfigurationTravelsWithEachTask() async throws {
        try await withDaemon { daemon in
            var configuration = SessionConfiguration.background(identifier: "t.cfg")
            configuration.httpAdditionalHeaders = ["X-Ferry-Test": "from the configuration"]
            configuration.isDiscretionary = true
            configuration.timeoutIntervalForResource = 3600
            let session = Session(configuration: configuration, delegate: Recorder(), daemon: daemon.client)
            defer { session.invalidateAndCancel() }
            var own = request("http://127.0.0.1:1/own")
            own.headers["X-Ferry-Test"] = "the request's own"
            let plain = session.downloadTask(with: request("http://127.0.0.1:1/plain"))
            let overridden = session.downloadTask(with: own)
            _ = await session.allTasks  // after the creations have gone out
            let infos = try await daemon.tasks("t.cfg")
            let first = try #require(infos.first { $0.taskIdentifier == plain.taskIdentifier })
            let second = try #require(infos.first { $0.taskIdentifier == overridden.taskIdentifier })
            #expect(first.originalRequest.headers["x-ferry-test"] == "from the configuration")
            #expect(second.originalRequest.headers["x-ferry-test"] == "the request's own")
            #expect(first.isDiscretionary && second.isDiscretionary)
        }
    }

    @Test func aTaskPastItsResourceTimeoutFailsAndIsNotRetried() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_THROUGHPUT_FLOOR": "0"]) { daemon in
                // The body is held after 100 kB (a gate never opened), so the timeout fires mid-transfer.
                // An attempt in which no byte arrived before it (a loaded machine) proves nothing about
                // the kept data and is made again with a longer timeout, in a session of its own.
                for (attempt, seconds) in [1.5, 6, 24].enumerated() {
                    var configuration = SessionConfiguration.background(identifier: "t.resource\(attempt)")
                    configuration.timeoutIntervalForResource = seconds
                    let recorder = Recorder()
                    let session = Session(configuration: configuration, delegate: recorder, daemon: daemon.client)
                    defer { session.finishTasksAndInvalidate() }
                    let task = session.downloadTask(
                        with: request(server.url("/bytes/5000000?stall_after=100000&gate=never"))
                    )
                    task.resume()
                    await task.waitUntilFinished()
                    let error = try #require(task.error)
                    #expect(error.code == .timedOut)
                    #expect(error.message.contains("timeoutIntervalForResource"))
                    #expect(recorder.completions == 1)
                    if error.resumeData == nil && task.countOfBytesReceived == 0 { continue }
                    // The partial data is kept for a later try.
                    #expect((error.resumeData?.bytesReceived ?? 0) > 0)
                    return
                }
                Issue.record("no byte arrived in three tries (1.5, 6 and 24 s)")
            }
        }
    }
}
