import Ferry
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The delegate of the data task behind `bytes(for:delegate:)`: the response and the body go to the
/// caller's ``URLSession/AsyncBytes``, every task-level event to the caller's task delegate (redirects,
/// challenges, progress, metrics, completion), as Apple's `bytes(for:delegate:)` does.
///
/// The body waits here until it is read; past ``highWater`` bytes the task is suspended (so the
/// connection stops being read and TCP holds the server back), and it resumes once the reader has
/// brought it below ``lowWater``.
final class BytesTaskDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    static let highWater = 4 << 20
    static let lowWater = 1 << 20

    private let user: (any URLSessionTaskDelegate)?
    private let lock = NSLock()
    /// The response, or the error that came instead; the first settles it.
    private let head = OutcomeSlot<Carried<Result<URLResponse, any Error>>>()
    private var buffered = 0
    private var paused = false
    /// Set once the task exists; let go when it completes (the task holds this delegate).
    private var task: URLSessionDataTask?
    let body: AsyncThrowingStream<Data, any Error>
    private let feed: AsyncThrowingStream<Data, any Error>.Continuation

    init(user: (any URLSessionTaskDelegate)?) {
        self.user = user
        (body, feed) = AsyncThrowingStream.makeStream(of: Data.self)
        super.init()
    }

    /// Starts `task` and returns its response once the head has arrived.
    func start(_ task: URLSessionDataTask) async throws -> URLResponse {
        lock.withLock { self.task = task }
        // A reader that stops reading (its Swift task cancelled, or the sequence dropped) ends the transfer.
        feed.onTermination = { [weak task] ending in
            if case .cancelled = ending { task?.cancel() }
        }
        return try await withTaskCancellationHandler {
            task.resume()
            return try await head.value().value.get()
        } onCancel: {
            task.cancel()
        }
    }

    /// The reader took `count` bytes: the task resumes once few enough wait.
    func consumed(_ count: Int) {
        let resume = lock.withLock { () -> URLSessionDataTask? in
            buffered -= count
            guard paused, buffered < Self.lowWater else { return nil }
            paused = false
            return task
        }
        resume?.resume()
    }

    private func settleHead(_ result: Result<URLResponse, any Error>) {
        head.set(Carried(value: result))
    }

    // MARK: The response and its body

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse) async -> URLSession.ResponseDisposition {
        settleHead(.success(response))
        return .allow
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let pause = lock.withLock { () -> Bool in
            buffered += data.count
            guard !paused, buffered > Self.highWater else { return false }
            paused = true
            return true
        }
        feed.yield(data)
        if pause { dataTask.suspend() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        settleHead(.failure(error ?? URLError(.badServerResponse)))
        if let error { feed.finish(throwing: error) } else { feed.finish() }
        lock.withLock { self.task = nil }
        user?.urlSession(session, task: task, didCompleteWithError: error)
    }

    // MARK: Task-level events, to the caller's task delegate

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest? {
        guard let user else { return request }
        return await user.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard let user else { return (.performDefaultHandling, nil) }
        return await user.urlSession(session, task: task, didReceive: challenge)
    }

    func urlSession(_ session: URLSession, needNewBodyStreamForTask task: URLSessionTask) async -> InputStream? {
        await user?.urlSession(session, needNewBodyStreamForTask: task)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willBeginDelayedRequest request: URLRequest
    ) async -> (URLSession.DelayedRequestDisposition, URLRequest?) {
        guard let user else { return (.continueLoading, nil) }
        return await user.urlSession(session, task: task, willBeginDelayedRequest: request)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        user?.urlSession(
            session,
            task: task,
            didSendBodyData: bytesSent,
            totalBytesSent: totalBytesSent,
            totalBytesExpectedToSend: totalBytesExpectedToSend
        )
    }

    func urlSession(_ session: URLSession, taskIsWaitingForConnectivity task: URLSessionTask) {
        user?.urlSession(session, taskIsWaitingForConnectivity: task)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceiveInformationalResponse response: HTTPURLResponse) {
        user?.urlSession(session, task: task, didReceiveInformationalResponse: response)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        user?.urlSession(session, task: task, didFinishCollecting: metrics)
    }
}
