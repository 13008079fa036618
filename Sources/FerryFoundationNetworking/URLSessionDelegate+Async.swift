public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

// The async forms' defaults: each calls the completion-handler form on the session's delegate queue and
// waits for its first answer. The session asks the async form, so a delegate may implement either: the
// async one is called as it is, the completion-handler one through these defaults.

extension URLSession {
    /// Runs `body` on the delegate queue and waits for the answer it passes to its completion handler
    /// (the first: a second call is ignored).
    func answerOnDelegateQueue<T>(_ body: @escaping (@escaping @Sendable (T) -> Void) -> Void) async -> T {
        let carried = Carried(value: body)
        let answer = await withCheckedContinuation { (continuation: CheckedContinuation<Carried<T>, Never>) in
            let once = Mutex<CheckedContinuation<Carried<T>, Never>?>(continuation)
            delegateQueue.addOperation {
                carried.value { value in
                    once.withLock { pending in
                        pending?.resume(returning: Carried(value: value))
                        pending = nil
                    }
                }
            }
        }
        return answer.value
    }
}

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let carried = Carried(value: (self, challenge))
        let answer: Carried<(URLSession.AuthChallengeDisposition, URLCredential?)> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, didReceive: carried.value.1) { done(Carried(value: ($0, $1))) }
        }
        return answer.value
    }
}

extension URLSessionTaskDelegate {
    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest
    ) async -> (URLSession.DelayedRequestDisposition, URLRequest?) {
        let carried = Carried(value: (self, task, request))
        let answer: Carried<(URLSession.DelayedRequestDisposition, URLRequest?)> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, task: carried.value.1, willBeginDelayedRequest: carried.value.2) { done(Carried(value: ($0, $1))) }
        }
        return answer.value
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest? {
        let carried = Carried(value: (self, task, response, request))
        let answer: Carried<URLRequest?> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, task: carried.value.1, willPerformHTTPRedirection: carried.value.2, newRequest: carried.value.3) {
                done(Carried(value: $0))
            }
        }
        return answer.value
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let carried = Carried(value: (self, task, challenge))
        let answer: Carried<(URLSession.AuthChallengeDisposition, URLCredential?)> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, task: carried.value.1, didReceive: carried.value.2) { done(Carried(value: ($0, $1))) }
        }
        return answer.value
    }

    public func urlSession(_ session: URLSession, needNewBodyStreamForTask task: URLSessionTask) async -> InputStream? {
        let carried = Carried(value: (self, task))
        let answer: Carried<InputStream?> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, task: carried.value.1) { done(Carried(value: $0)) }
        }
        return answer.value
    }
}

extension URLSessionDataDelegate {
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse) async -> URLSession.ResponseDisposition {
        let carried = Carried(value: (self, dataTask, response))
        return await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, dataTask: carried.value.1, didReceive: carried.value.2, completionHandler: done)
        }
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse
    ) async -> CachedURLResponse? {
        let carried = Carried(value: (self, dataTask, proposedResponse))
        let answer: Carried<CachedURLResponse?> = await session.answerOnDelegateQueue { done in
            carried.value.0.urlSession(session, dataTask: carried.value.1, willCacheResponse: carried.value.2) { done(Carried(value: $0)) }
        }
        return answer.value
    }
}
