@testable import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// What a finished task leaves behind: nothing. (A wrapper kept by its engine task's completion route,
/// or made again for metrics that came after the completion, kept 1 GB alive over 20,000 requests.)
@Suite struct FinishedTasksAreFreedTests {
    final class Weak: @unchecked Sendable {
        weak var task: URLSessionTask?
    }

    final class Listener: NSObject, URLSessionTaskDelegate, @unchecked Sendable {}

    /// With a delegate, the task's events (metrics among them) go through the bridge too.
    @Test(arguments: [false, true])
    func aCompletionHandlerTaskIsFreedOnceItHasEnded(withDelegate: Bool) async throws {
        try await FerryTestServer.TestServer.withServer { server in
            let session = URLSession(configuration: .ephemeral, delegate: withDelegate ? Listener() : nil, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let weak = Weak()
            let done = SamenessOnFerry.SamenessPrograms.Waiter<Int>()
            do {
                let task = session.dataTask(with: URL(string: server.url("/bytes/1000"))!) { data, _, _ in done.finish(data?.count ?? -1) }
                weak.task = task
                task.resume()
            }
            #expect(await done.value() == 1000)
            // The engine lets go of its task once the completion has run: wait for that, not for a time.
            let deadline = ContinuousClock.now + .seconds(60)
            while weak.task != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(weak.task == nil, "the finished task is still alive")
            #expect(session.state.withLock { $0.tasks.isEmpty })
        }
    }

    /// Hears of the task an async method makes (didCreateTask), keeping it only weakly.
    final class Creation: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let weak = Weak()
        let seen = SamenessOnFerry.SamenessPrograms.Waiter<Bool>()
        func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {
            weak.task = task
            seen.finish(true)
        }
    }

    /// An async call's task holds its completion, which holds the call's state; that state lets go of
    /// the task when the result comes (a cycle there kept every task of `data(for:)`).
    @Test func anAsyncCallsTaskIsFreedOnceItHasEnded() async throws {
        try await FerryTestServer.TestServer.withServer { server in
            let creation = Creation()
            let session = URLSession(configuration: .ephemeral, delegate: creation, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let (data, _) = try await session.data(from: URL(string: server.url("/bytes/1000"))!)
            #expect(data.count == 1000)
            #expect(await creation.seen.value())
            let deadline = ContinuousClock.now + .seconds(60)
            while creation.weak.task != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(creation.weak.task == nil, "the finished task is still alive")
            #expect(session.state.withLock { $0.tasks.isEmpty })
        }
    }
}
