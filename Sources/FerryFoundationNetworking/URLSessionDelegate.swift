public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension URLSession {
    /// How to answer an authentication challenge.
    public enum AuthChallengeDisposition: Int, Sendable {
        /// Use the credential given (nil: continue without one).
        case useCredential = 0
        /// As if the delegate did not implement the method.
        case performDefaultHandling = 1
        /// Cancel the task (`URLError.cancelled`).
        case cancelAuthenticationChallenge = 2
        /// Do not answer this protection space: the 401 is the response.
        case rejectProtectionSpace = 3
    }

    /// What a data task does with its response.
    public enum ResponseDisposition: Int, Sendable {
        /// Cancel the task.
        case cancel = 0
        /// Read the body.
        case allow = 1
        /// Write the body to a file: the task becomes a download task.
        case becomeDownload = 2
        /// The connection becomes a stream task (`didBecome streamTask`), after the response's head.
        case becomeStream = 3
    }

    /// What a task delayed by `earliestBeginDate` does when its time comes.
    public enum DelayedRequestDisposition: Int, Sendable {
        /// Send the original request.
        case continueLoading = 0
        /// Send the request given instead.
        case useNewRequest = 1
        /// Cancel the task.
        case cancel = 2
    }
}

/// Session-wide events (Apple's `URLSessionDelegate`). Every method has a default; implement those
/// you need. Calls arrive on the session's `delegateQueue`, one at a time, in order.
public protocol URLSessionDelegate: NSObjectProtocol, Sendable {
    /// The last message of a session: it was invalidated (error nil) or failed as a whole.
    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?)

    /// A connection-level challenge. Ferry evaluates server trust itself (its TLS settings and pins), so
    /// this is asked for nothing today; the default performs default handling.
    func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    )

    /// A background session delivered every event that waited for this process
    /// (handleEventsForBackgroundURLSession's end).
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)

    /// The async form of the connection-level challenge: implement one form or the other. The default
    /// calls the completion-handler form on the delegate queue and waits for its answer.
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (URLSession.AuthChallengeDisposition, URLCredential?)
}

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {}

    public func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}

/// One task's events (Apple's `URLSessionTaskDelegate`). A task's own ``URLSessionTask/delegate``
/// hears them first; what it does not implement goes to the session's delegate.
public protocol URLSessionTaskDelegate: URLSessionDelegate {
    /// The task was made.
    func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask)

    /// A task with an `earliestBeginDate` is about to start.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
    )

    /// The task waits for a network it may use (`waitsForConnectivity`).
    func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask)

    /// A redirect is about to be followed: pass the request (changed or not) to follow it, or nil to
    /// make the redirect response the task's response.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    )

    /// The server asked for credentials (Basic or Digest).
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    )

    /// A fresh body stream for a request whose body is a stream (the first one, and again after a 307
    /// or 308 redirect or a challenge).
    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void)

    /// Upload progress.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    )

    /// An informational answer (1xx other than 101: 103 Early Hints, 100 Continue) came before the
    /// final response, in the order they came and before `didReceive response` (HTTP/1.1 and HTTP/2;
    /// not for background sessions, whose transfers ferryd runs).
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse)

    /// The task's metrics, just before it completes.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics)

    /// The last message of a task: error nil on success, else a `URLError`.
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?)

    // The async forms (Apple's): implement one form or the other. Each default calls the
    // completion-handler form on the delegate queue and waits for its answer.

    /// The async form of `willBeginDelayedRequest`.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest
    ) async -> (URLSession.DelayedRequestDisposition, URLRequest?)

    /// The async form of `willPerformHTTPRedirection`: the request to send, or nil to stop at the 3xx.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest?

    /// The async form of a task's challenge.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// The async form of `needNewBodyStream`.
    func urlSession(_ session: URLSession, needNewBodyStreamForTask task: URLSessionTask) async -> InputStream?
}

extension URLSessionTaskDelegate {
    /// The session's delegate when `self` is `task`'s own delegate and the session has another one
    /// that takes task events: an event the task's delegate does not handle goes there.
    fileprivate func fallback(_ session: URLSession, _ task: URLSessionTask) -> (any URLSessionTaskDelegate)? {
        guard self === task.delegate, let other = session.delegate as? any URLSessionTaskDelegate, other !== self else { return nil }
        return other
    }

