import Ferry
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A value that crosses to the delegate queue and back (Apple's types there are not all Sendable).
struct Carried<T>: @unchecked Sendable {
    let value: T
}

/// Ferry's delegate for a ``URLSession``: each of Ferry's events becomes Apple's delegate call, made on
/// the session's `delegateQueue`. Ferry delivers one event at a time and waits for this one to return,
/// and this one waits until the call on the queue has returned (and its completion handler was
/// called), so the order Ferry guarantees is the order the delegate sees.
final class DelegateBridge: DataDelegate, DownloadDelegate, WebSocketDelegate, @unchecked Sendable {
    private weak var owner: URLSession?

    init(session: URLSession) {
        self.owner = session
    }

    // MARK: The queue

    /// Runs `body` on the delegate queue and waits until it has run.
    func onQueue(_ session: URLSession, _ body: @escaping () -> Void) async {
        let carried = Carried(value: body)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            session.delegateQueue.addOperation {
                carried.value()
                continuation.resume()
            }
        }
    }

    // MARK: Tasks

    /// The wrapper of `task`: the one this session made, or a new one for a task made elsewhere (a
    /// background task an earlier process made, a data task that became a download).
    func wrapper(for task: SessionTask) -> URLSessionTask {
        guard let session = owner else { preconditionFailure("a URLSession's bridge outlived it") }
        let key = ObjectIdentifier(task)
        if let known = session.state.withLock({ $0.tasks[key] }) { return known }
        let original = task.originalRequest.map(FoundationBridge.urlRequest)
        let made: URLSessionTask =
            switch task {
            case is StreamTask: URLSessionStreamTask(owner: session, ferry: task, original: original, refusal: nil, identifier: task.taskIdentifier)
            case is WebSocketTask: URLSessionWebSocketTask(owner: session, ferry: task, original: original, refusal: nil, identifier: task.taskIdentifier)
            case is DownloadTask: URLSessionDownloadTask(owner: session, ferry: task, original: original, refusal: nil, identifier: task.taskIdentifier)
            case is UploadTask: URLSessionUploadTask(owner: session, ferry: task, original: original, refusal: nil, identifier: task.taskIdentifier)
            default: URLSessionDataTask(owner: session, ferry: task, original: original, refusal: nil, identifier: task.taskIdentifier)
            }
        return session.state.withLock { state in
            if let raced = state.tasks[key] { return raced }
            state.tasks[key] = made
            return made
        }
    }

    func setCompletion(_ completion: URLSession.Completion, for task: URLSessionTask) {
        task.mutable.withLock { $0.completion = completion }
    }

    func hasCompletion(_ task: URLSessionTask) -> Bool {
        task.mutable.withLock { $0.completion != nil }
    }

    /// didCreateTask, on the queue (not awaited: the factory returns at once).
    func created(_ task: URLSessionTask) {
        guard let session = owner, let delegate = delegate(of: task) else { return }
        let carried = Carried(value: (delegate, task))
        session.delegateQueue.addOperation { carried.value.0.urlSession(session, didCreateTask: carried.value.1) }
    }

    /// The delegate that hears `task`'s events first: its own, else the session's.
    func delegate(of task: URLSessionTask) -> (any URLSessionTaskDelegate)? {
        task.delegate ?? (owner?.delegate as? any URLSessionTaskDelegate)
    }

    func dataDelegate(of task: URLSessionTask) -> (any URLSessionDataDelegate)? {
        if let own = task.delegate { return own as? any URLSessionDataDelegate }
        return owner?.delegate as? any URLSessionDataDelegate
    }

    func downloadDelegate(of task: URLSessionTask) -> (any URLSessionDownloadDelegate)? {
        (task.delegate as? any URLSessionDownloadDelegate) ?? (owner?.delegate as? any URLSessionDownloadDelegate)
    }

    private func forget(_ task: URLSessionTask) {
        owner?.state.withLock { _ = $0.tasks.removeValue(forKey: task.key) }
    }

    // MARK: Completion

    /// What a task that succeeded hands over, in Apple's types.
    enum Delivered: @unchecked Sendable {
        case data(Data, URLResponse)
        /// A download's file: the receiver's to move (a completion handler's is removed when it returns).
        case file(URL, URLResponse)
    }

    /// A task that could not be made completes with `error`: through its completion handler, or the
    /// delegate's didCompleteWithError.
    func complete(_ task: URLSessionTask, error: URLError) {
        deliver(task, .failure(error))
    }

    /// The outcome of a completion-handler or async task run by the engine.
    func finish(_ task: URLSessionTask, with outcome: Session.BridgedOutcome) {
        let override = task.mutable.withLock { $0.overrideError }
        // Redirects followed without a delegate to hear of them: the request the task ended with.
        if let current = task.ferry?.currentRequest, current.url != task.currentRequest?.url {
            task.record(currentRequest: FoundationBridge.urlRequest(current))
        }
        switch outcome {
        case .data(let data, let made):
            deliver(task, .success(.data(data, appleResponse(made, recordedBy: task))))
        case .file(let url, let made):
            deliver(task, .success(.file(url, appleResponse(made, recordedBy: task))))
        case .failure(let error):
            deliver(task, .failure(override ?? FoundationBridge.error(error, url: task.currentRequest?.url)))
        }
    }

    /// `made` as Apple's type: the one recorded when its head arrived, when that is this response
    /// (building an `HTTPURLResponse` is the dearest step of a small request: FoundationNetworking
    /// rewrites every field name).
    private func appleResponse(_ made: Response, recordedBy task: URLSessionTask) -> URLResponse {
        if let recorded = task.response as? HTTPURLResponse, recorded.statusCode == made.statusCode, recorded.url == made.url {
            return recorded
        }
        return FoundationBridge.response(made)
    }

    /// Hands a finished task's result over, once: to its completion handler (on the delegate queue), to
    /// its async caller, or else to its delegate (`didFinishDownloadingTo` for a download's file, then
    /// `didCompleteWithError`).
    func deliver(_ task: URLSessionTask, _ result: Result<Delivered, any Error>) {
        guard let session = owner else { return }
        forget(task)
        var response = task.response
        var failure: (any Error)?
        switch result {
        case .success(.data(_, let made)), .success(.file(_, let made)): response = made
        case .failure(let error): failure = error
        }
        if let response { task.record(response: response) }
        guard task.markCompleted(error: failure) else { return }
        task.updateProgress()
        let completion = task.mutable.withLock { $0.completion }
        let carried = Carried(value: (response, failure, result))
        switch completion {
        case .async(let resume)?:
            resume(result)
        case .data(let handler)?:
            session.delegateQueue.addOperation {
                let (response, failure, result) = carried.value
                if case .success(.data(let data, _)) = result { return handler(data, response, nil) }
                handler(nil, response, failure ?? URLError(.unknown))
            }
        case .file(let handler)?:
            session.delegateQueue.addOperation {
                let (response, failure, result) = carried.value
                guard case .success(.file(let url, _)) = result else { return handler(nil, response, failure ?? URLError(.unknown)) }
                handler(url, response, nil)
                try? FileManager.default.removeItem(at: url)
            }
        case nil:
            if case .success(.file(let url, _)) = result, let delegate = downloadDelegate(of: task), let download = task as? URLSessionDownloadTask {
                let pair = Carried(value: (delegate, download))
                session.delegateQueue.addOperation {
                    pair.value.0.urlSession(session, downloadTask: pair.value.1, didFinishDownloadingTo: url)
                    try? FileManager.default.removeItem(at: url)
                }
            }
            guard let delegate = delegate(of: task) else { return }
            let pair = Carried(value: (delegate, task, failure))
            session.delegateQueue.addOperation {
                pair.value.0.urlSession(session, task: pair.value.1, didCompleteWithError: pair.value.2)
            }
        }
    }

    /// A task whose `earliestBeginDate` came: the delegate may continue, change the request or cancel.
    func willBeginDelayedRequest(_ task: URLSessionTask) async {
        guard let session = owner else { return }
        guard let delegate = delegate(of: task), let request = task.currentRequest else {
            task.begin()
            return
        }
        let answer = Carried(value: await delegate.urlSession(session, task: task, willBeginDelayedRequest: request))
        switch answer.value.0 {
        case .continueLoading:
            task.begin()
        case .cancel:
            task.cancel()
        case .useNewRequest where task.loader != nil:
            // A URLProtocol loads whatever request it is given (nil: the one it had).
            if let replacement = answer.value.1 { task.record(currentRequest: replacement) }
            task.begin()
        case .useNewRequest:
            // Ferry's task carries its request from its creation: a new one cannot replace it.
            task.mutable.withLock {
                $0.overrideError = URLError(
                    .unsupportedURL,
                    userInfo: [NSLocalizedDescriptionKey: "willBeginDelayedRequest's useNewRequest is not supported by FerryFoundationNetworking; cancel the task and make a new one"]
                )
            }
            task.ferry?.cancel()
        }
    }

    // MARK: SessionDelegate

    func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async {
        guard let owner else { return }
        if let delegate = owner.delegate {
            let carried = Carried(value: delegate)
            await onQueue(owner) { carried.value.urlSession(owner, didBecomeInvalidWithError: error.map { FoundationBridge.error($0) }) }
        }
        // Apple releases the delegate after its last message.
        owner.state.withLock { $0.delegate = nil }
    }

    func sessionDidFinishEvents(forBackgroundSession session: Session) async {
        guard let owner, let delegate = owner.delegate else { return }
        let carried = Carried(value: delegate)
        await onQueue(owner) { carried.value.urlSessionDidFinishEvents(forBackgroundURLSession: owner) }
    }

    func session(_ session: Session, didReceive challenge: ServerTrustChallenge) async -> ServerTrustDisposition {
        .performDefaultHandling
    }

    // MARK: TaskDelegate

    func session(_ session: Session, task: SessionTask, willPerformHTTPRedirection response: Response, newRequest: Request) async -> Request? {
        guard let owner else { return newRequest }
        let wrapped = wrapper(for: task)
        guard let delegate = delegate(of: wrapped) else {
            wrapped.record(currentRequest: FoundationBridge.urlRequest(newRequest))
            return newRequest
        }
        let answer = Carried(
            value: await delegate.urlSession(
                owner,
                task: wrapped,
                willPerformHTTPRedirection: FoundationBridge.response(response),
                newRequest: FoundationBridge.urlRequest(newRequest)
            )
        )
        guard let changed = answer.value else { return nil }
        wrapped.record(currentRequest: changed)
        return FoundationBridge.request(changed, over: newRequest)
    }

    func session(_ session: Session, task: SessionTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard let owner else { return .performDefaultHandling }
        let wrapped = wrapper(for: task)
        guard let delegate = delegate(of: wrapped) else { return .performDefaultHandling }
        let scheme = wrapped.currentRequest?.url?.scheme ?? "https"
        let method = challenge.scheme.lowercased() == "digest" ? NSURLAuthenticationMethodHTTPDigest : NSURLAuthenticationMethodHTTPBasic
        let space = URLProtectionSpace(host: challenge.host, port: challenge.port, protocol: scheme, realm: challenge.realm, authenticationMethod: method)
        let apple = URLAuthenticationChallenge(
            protectionSpace: space,
            proposedCredential: nil,
            previousFailureCount: challenge.previousFailureCount,
            failureResponse: challenge.failureResponse.map { FoundationBridge.response($0) },
            error: nil,
            sender: ChallengeSender()
        )
        let answer = Carried(value: await delegate.urlSession(owner, task: wrapped, didReceive: apple))
        switch answer.value {
        case (.useCredential, let credential?):
            guard let user = credential.user, let password = credential.password else { return .rejectProtectionSpace }
            return .useCredential(Credential(user: user, password: password))
        case (.useCredential, nil), (.rejectProtectionSpace, _): return .rejectProtectionSpace
        case (.performDefaultHandling, _): return .performDefaultHandling
        case (.cancelAuthenticationChallenge, _): return .cancelAuthenticationChallenge
        }
    }

    func session(_ session: Session, task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) async {
        guard let owner else { return }
        let wrapped = wrapper(for: task)
        wrapped.updateProgress()
        guard let delegate = delegate(of: wrapped) else { return }
        let carried = Carried(value: (delegate, wrapped))
        await onQueue(owner) {
            carried.value.0.urlSession(
                owner,
                task: carried.value.1,
                didSendBodyData: bytesSent,
                totalBytesSent: totalBytesSent,
                totalBytesExpectedToSend: totalBytesExpectedToSend
            )
        }
    }

    func session(_ session: Session, needNewBodyStreamFor task: SessionTask) async -> RequestBodyStream? {
        guard let owner else { return nil }
        let wrapped = wrapper(for: task)
        let length = wrapped.originalRequest?.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
        if let first = wrapped.takeBodyStream() { return InputStreamBody.stream(first, length: length) }
        return await needNewBodyStream(wrapped).map { InputStreamBody.stream($0, length: length) }
    }

    func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask, reason: NetworkPolicy.WaitReason) async {
        guard let owner else { return }
        let wrapped = wrapper(for: task)
        guard let delegate = delegate(of: wrapped) else { return }
        let carried = Carried(value: (delegate, wrapped))
        await onQueue(owner) { carried.value.0.urlSession(owner, taskIsWaitingForConnectivity: carried.value.1) }
    }

    func session(_ session: Session, task: SessionTask, didReceiveInformationalResponse response: Response) async {
        guard let owner else { return }
        let wrapped = wrapper(for: task)
        guard let delegate = delegate(of: wrapped) else { return }
        let carried = Carried(value: (delegate, wrapped, FoundationBridge.response(response)))
        await onQueue(owner) { carried.value.0.urlSession(owner, task: carried.value.1, didReceiveInformationalResponse: carried.value.2) }
    }

    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
        guard let owner else { return }
        let wrapped = wrapper(for: task)
        // A stream task whose connection became streams reports nothing more, as Apple's.
        if (wrapped as? URLSessionStreamTask)?.isCaptured == true { return }
        guard let delegate = delegate(of: wrapped) else { return }
        let carried = Carried(value: (delegate, wrapped, URLSessionTaskMetrics(metrics)))
        await onQueue(owner) { carried.value.0.urlSession(owner, task: carried.value.1, didFinishCollecting: carried.value.2) }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        guard let owner else { return }
        let wrapped = wrapper(for: task)
        // A completion-handler or async task completes through its handler.
        guard !hasCompletion(wrapped) else { return }
        if (wrapped as? URLSessionStreamTask)?.isCaptured == true { return }
        await deliverHeldBody(wrapped)
        forget(wrapped)
        let override = wrapped.mutable.withLock { $0.overrideError }
        let failure: URLError? = error.map { override ?? FoundationBridge.error($0, url: wrapped.currentRequest?.url) }
        if wrapped.response == nil, let response = task.response { wrapped.record(response: FoundationBridge.response(response)) }
        wrapped.updateProgress()
        guard wrapped.markCompleted(error: failure) else { return }
        guard let delegate = delegate(of: wrapped) else { return }
        let carried = Carried(value: (delegate, wrapped))
        await onQueue(owner) { carried.value.0.urlSession(owner, task: carried.value.1, didCompleteWithError: failure) }
    }

    // MARK: DataDelegate

    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
        guard let owner else { return .allow }
        let wrapped = wrapper(for: dataTask)
        let apple = FoundationBridge.response(response)
        wrapped.record(response: apple)
        guard !hasCompletion(wrapped), let delegate = dataDelegate(of: wrapped), let dataWrapped = wrapped as? URLSessionDataTask else {
            return .allow
        }
        let answer = await delegate.urlSession(owner, dataTask: dataWrapped, didReceive: apple)
        switch answer {
        case .allow: return .allow
        case .cancel: return .cancel
        case .becomeDownload: return .becomeDownload
        case .becomeStream: return .becomeStream
        }
    }

    func session(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) async {
        guard let (owner, delegate, dataWrapped, became) = replaced(dataTask, by: downloadTask, carryingResponse: true),
            let download = became as? URLSessionDownloadTask
        else { return }
        let carried = Carried(value: (delegate, dataWrapped, download))
        await onQueue(owner) { carried.value.0.urlSession(owner, dataTask: carried.value.1, didBecome: carried.value.2) }
    }

    func session(_ session: Session, dataTask: DataTask, didBecome streamTask: StreamTask) async {
        guard let (owner, delegate, dataWrapped, became) = replaced(dataTask, by: streamTask, carryingResponse: false),
            let stream = became as? URLSessionStreamTask
        else { return }
        let carried = Carried(value: (delegate, dataWrapped, stream))
        await onQueue(owner) { carried.value.0.urlSession(owner, dataTask: carried.value.1, didBecome: carried.value.2) }
    }

    /// A data task that became `other` (becomeDownload, becomeStream): the data task ends without a
    /// completion of its own, and `other`'s wrapper takes its delegate (and its response, for a
    /// download). Nil when there is no data delegate to tell.
    private func replaced(
        _ dataTask: DataTask,
        by other: SessionTask,
        carryingResponse: Bool
    ) -> (URLSession, any URLSessionDataDelegate, URLSessionDataTask, URLSessionTask)? {
        guard let owner else { return nil }
        let wrapped = wrapper(for: dataTask)
        forget(wrapped)
        _ = wrapped.markCompleted(error: nil)
        let became = wrapper(for: other)
        if carryingResponse, let response = wrapped.response { became.record(response: response) }
        became.delegate = wrapped.delegate
        guard let delegate = dataDelegate(of: wrapped), let dataWrapped = wrapped as? URLSessionDataTask else { return nil }
        return (owner, delegate, dataWrapped, became)
    }

    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        let wrapped = wrapper(for: dataTask)
        wrapped.updateProgress()
        guard !hasCompletion(wrapped), let dataWrapped = wrapped as? URLSessionDataTask else { return }
        await handOver(data, of: dataWrapped)
    }

    /// Some of `dataTask`'s body for its data delegate: now, or held until the end when the task prefers
    /// its body whole (`prefersIncrementalDelivery` false). For engine and URLProtocol tasks alike.
    func handOver(_ data: Data, of dataTask: URLSessionDataTask) async {
        guard dataDelegate(of: dataTask) != nil else { return }
        if !dataTask.prefersIncrementalDelivery {
            dataTask.mutable.withLock { $0.heldBody.append(data) }
            return
        }
        await tellData(data, to: dataTask)
    }

    /// The body held for a task that prefers it whole, handed to its data delegate (before completion).
    func deliverHeldBody(_ task: URLSessionTask) async {
        guard let dataTask = task as? URLSessionDataTask else { return }
        let held = dataTask.mutable.withLock { state -> Data in
            defer { state.heldBody = Data() }
            return state.heldBody
        }
        guard !held.isEmpty else { return }
        await tellData(held, to: dataTask)
    }

    /// `didReceive data`, on the delegate queue.
    private func tellData(_ data: Data, to dataTask: URLSessionDataTask) async {
        guard let owner, let delegate = dataDelegate(of: dataTask) else { return }
        let carried = Carried(value: (delegate, dataTask))
        await onQueue(owner) { carried.value.0.urlSession(owner, dataTask: carried.value.1, didReceive: data) }
    }

    func session(_ session: Session, dataTask: DataTask, willCacheResponse proposed: CachedResponse) async -> CachedResponse? {
        guard let owner else { return proposed }
        let wrapped = wrapper(for: dataTask)
        guard !hasCompletion(wrapped), let delegate = dataDelegate(of: wrapped), let dataWrapped = wrapped as? URLSessionDataTask else {
            return proposed
        }
        let answer = Carried(value: await delegate.urlSession(owner, dataTask: dataWrapped, willCacheResponse: FoundationBridge.cachedResponse(proposed)))
        return answer.value.map { FoundationBridge.cachedResponse($0, over: proposed) }
    }

    // MARK: DownloadDelegate

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        guard let owner else { return }
        let wrapped = wrapper(for: downloadTask)
        if wrapped.response == nil, let response = downloadTask.response { wrapped.record(response: FoundationBridge.response(response)) }
        guard !hasCompletion(wrapped), let delegate = downloadDelegate(of: wrapped), let download = wrapped as? URLSessionDownloadTask else {
            return
        }
        let carried = Carried(value: (delegate, download))
        await onQueue(owner) { carried.value.0.urlSession(owner, downloadTask: carried.value.1, didFinishDownloadingTo: location) }
    }

    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async {
        guard let owner else { return }
        let wrapped = wrapper(for: downloadTask)
        wrapped.updateProgress()
        guard let delegate = downloadDelegate(of: wrapped), let download = wrapped as? URLSessionDownloadTask else { return }
        let carried = Carried(value: (delegate, download))
        await onQueue(owner) {
            carried.value.0.urlSession(
                owner,
                downloadTask: carried.value.1,
                didWriteData: bytesWritten,
                totalBytesWritten: totalBytesWritten,
                totalBytesExpectedToWrite: totalBytesExpectedToWrite
            )
        }
    }

    func session(_ session: Session, downloadTask: DownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) async {
        guard let owner else { return }
        let wrapped = wrapper(for: downloadTask)
        guard let delegate = downloadDelegate(of: wrapped), let download = wrapped as? URLSessionDownloadTask else { return }
        let carried = Carried(value: (delegate, download))
        await onQueue(owner) {
            carried.value.0.urlSession(owner, downloadTask: carried.value.1, didResumeAtOffset: fileOffset, expectedTotalBytes: expectedTotalBytes)
        }
    }
}

