import FerryEngine
public import Foundation
import NIOCore
import Synchronization

/// One transfer in a ``Session`` (URLSessionTask). Tasks are created suspended: call ``resume()``.
///
/// Thread safe: every property and method may be used from any task or thread. The lifecycle is
/// `TaskStateMachine`; this class carries out its actions.
public class SessionTask: @unchecked Sendable, CustomStringConvertible {
    /// What the task transfers.
    enum Work: Sendable {
        case data
        case upload(UploadSource)
        /// A download; to a temporary file, or delivered to `destination` (``Session/download(for:to:delegate:)``).
        case download(resumeData: ResumeData?, destination: DownloadDestination? = nil)
        /// A WebSocket offering these subprotocols.
        case webSocket(protocols: [String])
        /// A TCP connection (stream task).
        case stream(host: String, port: Int)
    }

    enum UploadSource: Sendable {
        case data(Data)
        /// A file; with the state of a resumable upload to continue (``Session/uploadTask(withResumeData:)``).
        case file(URL, resumption: UploadResumption? = nil)
        case stream
    }

    /// Where completion goes: the delegates, or an async call waiting for the outcome.
    enum Route: Sendable {
        case delegates
        case handler(@Sendable (Outcome) -> Void)

        /// Whether the session's delegate hears of the task.
        var deliversToDelegates: Bool {
            if case .delegates = self { return true }
            return false
        }
    }

    /// A finished transfer, for async convenience calls.
    enum Outcome: Sendable {
        case data(Data, Response)
        case file(URL, Response)
        case failure(FerryError)
    }

    struct State {
        var machine = TaskStateMachine()
        var currentRequest: Request?
        var response: Response?
        var error: FerryError?
        var taskDescription: String?
        var priority: Float = SessionTask.defaultPriority
        /// The task's own bandwidth limit (``change(_:)``); nil: none.
        var bandwidthLimit: Int64?
        /// In-process: the running transfer's throttle, changed live by ``change(_:)``.
        var throttle: TaskThrottle?
        /// In-process: network access changed by ``change(_:)`` before the transfer started.
        var allowsMetered: Bool?
        var allowsConstrained: Bool?
        /// taskIsWaitingForConnectivity was sent.
        var toldWaiting = false
        var delegate: (any TaskDelegate)?
        var bytesSent: Int64 = 0
        var bytesExpectedToSend: Int64 = 0
        var bytesReceived: Int64 = 0
        var bytesExpectedToReceive: Int64 = Session.transferSizeUnknown
        var transfer: Task<Void, Never>?
        /// The cancellation of a transfer running in its caller's task (`InProcessBackend/runInline(_:)`).
        var inlineCancellation: TransferCancellation?
        var startDate: Date?
        /// Not before (``earliestBeginDate``).
        var earliestBeginDate: Date?
        /// The file a download writes.
        var filePath: String?
        /// The transfer has ended and ``error`` is final.
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        /// The completion has been delivered.
        var finished = false
        var finishWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// URLSessionTask.defaultPriority.
    public static let defaultPriority: Float = 0.5
    /// URLSessionTask.lowPriority (0.25, as Apple's).
    public static let lowPriority: Float = 0.25
    /// URLSessionTask.highPriority (0.75, as Apple's).
    public static let highPriority: Float = 0.75

    /// Unique within the session.
    public let taskIdentifier: Int
    /// The request as created, before redirects (nil for a download made from resume data that lacks it).
    public let originalRequest: Request?
    /// The session that runs the task.
    public let session: Session

    let work: Work
    let route: Route
    let gate = TransferGate()
    let locked: Mutex<State>

    /// Why the task cannot run (a session invalidated before it was made, bad resume data), if so.
    let rejection: FerryError?

    init(session: Session, identifier: Int, request: Request?, work: Work, route: Route, rejection: FerryError? = nil) {
        self.rejection = rejection
        self.session = session
        self.taskIdentifier = identifier
        self.originalRequest = request
        self.work = work
        self.route = route
        var initial = State()
        initial.currentRequest = request
        if case .upload(let source) = work {
            initial.bytesExpectedToSend = Self.uploadLength(source) ?? Session.transferSizeUnknown
        }
        self.locked = Mutex(initial)
    }