    public func urlSession(_ session: URLSession, didCreateTask task: URLSessionTask) {
        fallback(session, task)?.urlSession(session, didCreateTask: task)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLSession.DelayedRequestDisposition, URLRequest?) -> Void
    ) {
        guard let other = fallback(session, task) else { return completionHandler(.continueLoading, nil) }
        let carried = Carried(value: (other, task, request))
        Task {
            let answer = Carried(value: await carried.value.0.urlSession(session, task: carried.value.1, willBeginDelayedRequest: carried.value.2))
            completionHandler(answer.value.0, answer.value.1)
        }
    }

    public func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask) {
        fallback(session, task)?.urlSession(session, taskIsWaitingForConnectivity: task)
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let other = fallback(session, task) else { return completionHandler(request) }
        let carried = Carried(value: (other, task, response, request))
        Task {
            let answer = await carried.value.0.urlSession(session, task: carried.value.1, willPerformHTTPRedirection: carried.value.2, newRequest: carried.value.3)
            completionHandler(answer)
        }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let other = fallback(session, task) else { return completionHandler(.performDefaultHandling, nil) }
        let carried = Carried(value: (other, task, challenge))
        Task {
            let answer = Carried(value: await carried.value.0.urlSession(session, task: carried.value.1, didReceive: carried.value.2))
            completionHandler(answer.value.0, answer.value.1)
        }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        guard let other = fallback(session, task) else { return completionHandler(nil) }
        let carried = Carried(value: (other, task))
        Task { completionHandler(await carried.value.0.urlSession(session, needNewBodyStreamForTask: carried.value.1)) }
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        fallback(session, task)?.urlSession(
            session,
            task: task,
            didSendBodyData: bytesSent,
            totalBytesSent: totalBytesSent,
            totalBytesExpectedToSend: totalBytesExpectedToSend
        )
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse) {
        fallback(session, task)?.urlSession(session, task: task, didReceiveInformationalResponse: response)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        fallback(session, task)?.urlSession(session, task: task, didFinishCollecting: metrics)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        fallback(session, task)?.urlSession(session, task: task, didCompleteWithError: error)
    }
}

/// Events of tasks that hand their body over as data (Apple's `URLSessionDataDelegate`).
public protocol URLSessionDataDelegate: URLSessionTaskDelegate {
    /// The response head arrived: say what to do with the body. Nothing more arrives until the handler
    /// is called.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    )

    /// The data task became a download task (`.becomeDownload`): its events go to that task now.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask)

    /// Some of the body, in order; every byte arrives once.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data)

    /// The response is about to be stored in the cache: pass it (changed or not), or nil to store
    /// nothing.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    )

    /// The async form of the response's disposition.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse) async -> URLSession.ResponseDisposition

    /// The async form of `willCacheResponse`.
    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse
    ) async -> CachedURLResponse?

    /// The data task became `streamTask` (``URLSession/ResponseDisposition/becomeStream``): the
    /// connection, after the response's head, is the stream task's.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask)
}

extension URLSessionDataDelegate {
    fileprivate func dataFallback(_ session: URLSession, _ task: URLSessionTask) -> (any URLSessionDataDelegate)? {
        guard self === task.delegate, let other = session.delegate as? any URLSessionDataDelegate, other !== self else { return nil }
        return other
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let other = dataFallback(session, dataTask) else { return completionHandler(.allow) }
        let carried = Carried(value: (other, dataTask, response))
        Task { completionHandler(await carried.value.0.urlSession(session, dataTask: carried.value.1, didReceive: carried.value.2)) }
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome downloadTask: URLSessionDownloadTask) {
        dataFallback(session, dataTask)?.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask) {
        dataFallback(session, dataTask)?.urlSession(session, dataTask: dataTask, didBecome: streamTask)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        dataFallback(session, dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    public func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        guard let other = dataFallback(session, dataTask) else { return completionHandler(proposedResponse) }
        let carried = Carried(value: (other, dataTask, proposedResponse))
        Task { completionHandler(await carried.value.0.urlSession(session, dataTask: carried.value.1, willCacheResponse: carried.value.2)) }
    }
}

/// Events of download tasks (Apple's `URLSessionDownloadDelegate`).
public protocol URLSessionDownloadDelegate: URLSessionTaskDelegate {
    /// The download finished: the file at `location` is removed when this returns, so move or open it
    /// first. `urlSession(_:task:didCompleteWithError:)` follows.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL)

    /// Bytes were written to the file.
    func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    )

    /// A download made from resume data continues at `fileOffset` (0: it started over).
    func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    )
}

extension URLSessionDownloadDelegate {
    public func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {}

    public func urlSession(
        _ session: URLSession,
        downloadTask: URLSessionDownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) {}
}
