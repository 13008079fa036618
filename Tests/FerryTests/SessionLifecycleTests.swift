import Ferry
import FerryTestServer
import Foundation
import Synchronization
import Testing

@Suite struct SessionLifecycleTests {
    @Test func aThousandTasksStartedAtOnceAllComplete() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let tasks = (0..<1000).map { index in
                session.dataTask(with: request(server.url("/bytes/1024?seed=\(index)")))
            }
            for task in tasks { task.resume() }
            for task in tasks { await task.waitUntilFinished() }
            #expect(recorder.completions == 1000)
            var wrong = 0
            for (index, task) in tasks.enumerated() {
                if task.error != nil
                    || sha256(recorder.body(of: task.taskIdentifier)) != expectedSHA256(1024, seed: UInt64(index))
                {
                    wrong += 1
                }
            }
            #expect(wrong == 0)
            // The per-host limit (6) held: no more connections than that were open at once. (A loaded
            // run once accepted 8 in all: connections closed while idle are replaced.)
            #expect(server.counters.mostConnectionsAtOnce <= 6, "accepted \(server.counters.connectionsAccepted)")
            #expect(!recorder.callbacksOverlapped)
            #expect(session.getAllTasks().isEmpty)
        }
    }

    @Test func theConnectionLimitPerHostIsAHardLimit() async throws {
        var configuration = SessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 2
        try await withSession(configuration) { server, session in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        _ = try await session.data(
                            for: request(server.url("/bytes/200000?seed=\(index)&throttle=4000000"))
                        )
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.counters.connectionsAccepted <= 2)
            #expect(server.counters.requests(path: "/bytes/200000") == 12)
        }
    }

    @Test func invalidateAndCancelCancelsEverythingThenReportsInvalid() async throws {
        let recorder = Recorder()
        try await TestServer.withServer { server in
            let session = try makeSession(delegate: recorder, trusting: server)
            let tasks = (0..<10).map { index in
                session.downloadTask(with: request(server.url("/bytes/5000000?seed=\(index)&throttle=500000")))
            }
            for task in tasks { task.resume() }
            let unstarted = session.dataTask(with: request(server.url("/bytes/10")))
            #expect(session.getAllTasks().count == 11)
            session.invalidateAndCancel()
            // A liveness bound, not a timing claim: in a full run, with the thousand-task test of this
            // suite and hundreds of others in the process, it took 14-23 s (under 1 s alone).
            try await eventually("didBecomeInvalid", within: 90) { recorder.events.last == .invalid }
            #expect(recorder.completions == 11)
            for task in tasks + [unstarted] {
                #expect(task.error?.code == .cancelled)
                #expect(task.state == .completed)
            }
            #expect(recorder.events.filter { $0 == .invalid }.count == 1)
            #expect(session.delegate == nil)

            // A task made now fails with a clear error.
            await #expect(throws: FerryError.self) { try await session.data(for: request(server.url("/bytes/10"))) }
        }
    }

    @Test func finishTasksAndInvalidateLetsTasksFinish() async throws {
        let recorder = Recorder()
        try await TestServer.withServer { server in
            let session = try makeSession(delegate: recorder, trusting: server)
            let tasks = (0..<4).map { index in
                session.downloadTask(with: request(server.url("/bytes/400000?seed=\(index)&throttle=2000000")))
            }
            for task in tasks { task.resume() }
            session.finishTasksAndInvalidate()
            do {
                // See above: a liveness bound.
                try await eventually("didBecomeInvalid", within: 90) { recorder.events.last == .invalid }
            } catch {
                // What came instead, for a failure seen once in a full run and never alone.
                Issue.record("no didBecomeInvalid last; events: \(recorder.events); tasks: \(tasks.map(\.state))")
                throw error
            }
            for (index, task) in tasks.enumerated() {
                #expect(task.error == nil)
                #expect(
                    recorder.events(of: task.taskIdentifier).contains(
                        .finished(
                            task: task.taskIdentifier,
                            sha256: expectedSHA256(400_000, seed: UInt64(index)),
                            existedDuringCallback: true
                        )
                    )
                )
            }
            let invalidAt = try #require(recorder.events.firstIndex(of: .invalid))
            #expect(invalidAt == recorder.events.count - 1)
        }
    }

    @Test func cancellingABeforeResumedTaskCompletesItCancelled() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/10")))
            task.cancel()
            await task.waitUntilFinished()
            #expect(
                recorder.events(of: task.taskIdentifier) == [.complete(task: task.taskIdentifier, error: .cancelled)]
            )
            task.resume()  // does nothing now
            #expect(task.state == .completed)
            #expect(server.counters.requests(path: "/bytes/10") == 0)
        }
    }

    @Test func cancellingTheCallerCancelsAnAsyncDataCall() async throws {
        try await withSession { server, session in
            let call = Task { try await session.data(for: request(server.url("/bytes/5000000?throttle=500000"))) }
            try await Task.sleep(for: .milliseconds(200))
            call.cancel()
            do {
                _ = try await call.value
                Issue.record("the call finished despite its cancellation")
            } catch let error as FerryError {
                #expect(error.code == .cancelled)
            }
        }
    }

    /// An async call's transfer runs in the caller's task; a cancel from elsewhere (the task object, as
    /// `getAllTasks()` or a delegate hands it out) ends it while it waits for the head or for the body,
    /// and leaves the caller's own task uncancelled.
    @Test(arguments: ["delay_ms=60000", "stall_ms=60000&stall_after=1000"])
    func cancellingAnAsyncCallsTaskFromElsewhereEndsItButNotTheCaller(fault: String) async throws {
        try await withSession { server, session in
            let call = Task { () -> (callerCancelled: Bool, error: FerryError?) in
                do {
                    _ = try await session.data(for: request(server.url("/bytes/100000?\(fault)")))
                    return (Task.isCancelled, nil)
                } catch let error as FerryError {
                    return (Task.isCancelled, error)
                } catch {
                    return (Task.isCancelled, FerryError(.unknown, "\(error)"))
                }
            }
            var tasks: [SessionTask] = []
            for _ in 0..<500 where tasks.isEmpty {
                tasks = session.getAllTasks()
                if tasks.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
            try #require(tasks.count == 1)
            // Well into the wait: for the head (delay), or for the body after its first bytes (stall).
            try await Task.sleep(for: .milliseconds(300))
            let cancelled = ContinuousClock.now
            tasks[0].cancel()
            let outcome = await call.value
            #expect(ContinuousClock.now - cancelled < .seconds(30), "the cancel ended the wait, not the server's 60 s")
            #expect(outcome.error?.code == .cancelled)
            #expect(!outcome.callerCancelled, "the caller's own task is not cancelled")
            #expect(session.getAllTasks().isEmpty)
        }
    }

    @Test func invalidateAndCancelEndsAnAsyncCallInFlight() async throws {
        try await TestServer.withServer { server in
            let session = try makeSession(.default, delegate: nil, trusting: server)
            let call = Task { try await session.data(for: request(server.url("/bytes/100000?delay_ms=60000"))) }
            for _ in 0..<500 where session.getAllTasks().isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(300))
            session.invalidateAndCancel()
            do {
                _ = try await call.value
                Issue.record("the call finished despite invalidateAndCancel")
            } catch let error as FerryError {
                #expect(error.code == .cancelled)
            }
        }
    }

    @Test func resourceTimeoutEndsASlowDownloadWithResumeData() async throws {
        // The body is held after 100 kB by a gate that never opens, so the timeout fires mid-transfer.
        // How long the first bytes take on a loaded machine is not the test's to choose: an attempt in
        // which the delegate heard of no byte before the timeout proves nothing, and is made again with a
        // longer timeout.
        try await TestServer.withServer { server in
            for seconds in [1.0, 4, 16] {
                var configuration = SessionConfiguration.default
                configuration.timeoutIntervalForResource = seconds
                let session = try makeSession(configuration, trusting: server)
                defer { session.invalidateAndCancel() }
                let recorder = Recorder()
                do {
                    _ = try await session.download(
                        for: request(server.url("/bytes/5000000?stall_after=100000&gate=never")),
                        delegate: recorder
                    )
                    Issue.record("the resource timeout did not fire")
                    return
                } catch let error as FerryError {
                    // The partial file is kept for the resume data, which this test does not use.
                    defer { if let partial = error.resumeData?.partialFilePath { try? FileManager.default.removeItem(atPath: partial) } }
                    #expect(error.code == .timedOut)
                    let written = recorder.events.compactMap { event -> Int64? in
                        if case .wrote(_, let total, _) = event { return total }
                        return nil
                    }.max() ?? 0
                    if written == 0 && error.resumeData == nil { continue }
                    #expect(written > 0)
                    #expect((error.resumeData?.bytesReceived ?? 0) >= written)
                    return
                }
            }
            Issue.record("no byte arrived in three tries (1, 4 and 16 s)")
        }
    }

    @Test func requestIdleTimeoutEndsAStalledTransfer() async throws {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = 0.5
        try await withSession(configuration) { server, session in
            do {
                // Held at a gate, not for a while: a stall that ends can beat a starved reader's timeout.
                _ = try await session.data(for: request(server.url("/bytes/100000?gate=idle&stall_after=1000")))
                Issue.record("the idle timeout did not fire")
            } catch let error as FerryError {
                #expect(error.code == .timedOut)
            }
            server.openGate("idle")
        }
    }

    @Test func connectionsAreReusedWithinASession() async throws {
        try await withSession { server, session in
            for index in 0..<20 {
                _ = try await session.data(for: request(server.url("/bytes/100?seed=\(index)")))
            }
            #expect(server.counters.connectionsAccepted == 1)
        }
    }

    @Test func backgroundConfigurationsWithoutADelegateAreRefused() async throws {
        try await TestServer.withServer { server in
            let session = Session(configuration: .background(identifier: "x"))
            defer { session.invalidateAndCancel() }
            do {
                _ = try await session.data(for: request(server.url("/bytes/10")))
                Issue.record("a background session ran in-process")
            } catch let error as FerryError {
                #expect(error.code == .invalidOperation)
                #expect(error.message.contains("delegate"))
            }
        }
    }

    @Test func taskDescriptionAndPriorityAreKept() async throws {
        try await withSession { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/10")))
            task.taskDescription = "mine"
            task.priority = 2  // clamped
            #expect(task.taskDescription == "mine")
            #expect(task.priority == 1)
            let other = session.dataTask(with: request(server.url("/bytes/10")))
            #expect(other.taskIdentifier != task.taskIdentifier)
            task.cancel()
            other.cancel()
        }
    }
}