    // MARK: Observable state

    /// suspended, running, canceling or completed.
    public var state: TaskStateMachine.State { locked.withLock { $0.machine.state } }

    /// The request being sent now (after redirects).
    public var currentRequest: Request? { locked.withLock { $0.currentRequest } }
    /// The response head, once it has arrived.
    public var response: Response? { locked.withLock { $0.response } }
    /// The error the task completed with, if any.
    public var error: FerryError? { locked.withLock { $0.error } }
    /// A description for your own use; kept as set.
    public var taskDescription: String? {
        get { locked.withLock { $0.taskDescription } }
        set { locked.withLock { $0.taskDescription = newValue } }
    }
    /// 0...1; among tasks waiting for a connection to the same host, the higher goes first. Set before
    /// ``resume()`` to take effect.
    public var priority: Float {
        get { locked.withLock { $0.priority } }
        set { locked.withLock { $0.priority = min(1, max(0, newValue)) } }
    }
    /// A delegate for this task only; it comes before the session's delegate. Set before ``resume()``.
    public var delegate: (any TaskDelegate)? {
        get { locked.withLock { $0.delegate } }
        set { locked.withLock { $0.delegate = newValue } }
    }
    /// The task's own bandwidth limit, bytes a second; nil: none. Change it with ``change(_:)``.
    public var bandwidthLimit: Int64? { locked.withLock { $0.bandwidthLimit } }
    /// Not before: the transfer does not begin before this date (URLSession's `earliestBeginDate`). Set it
    /// before ``resume()``; the task is running while it waits.
    ///
    /// - Background tasks: ferryd holds the task, pending, until then; the date is kept across restarts of
    ///   ferryd and of this process, so a program may exit meanwhile.
    /// - In-process tasks: the task waits in this process (Apple's URLSession ignores the date outside
    ///   background sessions; Ferry honours it). ``cancel()`` ends the wait.
    public var earliestBeginDate: Date? {
        get { locked.withLock { $0.earliestBeginDate } }
        set { locked.withLock { $0.earliestBeginDate = newValue } }
    }

    /// What ``change(_:)`` takes: priority, network access and bandwidth limit (nil leaves a value).
    public typealias Change = ControlAPI.TaskUpdate

    /// Changes the task while it lives (S7.2): its priority, which networks it may use, and its own
    /// bandwidth limit (0 removes it).
    ///
    /// - Background tasks: ferryd records the change before it answers (it survives restarts). A running
    ///   task that may no longer use the network it is on stops at its last checkpoint and waits; when it
    ///   may again, it continues with Range. The new limit and priority apply to a running transfer at once.
    /// - In-process tasks: the limit and priority apply at once; network access and the earliest begin
    ///   date are read when the task starts, so a change to them counts for a task not yet started.
    /// - Throws: `FerryError` for a value out of range, or when ferryd cannot be reached.
    public func change(_ change: Change) async throws {
        try change.validate()
        if rejection == nil, let link = session.background {
            let info = try await link.sendChange(self, change)
            locked.withLock { state in
                state.priority = Float(info.priority)
                state.bandwidthLimit = info.bandwidthLimit
                state.earliestBeginDate = info.earliestBeginTime.map(Date.init(timeIntervalSince1970:))
            }
            return
        }
        let throttle = locked.withLock { state in
            if let begin = change.earliestBeginTime { state.earliestBeginDate = Date(timeIntervalSince1970: begin) }
            if let priority = change.priority { state.priority = Float(priority) }
            if let limit = change.bandwidthLimit { state.bandwidthLimit = limit > 0 ? limit : nil }
            if let metered = change.allowsMeteredNetwork { state.allowsMetered = metered }
            if let constrained = change.allowsConstrainedNetwork { state.allowsConstrained = constrained }
            return state.throttle
        }
        if let throttle {
            if change.bandwidthLimit != nil { throttle.setLimit(bandwidthLimit) }
            if change.priority != nil { throttle.setWeight(Double(priority)) }
        }
    }

