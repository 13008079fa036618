public import Foundation

/// Session-level events (URLSessionDelegate). The session holds its delegate strongly until it is
/// invalidated. Every method has a default that does nothing; implement what you need.
///
/// Calls arrive one at a time, in order (SPEC S1.6): the next waits until the current one returns.
public protocol SessionDelegate: AnyObject, Sendable {
    /// The session is invalid: every task has ended and the delegate is released after this call.
    func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async

    /// A background session has delivered every event that waited while no client was attached
    /// (URLSession's urlSessionDidFinishEvents(forBackgroundURLSession:), SPEC S6.3). Sent once after
    /// such a replay; a launched client signals here that its work is done.
    func sessionDidFinishEvents(forBackgroundSession session: Session) async

    /// A new TLS connection's certificate chain, after Ferry's own evaluation
    /// (`ServerTrustChallenge/defaultEvaluationFailure` says what it found): trust it, reject it, or
    /// let the evaluation decide (the default). Asked once per connection, for in-process sessions;
    /// pinned keys apply whatever the answer.
    func session(_ session: Session, didReceive challenge: ServerTrustChallenge) async -> ServerTrustDisposition
}

/// Events of one task (URLSessionTaskDelegate). Set as the session's delegate, or as one task's
/// ``SessionTask/delegate`` (which then comes first for that task).
public protocol TaskDelegate: SessionDelegate {
    /// A redirect is about to be followed: return `newRequest` (possibly changed) to follow it, or nil to
    /// stop and deliver the redirect response as the result. Default: follow.
    func session(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: Response,
        newRequest: Request
    ) async -> Request?

    /// A server asked for credentials (a 401 with a Basic or Digest challenge): answer with
    /// `ChallengeDisposition/useCredential(_:)` to send the request again with them. Asked again, with
    /// a higher `AuthenticationChallenge/previousFailureCount`, when they are refused. Default:
    /// `ChallengeDisposition/performDefaultHandling` (the 401 is the response).
    func session(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: AuthenticationChallenge
    ) async
        -> ChallengeDisposition

    /// Upload progress: `bytesSent` now, `totalBytesSent` in all, of `totalBytesExpectedToSend`
    /// (``Session/transferSizeUnknown`` when the body has no known length).
    func session(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) async

    /// The body of a task made with ``Session/uploadTask(withStreamedRequest:)``. Default: nil, which
    /// fails the task.
    func session(_ session: Session, needNewBodyStreamFor task: SessionTask) async -> RequestBodyStream?

    /// The task may not run on the network as it is now and waits for one it may use
    /// (URLSessionTaskDelegate's taskIsWaitingForConnectivity): offline, or a metered or constrained
    /// network its policy forbids, or on battery for a discretionary task. `reason` says which. Sent at
    /// most once per task: by ferryd for background tasks, and for in-process tasks of a session with
    /// `SessionConfiguration/waitsForConnectivity`.
    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask, reason: NetworkPolicy.WaitReason) async

    /// An informational answer (1xx other than 101: 103 Early Hints, 100 Continue) came before the
    /// final response (URLSessionTaskDelegate's didReceiveInformationalResponse), over HTTP/1.1 or
    /// HTTP/2, in the order they came and before the final response is handed over. Not sent for tasks
    /// ferryd runs (background sessions). A server that sends more than 64 before its answer fails the
    /// task with `FerryError.Code.badServerResponse`.
    func session(_ session: Session, task: SessionTask, didReceiveInformationalResponse response: Response) async

    /// The task's metrics, just before its completion.
    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async

    /// The task ended: `error` is nil on success. A download that can be continued carries
    /// `FerryError/resumeData`.
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async
}

/// Events of data and upload tasks (URLSessionDataDelegate).
public protocol DataDelegate: TaskDelegate {
    /// The response head arrived: say what to do with the body. Default: ``ResponseDisposition/allow``.
    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition

    /// The data task became `downloadTask` (``ResponseDisposition/becomeDownload``): the rest of its
    /// events go to the download task.
    func session(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) async

    /// The data task became `streamTask` (``ResponseDisposition/becomeStream``): the connection is the
    /// stream task's now, and its first bytes are the body's still unread ones. The data task reports
    /// nothing more.
    func session(_ session: Session, dataTask: DataTask, didBecome streamTask: StreamTask) async

    /// Some of the body, in order. Pieces may be merged; every byte arrives once.
    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async

    /// The whole body arrived and the session's HTTP cache is about to store the response
    /// (willCacheResponse): return it to store it, changed (its `storagePolicy`, say) or as it is, or nil
    /// to store nothing. Asked only for responses RFC 9111 lets the cache keep. Default: as proposed.
    func session(_ session: Session, dataTask: DataTask, willCacheResponse proposed: CachedResponse) async
        -> CachedResponse?
}

/// Events of download tasks (URLSessionDownloadDelegate).
public protocol DownloadDelegate: TaskDelegate {
    /// The download succeeded. The file at `location` is removed when this returns: move or open it
    /// first.
    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async

    /// Bytes were written: `bytesWritten` now, `totalBytesWritten` in all, of `totalBytesExpectedToWrite`
    /// (``Session/transferSizeUnknown`` when the server did not say).
    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async

    /// A download made from resume data continues at `fileOffset` (0 when the server's version changed
    /// or it ignored the range, so the download started over).
    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) async
}

/// What a data task does with a response (URLSession.ResponseDisposition).
public enum ResponseDisposition: Sendable, Hashable {
    /// Read the body.
    case allow
    /// Cancel the task.
    case cancel
    /// Write the body to a file: the task becomes a ``DownloadTask``.
    case becomeDownload
    /// Take the connection as a byte stream: the task becomes a ``StreamTask`` that reads what follows the
    /// response head. Only an HTTP/1.1 connection can be handed over, and only after a 101 answer or while
    /// a body that is not chunked is still streaming in; otherwise the data task fails with
    /// `FerryError/Code/invalidOperation` saying why. Only tasks whose events go to a delegate can
    /// become a stream task (an async call or a completion handler has no way to receive it).
    case becomeStream
}

extension SessionDelegate {
    public func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async {}
    public func sessionDidFinishEvents(forBackgroundSession session: Session) async {}
    public func session(_ session: Session, didReceive challenge: ServerTrustChallenge) async -> ServerTrustDisposition {
        .performDefaultHandling
    }
}

extension TaskDelegate {
    public func session(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: Response,
        newRequest: Request
    ) async -> Request? { newRequest }

    public func session(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) async {}

    public func session(_ session: Session, needNewBodyStreamFor task: SessionTask) async -> RequestBodyStream? { nil }

    public func session(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: AuthenticationChallenge
    ) async
        -> ChallengeDisposition
    { .performDefaultHandling }

    public func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask, reason: NetworkPolicy.WaitReason) async {}

    public func session(_ session: Session, task: SessionTask, didReceiveInformationalResponse response: Response) async {}

    public func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {}

    public func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {}
}

extension DataDelegate {
    public func session(
        _ session: Session,
        dataTask: DataTask,
        didReceive response: Response
    ) async
        -> ResponseDisposition
    { .allow }

    public func session(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) async {}

    public func session(_ session: Session, dataTask: DataTask, didBecome streamTask: StreamTask) async {}

    public func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {}

    public func session(
        _ session: Session,
        dataTask: DataTask,
        willCacheResponse proposed: CachedResponse
    ) async -> CachedResponse? { proposed }
}

extension DownloadDelegate {
    public func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async {}

    public func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) async {}
}
