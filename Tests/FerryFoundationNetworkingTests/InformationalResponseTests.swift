import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// `urlSession(_:task:didReceiveInformationalResponse:)`: each 103 Early Hints answer, as an
/// `HTTPURLResponse`, on the delegate queue, before `didReceive response`. FoundationNetworking has no
/// such delegate method, so this is checked against Apple's documentation, not in the sameness suite.
@Suite struct InformationalResponseTests {
    final class Listener: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let lock = NSLock()
        var events: [String] = []
        var offQueue = false
        let done = SamenessPrograms.Waiter<Void>()
        weak var queue: OperationQueue?

        func note(_ event: String) {
            lock.withLock {
                if OperationQueue.current !== queue { offQueue = true }
                events.append(event)
            }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse) {
            note("informational \(response.statusCode) \(response.value(forHTTPHeaderField: "link") ?? "-") \(response.url?.path ?? "-")")
        }

        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            note("response \((response as? HTTPURLResponse)?.statusCode ?? 0)")
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            note("complete \(error.map { "\(($0 as? URLError)?.code.rawValue ?? 0)" } ?? "ok")")
            done.finish(())
        }
    }

    @Test func earlyHintsArriveOnTheDelegateQueueBeforeTheResponse() async throws {
        try await TestServer.withServer { server in
            let listener = Listener()
            let session = URLSession(configuration: .ephemeral, delegate: listener, delegateQueue: nil)
            listener.queue = session.delegateQueue
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: URL(string: server.url("/bytes/64?early_hints=2"))!).resume()
            await listener.done.value()
            let events = listener.lock.withLock { listener.events }
            #expect(
                events == [
                    "informational 103 </hint-1.css>; rel=preload /bytes/64",
                    "informational 103 </hint-2.css>; rel=preload /bytes/64",
                    "response 200",
                    "complete ok",
                ]
            )
            #expect(!listener.lock.withLock { listener.offQueue }, "every call on the session's delegate queue")
        }
    }

    @Test func endlessInformationalAnswersFailTheTaskAsABadServerResponse() async throws {
        try await TestServer.withServer { server in
            let listener = Listener()
            let session = URLSession(configuration: .ephemeral, delegate: listener, delegateQueue: nil)
            listener.queue = session.delegateQueue
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: URL(string: server.url("/bytes/64?early_hints=65"))!).resume()
            await listener.done.value()
            let events = listener.lock.withLock { listener.events }
            #expect(events.filter { $0.hasPrefix("informational") }.count == 64)
            #expect(events.last == "complete \(URLError.Code.badServerResponse.rawValue)", "\(events.suffix(2))")
        }
    }
}