    /// Request body bytes sent.
    public var countOfBytesSent: Int64 { locked.withLock { $0.bytesSent } }
    /// Request body length, ``Session/transferSizeUnknown`` when unknown, 0 without a body.
    public var countOfBytesExpectedToSend: Int64 { locked.withLock { $0.bytesExpectedToSend } }
    /// Response body bytes received.
    public var countOfBytesReceived: Int64 { locked.withLock { $0.bytesReceived } }
    /// Response body length, ``Session/transferSizeUnknown`` until known.
    public var countOfBytesExpectedToReceive: Int64 { locked.withLock { $0.bytesExpectedToReceive } }

    /// The task's kind, identifier, state and URL, for logs.
    public var description: String {
        let (machineState, url) = locked.withLock { ($0.machine.state, $0.currentRequest?.url.absoluteString ?? "-") }
        return "\(type(of: self))(\(taskIdentifier), \(machineState.rawValue), \(url))"
    }

    // MARK: Lifecycle

    /// Where the task runs: ferryd for a background session's task, this process otherwise (and for a
    /// task refused at creation, which fails here when resumed).
    var backend: any TaskBackend {
        if rejection == nil, let link = session.background { return link }
        return InProcessBackend()
    }

    /// Starts the task, or continues it after ``suspend()``. Does nothing once it is cancelled or done.
    public func resume() {
        backend.resume(self)
    }

    /// Pauses a running task: it stops reading from the network and keeps its connection and data. A
    /// server may close a connection that waits too long; the task then fails with that error.
    public func suspend() {
        backend.suspend(self)
    }

    /// Cancels the task: it completes with a `FerryError/Code/cancelled` error.
    public func cancel() {
        cancel(produceResumeData: false)
    }

    func cancel(produceResumeData: Bool) {
        backend.cancel(self, produceResumeData: produceResumeData)
    }