/// The sender of the challenges this module hands out: the delegate answers through its completion
/// handler, so the sender's messages change nothing.
final class ChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}

/// A request body read from an `InputStream` (a request's `httpBodyStream`, or one the delegate gives),
/// 64 KiB at a time as the engine asks for it.
enum InputStreamBody {
    private final class Reader: @unchecked Sendable {
        let input: InputStream
        init(_ input: InputStream) { self.input = input }
    }

    static func stream(_ input: InputStream, length: Int64?) -> RequestBodyStream {
        let reader = Reader(input)
        let chunks = AsyncThrowingStream<Data, any Error>(unfolding: {
            let input = reader.input
            if input.streamStatus == .notOpen { input.open() }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = input.read(&buffer, maxLength: buffer.count)
            if count < 0 {
                throw URLError(.cannotDecodeRawData, userInfo: [NSLocalizedDescriptionKey: "the request's body stream failed: \(input.streamError.map { "\($0)" } ?? "read error")"])
            }
            if count == 0 {
                input.close()
                return nil
            }
            return Data(buffer[0..<count])
        })
        return RequestBodyStream(data: chunks, length: length)
    }
}

// MARK: WebSocketDelegate

extension DelegateBridge {
    func session(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) async {
        guard let wrapped = wrapper(for: webSocketTask) as? URLSessionWebSocketTask,
            let delegate = delegate(of: wrapped) as? any URLSessionWebSocketDelegate
        else { return }
        let owner = wrapped.owner
        let carried = Carried(value: (delegate, wrapped))
        await onQueue(owner) { carried.value.0.urlSession(owner, webSocketTask: carried.value.1, didOpenWithProtocol: `protocol`) }
    }

    func session(_ session: Session, webSocketTask: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: Data?) async {
        guard let wrapped = wrapper(for: webSocketTask) as? URLSessionWebSocketTask,
            let delegate = delegate(of: wrapped) as? any URLSessionWebSocketDelegate
        else { return }
        let owner = wrapped.owner
        let code = URLSessionWebSocketTask.CloseCode(rawValue: Int(closeCode.rawValue)) ?? .invalid
        let carried = Carried(value: (delegate, wrapped))
        await onQueue(owner) { carried.value.0.urlSession(owner, webSocketTask: carried.value.1, didCloseWith: code, reason: reason) }
    }
}
