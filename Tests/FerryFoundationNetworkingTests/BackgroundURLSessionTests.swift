import Ferry
import FerryFoundationNetworking
import FerryTestServer
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Background URLSessions in the seeds' style, on a ferryd of the test's own (FERRY_HOME in /tmp): an
/// NSObject delegate gets the file and the completion; a session made again with the same identifier
/// gets what happened while no session was attached, then urlSessionDidFinishEvents.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BackgroundURLSessionTests {
    final class Delegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
        let events = Mutex<[String]>([])
        let finished = Mutex<[CheckedContinuation<Void, Never>]>([])
        let saved = Mutex<Data?>(nil)
        private let doneEvents = Mutex(false)

        private func note(_ line: String) { events.withLock { $0.append(line) } }

        func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
            // The file is removed when this returns: keep its bytes.
            saved.withLock { $0 = try? Data(contentsOf: location) }
            note("didFinishDownloading \(downloadTask.taskDescription ?? "-")")
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            note("didComplete \((error as NSError?)?.code ?? 0)")
        }

        func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
            note("didBecomeInvalid")
        }

        func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
            note("didFinishEvents")
            doneEvents.withLock { $0 = true }
        }

        func has(_ line: String) -> Bool { events.withLock { $0.contains(line) } }
    }

    /// A ferryd of this test's own, stopped at the end.
    private func withDaemon(_ body: (DaemonClient) async throws -> Void) async throws {
        let home = "/tmp/ferry-u-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let client = DaemonClient(paths: try DaemonPaths(environment: ["FERRY_HOME": home]))
        defer { try? FileManager.default.removeItem(atPath: home) }
        try await client.ensureRunning(timeout: 60)
        do {
            try await body(client)
        } catch {
            if let pid = await client.status()?.pid { kill(pid, SIGTERM) }
            throw error
        }
        if let pid = await client.status()?.pid {
            kill(pid, SIGTERM)
            try await eventually("ferryd exits") { kill(pid, 0) != 0 }
        }
    }

    /// Waits for `condition`; the bound only tells waiting from hanging. (Alone on a loaded machine the
    /// re-attach test takes 1.4 s; inside a loaded full suite, where other ferryd tests took 75–100 s,
    /// its replay wait passed 90 s twice.)
    private func eventually(_ what: @autoclosure () -> String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(180)
        while !(await condition()) {
            guard ContinuousClock.now < deadline else { throw WaitError(what: what()) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    struct WaitError: Error, CustomStringConvertible {
        let what: String
        var description: String { "gave up waiting: \(what)" }
    }

    @Test func aBackgroundDownloadReachesTheDelegate() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let delegate = Delegate()
                let session = URLSession(
                    configuration: .background(withIdentifier: "u.one"),
                    delegate: delegate,
                    delegateQueue: nil,
                    daemon: daemon
                )
                defer { session.finishTasksAndInvalidate() }
                let task = session.downloadTask(with: URL(string: server.url("/bytes/300000?seed=8"))!)
                task.taskDescription = "one"
                task.resume()
                try await eventually("didComplete") { delegate.has("didComplete 0") }
                #expect(delegate.events.withLock { $0 } == ["didFinishDownloading one", "didComplete 0"])
                #expect(delegate.saved.withLock { $0 } == Data(DeterministicBytes(seed: 8).bytes(offset: 0, count: 300_000)))
            }
        }
    }

    @Test func ferrydHoldsATaskUntilItsEarliestBeginDateAfterTheAppIsGone() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let delegate = Delegate()
                let session = URLSession(
                    configuration: .background(withIdentifier: "u.later"),
                    delegate: delegate,
                    delegateQueue: nil,
                    daemon: daemon
                )
                let task = session.downloadTask(with: URL(string: server.url("/bytes/5000?seed=3"))!)
                let begin = Date().addingTimeInterval(3)
                task.earliestBeginDate = begin
                task.resume()
                func info() async -> BackgroundTaskInfo? {
                    (try? await daemon.call("GET", "/v1/sessions/u.later/tasks") as [BackgroundTaskInfo])?.first
                }
                try await eventually("ferryd has the task with its date") { await info()?.earliestBeginTime != nil }
                let held = try #require(await info())
                let checkedAt = Date()
                #expect(abs(held.earliestBeginTime! - begin.timeIntervalSince1970) < 0.01)
                if checkedAt < begin {
                    // Read before the date (a loaded machine may be past it by now; then there is nothing
                    // to see here): nothing was asked of the server yet.
                    #expect(held.state == .pending)
                    #expect(server.counters.bodyBytesSent(path: "/bytes/5000") == 0)
                }
                // The app goes away: the hold is ferryd's, not this process's.
                session.finishTasksAndInvalidate()
                try await eventually("ferryd ran the task at its time") { await info()?.state == .completed }
                #expect(Date() >= begin)
                #expect(await info()?.error == nil)
                #expect(server.counters.bodyBytesSent(path: "/bytes/5000") == 5000)
            }
        }
    }

    @Test func aSessionMadeAgainGetsWhatHappenedMeanwhile() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let url = URL(string: server.url("/bytes/200000?seed=4&gate=g1&stall_after=1000"))!
                let first = Delegate()
                let before = URLSession(configuration: .background(withIdentifier: "u.again"), delegate: first, delegateQueue: nil, daemon: daemon)
                let task = before.downloadTask(with: url)
                task.taskDescription = "kept"
                task.resume()
                try await eventually("the transfer started") { server.counters.bodyBytesSent(path: "/bytes/200000") >= 1000 }
                // The app goes away; ferryd goes on.
                before.finishTasksAndInvalidate()
                server.openGate("g1")
                try await eventually("ferryd finished the task") {
                    (try? await daemon.call("GET", "/v1/sessions/u.again/tasks") as [BackgroundTaskInfo])?.first?.state == .completed
                }
                #expect(!first.has("didComplete 0"))
                // As Apple asks: the old session is invalid before another takes its identifier.
                try await eventually("the first session became invalid") { first.has("didBecomeInvalid") }
                let second = Delegate()
                let after = URLSession(configuration: .background(withIdentifier: "u.again"), delegate: second, delegateQueue: nil, daemon: daemon)
                defer { after.finishTasksAndInvalidate() }
                try await eventually("the events were replayed (so far: \(second.events.withLock { $0 }))") { second.has("didFinishEvents") }
                #expect(second.events.withLock { $0 } == ["didFinishDownloading kept", "didComplete 0", "didFinishEvents"])
                #expect(second.saved.withLock { $0 } == Data(DeterministicBytes(seed: 4).bytes(offset: 0, count: 200_000)))
            }
        }
    }
}