    /// Returns when the task has completed and its completion has been delivered. Do not await it from
    /// a delegate callback of the same session: the completion waits for that callback to return.
    public func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = locked.withLock { state in
                if state.finished { return true }
                state.finishWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Returns when the transfer has ended and ``error`` is final (before completion is delivered, so it
    /// may be awaited from a delegate callback).
    func waitUntilEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = locked.withLock { state in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    func markEnded(error: FerryError?) {
        let waiters = locked.withLock { state in
            state.error = error
            state.ended = true
            defer { state.endWaiters = [] }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Transfer

    /// What a transfer produced.
    enum TransferResult: Sendable {
        case data(DataLoader.Result)
        case download(Downloader.Result)
        /// The data task became this download task, which completes instead.
        case handedOver(DownloadTask, Downloader.Result)
        /// A connection (WebSocket) ended with a closing handshake: nothing to hand over.
        case closed
        /// The data task's connection became this stream task's, which runs on and completes instead.
        case handedOverToStream(StreamTask, ByteStreamConnection)
    }

    func run(context: TransferContext) async {
        var result: TransferResult?
        var failure: FerryError?
        do {
            result = try await transfer()
        } catch let error as FerryError {
            failure = error
        } catch {
            failure = FerryError(.unknown, "the transfer failed: \(error)")
        }
        if case .handedOver(let download, let downloaded)? = result {
            // This data task ends silently; the download task reports the rest.
            locked.withLock { _ = $0.machine.transferFinished(error: nil) }
            finishSilently()
            await download.transferEnded(result: .download(downloaded), failure: nil, context: context)
            return
        }
        if case .handedOverToStream(let stream, let connection)? = result {
            locked.withLock { _ = $0.machine.transferFinished(error: nil) }
            finishSilently()
            await stream.runAdopted(connection, context: context)
            return
        }
        await transferEnded(result: result, failure: failure, context: context)
    }

    func transferEnded(result: TransferResult?, failure: FerryError?, context: TransferContext) async {
        let action = locked.withLock { $0.machine.transferFinished(error: failure) }
        guard case .complete(let error) = action else { return }
        let (start, redirects) = locked.withLock { ($0.startDate ?? Date(), redirectCount(result)) }
        let metrics = TaskMetrics(
            taskInterval: DateInterval(start: start, end: max(start, Date())),
            redirectCount: redirects,
            transactionMetrics: context.recordedTransactions
        )
        await complete(error: error, result: error == nil ? result : nil, metrics: metrics)
    }

    private func redirectCount(_ result: TransferResult?) -> Int {
        switch result {
        case .data(let loaded)?: loaded.redirectCount
        case .download(let downloaded)?, .handedOver(_, let downloaded)?: downloaded.redirectCount
        case .closed?, .handedOverToStream?, nil: 0
        }
    }

    /// Runs the transfer the task's kind calls for. Overridden by nothing: the kinds differ in ``work``.
    func transfer() async throws -> TransferResult {
        if let rejection { throw rejection }
        try session.checkUsable()
        if case .stream = work, let stream = self as? StreamTask {
            return try await stream.transferStream(deadline: session.resourceDeadline())
        }
        guard var request = originalRequest else {
            throw FerryError(.invalidOperation, "the task has no request")
        }
        request = session.configuration.applyingAdditionalHeaders(to: request)
        switch work {
        case .data, .upload:
            // Compressed bodies are welcome and decoded, as URLSession's data tasks do. Added here, where
            // the request's fields are this task's alone (and have room for it): added in transferData,
            // to a copy, it made a new array of fields for every request.
            if request.headers["accept-encoding"] == nil {
                request.headers.add(name: "Accept-Encoding", value: ContentDecoder.acceptEncoding)
            }
        default:
            break
        }
        if case .webSocket = work {
            try request.validate(schemes: ["ws", "wss"])
        } else {
            // (Also a scheme of the program's own, which one of its protocol handlers loads.)
            try request.validate(for: session.transport)
        }
        let deadline = session.resourceDeadline()
        try await waitForNetwork(request, deadline: deadline)
        switch work {
        case .webSocket(let protocols):
            guard let socket = self as? WebSocketTask else { throw FerryError(.invalidOperation, "not a WebSocket task") }
            return try await socket.transferWebSocket(request, protocols: protocols, deadline: deadline)
        case .stream:
            throw FerryError(.invalidOperation, "not a stream task")
        case .data, .upload:
            return try await transferData(request, deadline: deadline)
        case .download(let resumeData, let destination):
            return try await transferDownload(
                request,
                resumeData: resumeData,
                destination: destination,
                deadline: deadline
            )
        }
    }

    func finishSilently() {
        markEnded(error: error)
        let waiters = locked.withLock { state in
            state.finished = true
            defer { state.finishWaiters = [] }
            return state.finishWaiters
        }
        for waiter in waiters { waiter.resume() }
        session.taskEnded(self)
    }

    // MARK: Completion

    /// Delivers the end of the task, in S2.7's order: the file (downloads), metrics, completion.
    func complete(error: FerryError?, result: TransferResult?, metrics: TaskMetrics?) async {
        markEnded(error: error)
        let partialFile = locked.withLock { $0.filePath }
        if let error, error.resumeData == nil, let partialFile {
            // Nothing can continue it (S6.9): a partial file without resume data goes (a device or FIFO
            // written through stays).
            DownloadDestination.removeFile(partialFile)
        }
        switch route {
        case .handler(let handler):
            // Metrics first, then the outcome (S2.7's order, as for delegate completion): a bridge that
            // forgets the task at its outcome must not hear of it again.
            if let metrics, let delegate {
                await session.queue.perform { [self] in
                    await delegate.session(session, task: self, didFinishCollecting: metrics)
                }
            }
            handler(Self.outcome(error: error, result: result, response: response))
        case .delegates:
            await deliverCompletion(error: error, result: result, metrics: metrics)
        }
        finishSilently()
    }

    func deliverCompletion(error: FerryError?, result: TransferResult?, metrics: TaskMetrics?) async {
        let session = self.session
        let taskDelegate = taskDelegateForEvents()
        if case .download(let downloaded)? = result, let download = self as? DownloadTask {
            let location = URL(fileURLWithPath: downloaded.path)
            let delegate = downloadDelegate()
            let temporary: Bool
            if case .download(_, destination: nil) = work { temporary = true } else { temporary = false }
            await session.queue.perform {
                await delegate?.session(session, downloadTask: download, didFinishDownloadingTo: location)
                // S2.7: the temporary file is gone once the callback has returned (a regular file only;
                // a destination the caller named stays).
                if temporary { DownloadDestination.removeFile(downloaded.path) }
            }
        }
        await session.queue.perform { [self] in
            if let metrics { await taskDelegate?.session(session, task: self, didFinishCollecting: metrics) }
            await taskDelegate?.session(session, task: self, didCompleteWithError: error)
        }
    }

    private static func outcome(error: FerryError?, result: TransferResult?, response: Response?) -> Outcome {
        if let error { return .failure(error) }
        switch result {
        case .data(let loaded)?:
            let head =
                response ?? Response(url: loaded.finalRequest.url, statusCode: loaded.status, headers: loaded.headers)
            return .data(Data(loaded.body.readableBytesView), head)
        case .download(let downloaded)?, .handedOver(_, let downloaded)?:
            let head =
                response
                ?? Response(
                    url: downloaded.finalRequest.url,
                    statusCode: downloaded.status,
                    headers: downloaded.headers
                )
            return .file(URL(fileURLWithPath: downloaded.path), head)
        case .closed?, .handedOverToStream?, nil:
            return .failure(FerryError(.cancelled, "the task ended without a result"))
        }
    }

    // MARK: Delegates

    /// The delegate for task-level events: the task's own, else the session's (not for async calls).
    func taskDelegateForEvents() -> (any TaskDelegate)? {
        if let own = delegate { return own }
        guard case .delegates = route else { return nil }
        return session.delegate as? any TaskDelegate
    }

    /// Where the transfer's informational (1xx) answers go: to the task's delegate for events, on the
    /// session's queue in the order they came; nil without one.
    func informationalResponses() -> TransferContext.InformationalResponses? {
        guard let delegate = taskDelegateForEvents() else { return nil }
        let session = self.session
        return { [weak self] url, status, headers in
            guard let self else { return }
            let response = Response(url: url, statusCode: status, headers: headers)
            session.queue.enqueue { await delegate.session(session, task: self, didReceiveInformationalResponse: response) }
        }
    }

    func dataDelegate() -> (any DataDelegate)? {
        if let own = delegate as? any DataDelegate { return own }
        guard case .delegates = route else { return nil }
        return session.delegate as? any DataDelegate
    }

    func downloadDelegate() -> (any DownloadDelegate)? {
        if let own = delegate as? any DownloadDelegate { return own }
        guard case .delegates = route else { return nil }
        return session.delegate as? any DownloadDelegate
    }

    /// The redirect decision, asked of the delegate in turn.
    func redirectDecision() -> @Sendable (Int, Headers, Request) async -> Request? {
        { [self] status, headers, proposed in
            let url = locked.withLock { $0.currentRequest?.url } ?? proposed.url
            let decision: Request?
            if let delegate = taskDelegateForEvents() {
                let response = Response(url: url, statusCode: status, headers: headers)
                decision = await session.queue.perform { [self] in
                    await delegate.session(
                        session,
                        task: self,
                        willPerformHTTPRedirection: response,
                        newRequest: proposed
                    )
                }
            } else {
                decision = proposed
            }
            if let decision { locked.withLock { $0.currentRequest = decision } }
            return decision
        }
    }

    /// Answers a challenge: the session's stored credential for its protection space first (once), then
    /// the delegate, else default handling (the URL's own credential).
    func challengeAnswer() -> (@Sendable (AuthenticationChallenge) async -> ChallengeDisposition)? {
        let delegate = taskDelegateForEvents()
        let store = session.credentials
        guard delegate != nil || store != nil else { return nil }
        return { [self] challenge in
            if challenge.previousFailureCount == 0, let credential = store?.credential(for: ProtectionSpace(challenge)) {
                return .useCredential(credential)
            }
            guard let delegate else { return .performDefaultHandling }
            return await session.queue.perform { [self] in
                await delegate.session(session, task: self, didReceive: challenge)
            }
        }
    }

    /// Records the response head.
    func received(status: Int, headers: Headers, request: Request) -> Response {
        let response = Response(url: request.url, statusCode: status, headers: headers)
        locked.withLock { state in
            state.response = response
            state.currentRequest = request
            state.bytesExpectedToReceive = headers.contentLength ?? Session.transferSizeUnknown
        }
        return response
    }

    static func uploadLength(_ source: UploadSource) -> Int64? {
        switch source {
        case .data(let data): Int64(data.count)
        case .file(let url, _):
            (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
        case .stream: nil
        }
    }
}
