import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Background sessions against a real ferryd (started on demand, as the library does) and real
/// processes and signals (SPEC S6, docs/BACKGROUND.md).
@Suite(.serialized) struct BackgroundSessionTests {
    @Test func resumeAndSuspendNeverWaitForTheDaemon() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.nowait"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                let task = session.downloadTask(with: request(server.url("/bytes/300000?seed=8")))
                // A daemon that does not answer (stopped): the calls return at once and their requests
                // wait, in order, instead of holding the caller's thread for the 30 s call timeout.
                let pid = try await daemon.pid()
                kill(pid, SIGSTOP)
                let started = ContinuousClock.now
                task.resume()
                task.suspend()
                task.resume()
                let took = ContinuousClock.now - started
                kill(pid, SIGCONT)
                #expect(took < .seconds(5), "resume and suspend took \(took)")
                await task.waitUntilFinished()
                #expect(task.error == nil)
                #expect(task.countOfBytesReceived == 300_000)
            }
        }
    }

    @Test func aSessionMadeWhileFerrydIsStoppedNeitherBlocksNorHangs() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let pid = try await daemon.pid()
                kill(pid, SIGSTOP)
                defer { kill(pid, SIGCONT) }
                // Creating the session, a task, and resuming it return at once: nothing waits for ferryd.
                let started = ContinuousClock.now
                let session = Session(
                    configuration: .background(identifier: "t.stopped"),
                    delegate: Recorder(),
                    daemon: daemon.client
                )
                let task = session.downloadTask(with: request(server.url("/bytes/1000")))
                task.resume()
                let took = ContinuousClock.now - started
                // Without waiting for the stopped daemon (its status call alone waits 5 s); loose for a loaded machine.
                #expect(took < .seconds(4), "making the session and its task took \(took)")
                #expect(task.taskIdentifier > 0)
                // The daemon does not answer: the task fails with a clear error instead of hanging.
                let ended = ContinuousClock.now
                await task.waitUntilFinished()
                // Bounded by the client's call timeouts (30 s each), not by the machine: on a loaded one the
                // failure has come after two of them (60.1 s). The bound only tells waiting from hanging.
                #expect(ContinuousClock.now - ended < .seconds(90))
                #expect(task.error?.code == .backgroundSessionWasDisconnected)
                #expect(task.error?.message.contains("does not answer") == true, "\(task.error?.message ?? "")")
                session.invalidateAndCancel()
            }
        }
    }

    @Test func aBackgroundDownloadIsDeliveredInOrderWithItsFile() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.deliver"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                let task = session.downloadTask(with: request(server.url("/bytes/2000000?seed=3&throttle=4000000")))
                // Named at once, without waiting for ferryd: past any identifier an earlier process used.
                #expect(task.taskIdentifier > 1)
                #expect(task.state == .suspended)
                task.resume()
                await task.waitUntilFinished()
                #expect(task.error == nil)
                #expect(task.response?.statusCode == 200)
                #expect(task.countOfBytesReceived == 2_000_000)
                let events = recorder.events(of: task.taskIdentifier)
                #expect(collapsed(events) == ["wrote", "finished", "complete"])
                #expect(
                    events.contains(
                        .finished(task: task.taskIdentifier, sha256: expectedSHA256(2_000_000, seed: 3), existedDuringCallback: true)
                    )
                )
                // The delivered file is gone once the event is acknowledged (S2.7, D2).
                let delivered = try FileManager.default.contentsOfDirectory(atPath: daemon.home + "/deliver")
                try await eventually("the delivered file is removed") {
                    (try? FileManager.default.contentsOfDirectory(atPath: daemon.home + "/deliver"))?.isEmpty == true
                }
                _ = delivered
            }
        }
    }

    @Test func whatABackgroundSessionDoesNotRunIsRefusedClearly() async throws {
        try await withDaemon { daemon in
            let recorder = Recorder()
            let session = Session(
                configuration: .background(identifier: "t.refuse"),
                delegate: recorder,
                daemon: daemon.client
            )
            defer { session.finishTasksAndInvalidate() }
            let data = session.dataTask(with: request("http://127.0.0.1:1/x"))
            let fromData = session.uploadTask(with: request("http://127.0.0.1:1/x"), from: Data([1, 2, 3]))
            let ftp = session.downloadTask(with: request("ftp://127.0.0.1/x"))
            for task in [data, fromData, ftp] {
                task.resume()
                await task.waitUntilFinished()
            }
            #expect(data.error?.code == .invalidOperation)
            #expect(data.error?.message.contains("background") == true)
            #expect(fromData.error?.code == .invalidOperation)
            #expect(ftp.error?.code == .unsupportedURL)
            await #expect(throws: FerryError.self) { _ = try await session.data(for: request("http://127.0.0.1:1/x")) }
            await #expect(throws: FerryError.self) {
                _ = try await session.download(for: request("http://127.0.0.1:1/x"))
            }
            // Nothing of it reached the daemon.
            let reached = try await daemon.tasks("t.refuse")
            #expect(reached.isEmpty)

            let noDelegate = Session(configuration: .background(identifier: "t.refuse2"), delegate: nil)
            let orphan = noDelegate.downloadTask(with: request("http://127.0.0.1:1/x"))
            orphan.resume()
            await orphan.waitUntilFinished()
            #expect(orphan.error?.message.contains("delegate") == true)
        }
    }

    @Test func anIdentifierInUseIsRefusedHereAndByTheDaemon() async throws {
        try await withDaemon { daemon in
            let first = Session(
                configuration: .background(identifier: "t.busy"),
                delegate: Recorder(),
                daemon: daemon.client
            )
            let second = Session(
                configuration: .background(identifier: "t.busy"),
                delegate: Recorder(),
                daemon: daemon.client
            )
            let refused = second.downloadTask(with: request("http://127.0.0.1:1/x"))
            refused.resume()
            await refused.waitUntilFinished()
            #expect(refused.error?.code == .backgroundSessionInUseByAnotherProcess)

            // Another attach to the daemon (as another process would make) is refused while the first holds it.
            let other = DaemonClient(paths: daemon.client.paths)
            _ = await first.allTasks  // returns once the first session has attached
            await #expect(throws: FerryError.self) {
                do {
                    _ = try await other.call(
                        "POST",
                        "/v1/sessions/t.busy/attach",
                        timeout: 5,
                        as: [String: String].self
                    )
                } catch let error as FerryError {
                    #expect(error.code == .backgroundSessionInUseByAnotherProcess)
                    #expect(error.message.contains("in use by another process"))
                    throw error
                }
            }
            first.finishTasksAndInvalidate()
            second.finishTasksAndInvalidate()
        }
    }

    @Test func invalidateAndCancelResetsTheIdentifier() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.reset"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                // Held after 100 kB (a gate never opened): still running when the session is cancelled.
                let slow = session.downloadTask(with: request(server.url("/bytes/5000000?stall_after=100000&gate=never")))
                slow.resume()
                try await eventually("the transfer runs") { slow.countOfBytesReceived > 0 }
                session.invalidateAndCancel()
                await slow.waitUntilFinished()
                #expect(slow.error?.code == .cancelled)
                try await eventually("the session is invalid") { recorder.events.contains(.invalid) }
                let left = try await daemon.tasks("t.reset")
                #expect(left.isEmpty)

                let again = Session(
                    configuration: .background(identifier: "t.reset"),
                    delegate: Recorder(),
                    daemon: daemon.client
                )
                defer { again.finishTasksAndInvalidate() }
                #expect(await again.allTasks.isEmpty, "the daemon forgot the session's tasks")
                let fresh = again.downloadTask(with: request(server.url("/bytes/10")))
                fresh.resume()
                await fresh.waitUntilFinished()
                #expect(fresh.error == nil)
            }
        }
    }
}
