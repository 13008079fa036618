import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// The async forms of the delegate methods (Apple's): a delegate may implement them instead of the
/// completion-handler forms, and a task's delegate that implements neither falls back to the session's.
@Suite struct AsyncDelegateTests {
    final class AsyncOnly: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let seen = Mutex<[String]>([])
        let done = SamenessPrograms.Waiter<(any Error)?>()
        let disposition: URLSession.ResponseDisposition

        init(disposition: URLSession.ResponseDisposition = .allow) { self.disposition = disposition }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest
        ) async -> URLRequest? {
            seen.withLock { $0.append("redirect \(response.statusCode)") }
            var changed = request
            changed.setValue("async", forHTTPHeaderField: "X-Changed")
            return changed
        }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            didReceive challenge: URLAuthenticationChallenge
        ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
            seen.withLock { $0.append("challenge \(challenge.protectionSpace.realm ?? "-")") }
            return (.useCredential, URLCredential(user: "ann", password: "s3cret", persistence: .forSession))
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse) async -> URLSession.ResponseDisposition {
            seen.withLock { $0.append("response \((response as? HTTPURLResponse)?.statusCode ?? 0)") }
            return disposition
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            done.finish(error)
        }
    }

    /// A task delegate that implements nothing but completion.
    final class Silent: NSObject, URLSessionTaskDelegate, @unchecked Sendable {}

    @Test func anAsyncDelegateAnswersRedirectsChallengesAndResponses() async throws {
        try await TestServer.withServer { server in
            let delegate = AsyncOnly()
            let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: URL(string: server.url("/redirect/1?to=/basic-auth/ann/s3cret"))!).resume()
            #expect(await delegate.done.value() == nil)
            #expect(delegate.seen.withLock { $0 } == ["redirect 302", "challenge ferry-testserver", "response 200"])
        }
    }

    @Test func anAsyncCancelDispositionCancels() async throws {
        try await TestServer.withServer { server in
            let delegate = AsyncOnly(disposition: .cancel)
            let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: URL(string: server.url("/bytes/200000"))!).resume()
            let error = await delegate.done.value()
            #expect((error as? URLError)?.code == .cancelled)
        }
    }

    @Test func aTaskDelegateWithNothingFallsBackToTheSessionsAsyncForm() async throws {
        try await TestServer.withServer { server in
            let sessionDelegate = AsyncOnly()
            let session = URLSession(configuration: .ephemeral, delegate: sessionDelegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let waiter = SamenessPrograms.Waiter<Int>()
            let task = session.dataTask(with: URL(string: server.url("/redirect/1?to=/bytes/10"))!) { data, _, _ in
                waiter.finish(data?.count ?? -1)
            }
            task.delegate = Silent()
            task.resume()
            #expect(await waiter.value() == 10)
            #expect(sessionDelegate.seen.withLock { $0 } == ["redirect 302"])
        }
    }
}
