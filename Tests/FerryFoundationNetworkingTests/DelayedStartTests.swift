import FerryFoundationNetworking
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// earliestBeginDate: the request is not sent before the date, and willBeginDelayedRequest decides.
@Suite struct DelayedStartTests {
    final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let asked = Mutex<Date?>(nil)
        let completed = Mutex<(any Error)??>(nil)
        let disposition: URLSession.DelayedRequestDisposition

        init(_ disposition: URLSession.DelayedRequestDisposition) { self.disposition = disposition }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            willBeginDelayedRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
        ) {
            asked.withLock { $0 = Date() }
            completionHandler(disposition, nil)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            completed.withLock { $0 = .some(error) }
        }
    }

    private func waitForCompletion(_ delegate: Delegate) async throws -> (any Error)? {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if let done = delegate.completed.withLock({ $0 }) { return done }
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test(arguments: [URLSession.DelayedRequestDisposition.continueLoading, .cancel])
    func aTaskWaitsForItsDateAndTheDelegateDecides(disposition: URLSession.DelayedRequestDisposition) async throws {
        try await TestServer.withServer { server in
            let delegate = Delegate(disposition)
            let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let task = session.dataTask(with: URL(string: server.url("/bytes/100"))!)
            let date = Date().addingTimeInterval(0.3)
            task.earliestBeginDate = date
            task.resume()
            #expect(task.state == .running)
            let error = try await waitForCompletion(delegate)
            let asked = try #require(delegate.asked.withLock { $0 })
            #expect(asked >= date)
            if disposition == .cancel {
                #expect((error as? URLError)?.code == .cancelled)
                #expect(server.counters.bodyBytesSent(path: "/bytes/100") == 0)
            } else {
                #expect(error == nil)
                #expect(task.countOfBytesReceived == 100)
            }
        }
    }
}
