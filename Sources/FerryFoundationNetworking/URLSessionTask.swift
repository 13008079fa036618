import Ferry
import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

/// One transfer of a ``URLSession``, as Apple's `URLSessionTask`. Tasks are made suspended: call
/// ``resume()``.
open class URLSessionTask: NSObject, NSCopying, @unchecked Sendable {
    /// A task's place in its life.
    public enum State: Int, Sendable {
        case running = 0
        case suspended = 1
        case canceling = 2
        case completed = 3
    }

    /// Apple's default priority, 0.5.
    public static let defaultPriority: Float = 0.5
    /// Apple's low priority, 0.25.
    public static let lowPriority: Float = 0.25
    /// Apple's high priority, 0.75.
    public static let highPriority: Float = 0.75

    struct Mutable {
        var response: URLResponse?
        var error: (any Error)?
        var currentRequest: URLRequest?
        var taskDescription: String?
        var delegate: (any URLSessionTaskDelegate)?
        var earliestBeginDate: Date?
        var countOfBytesClientExpectsToSend: Int64 = -1
        var countOfBytesClientExpectsToReceive: Int64 = -1
        var completed = false
        /// A resume waiting for ``earliestBeginDate``.
        var delayedStart: Task<Void, Never>?
        /// The body stream of the request, handed to the engine once.
        var bodyStream: BodyStreamBox?
        /// A completion handler (or an async method's continuation) instead of delegate completion.
        var completion: URLSession.Completion?
        /// The error to report instead of the engine's (a delayed request the delegate refused).
        var overrideError: URLError?
        /// The loader of a task a `URLProtocol` loads (then ``ferry`` is nil).
        var loader: URLProtocolLoader?
        /// A completion-handler task whose task-level events go through the bridge when a delegate
        /// listens (or the bridge must give the body stream).
        var bridgesTaskEvents = false
        /// Whether the data delegate gets the body as it arrives (Apple's default) or once, whole.
        var prefersIncrementalDelivery = true
        /// The body held for a task that prefers it whole.
        var heldBody = Data()
    }

    /// The Ferry task that runs the transfer (nil when the task was refused before it could exist).
    let ferry: SessionTask?
    /// Why the task cannot run: reported on resume, as Apple reports a bad request then.
    let refusal: URLError?
    /// The session, held while the task lives (as Apple's task holds its session).
    let owner: URLSession
    let mutable: Mutex<Mutable>
    /// The task's progress (Foundation's `Progress`): bytes received, or sent for uploads. Made on first
    /// use: most tasks never ask, and a `Progress` costs a lock and a thread-local lookup to make.
    open var progress: Progress {
        let (made, fresh) = madeProgress.withLock { slot -> (Progress, Bool) in
            if let made = slot?.value { return (made, false) }
            let made = Progress(totalUnitCount: -1)
            slot = Carried(value: made)
            return (made, true)
        }
        if fresh { updateProgress() }
        return made
    }
    private let madeProgress = Mutex<Carried<Progress>?>(nil)

    /// Unique within the session.
    public let taskIdentifier: Int
    /// The request as created.
    public let originalRequest: URLRequest?

    /// Not offered: tasks come from a session's factories (Apple deprecated this initializer for that
    /// reason).
    @available(*, unavailable, message: "tasks come from a URLSession's task factories")
    public override init() {
        fatalError("URLSessionTask.init() is unavailable: make tasks with a URLSession's task factories")
    }

    init(owner: URLSession, ferry: SessionTask?, original: URLRequest?, refusal: URLError?, identifier: Int) {
        self.owner = owner
        self.ferry = ferry
        self.refusal = refusal
        self.originalRequest = original
        self.taskIdentifier = identifier
        var initial = Mutable()
        initial.currentRequest = original
        self.mutable = Mutex(initial)
        super.init()
    }

    /// A wrapper of this class's kind (the factories are generic over the kind).
    static func make(owner: URLSession, ferry: SessionTask?, original: URLRequest?, refusal: URLError?, identifier: Int) -> Self {
        let made: URLSessionTask =
            if self == URLSessionStreamTask.self {
                URLSessionStreamTask(owner: owner, ferry: ferry, original: original, refusal: refusal, identifier: identifier)
            } else if self == URLSessionWebSocketTask.self {
                URLSessionWebSocketTask(owner: owner, ferry: ferry, original: original, refusal: refusal, identifier: identifier)
            } else if self == URLSessionDownloadTask.self {
                URLSessionDownloadTask(owner: owner, ferry: ferry, original: original, refusal: refusal, identifier: identifier)
            } else if self == URLSessionUploadTask.self {
                URLSessionUploadTask(owner: owner, ferry: ferry, original: original, refusal: refusal, identifier: identifier)
            } else {
                URLSessionDataTask(owner: owner, ferry: ferry, original: original, refusal: refusal, identifier: identifier)
            }
        return made as! Self
    }

    /// The key of this task in its session's live tasks.
    var key: ObjectIdentifier { ferry.map(ObjectIdentifier.init) ?? ObjectIdentifier(self) }

    /// The loader, when a `URLProtocol` loads this task.
    var loader: URLProtocolLoader? {
        get { mutable.withLock { $0.loader } }
        set { mutable.withLock { $0.loader = newValue } }
    }

    /// The request now being sent: the original, or the last redirect's.
    open var currentRequest: URLRequest? { mutable.withLock { $0.currentRequest } }
    /// The response, once its head has arrived.
    open var response: URLResponse? { mutable.withLock { $0.response } }
    /// Why the task failed (a `URLError`); nil while running and on success.
    open var error: (any Error)? { mutable.withLock { $0.error } }
    /// A description for the application's own use.
    /// A background task keeps it in ferryd: a process that re-attaches finds its tasks by it.
    open var taskDescription: String? {
        get {
            if let ferry { return ferry.taskDescription }
            return mutable.withLock { $0.taskDescription }
        }
        set {
            mutable.withLock { $0.taskDescription = newValue }
            ferry?.taskDescription = newValue
        }
    }
    /// The task's own delegate: it hears this task's events before the session's delegate.
    open var delegate: (any URLSessionTaskDelegate)? {
        get { mutable.withLock { $0.delegate } }
        set { mutable.withLock { $0.delegate = newValue } }
    }
    /// Priority from 0 to 1 (ferryd and the in-process scheduler start higher priorities first).
    open var priority: Float {
        get { ferry?.priority ?? Self.defaultPriority }
        set { ferry?.priority = newValue }
    }
    /// The earliest moment the transfer starts: a resume before it waits until then.
    open var earliestBeginDate: Date? {
        get { mutable.withLock { $0.earliestBeginDate } }
        set { mutable.withLock { $0.earliestBeginDate = newValue } }
    }
    /// Whether the data delegate gets the body as it arrives (true, the default) or once, whole, just
    /// before the task completes (false). Set before ``resume()``.
    open var prefersIncrementalDelivery: Bool {
        get { mutable.withLock { $0.prefersIncrementalDelivery } }
        set { mutable.withLock { $0.prefersIncrementalDelivery = newValue } }
    }
    /// The application's estimate of the bytes it sends (a hint; Ferry's scheduler does not use it).
    open var countOfBytesClientExpectsToSend: Int64 {
        get { mutable.withLock { $0.countOfBytesClientExpectsToSend } }
        set { mutable.withLock { $0.countOfBytesClientExpectsToSend = newValue } }
    }
    /// The application's estimate of the bytes it receives (a hint; Ferry's scheduler does not use it).
    open var countOfBytesClientExpectsToReceive: Int64 {
        get { mutable.withLock { $0.countOfBytesClientExpectsToReceive } }
        set { mutable.withLock { $0.countOfBytesClientExpectsToReceive = newValue } }
    }
    /// Body bytes sent.
    open var countOfBytesSent: Int64 { ferry?.countOfBytesSent ?? loader?.countOfBytesSent ?? 0 }
    /// Body bytes the request has (`NSURLSessionTransferSizeUnknown`, -1, when unknown).
    open var countOfBytesExpectedToSend: Int64 { ferry?.countOfBytesExpectedToSend ?? loader?.countOfBytesExpectedToSend ?? 0 }
    /// Body bytes received.
    open var countOfBytesReceived: Int64 { ferry?.countOfBytesReceived ?? loader?.countOfBytesReceived ?? 0 }
    /// Body bytes the response announced (-1 when unknown).
    open var countOfBytesExpectedToReceive: Int64 { ferry?.countOfBytesExpectedToReceive ?? loader?.countOfBytesExpectedToReceive ?? -1 }

    /// running, suspended, canceling or completed.
    open var state: State {
        if mutable.withLock({ $0.completed }) { return .completed }
        if let loader {
            if mutable.withLock({ $0.delayedStart != nil }) { return .running }
            return State(rawValue: loader.taskState) ?? .running
        }
        guard let ferry else { return refusalReported ? .completed : .suspended }
        switch ferry.state {
        case .suspended: return mutable.withLock { $0.delayedStart != nil } ? .running : .suspended
        case .running: return .running
        case .canceling: return .canceling
        case .completed: return .completed
        }
    }

    private let reported = Mutex(false)
    private var refusalReported: Bool { reported.withLock { $0 } }

    /// Starts the task, or continues a suspended one.
    open func resume() {
        guard ferry != nil || loader != nil else {
            reportRefusal()
            return
        }
        let wait = mutable.withLock { state -> Date? in
            guard state.delayedStart == nil, let date = state.earliestBeginDate, date > Date() else { return nil }
            return date
        }
        if let wait, let ferry, owner.configurationCopy.kind == .background {
            // ferryd holds a background task until its date, kept across restarts of ferryd and of this
            // process (which may exit meanwhile). The delegate's willBeginDelayedRequest is not asked:
            // ferryd does not stop a task to wait for a program that may be gone (docs/FOUNDATION_NETWORKING.md).
            ferry.earliestBeginDate = wait
            begin()
            return
        }
        guard let wait else {
            begin()
            return
        }
        // earliestBeginDate in a session of this process: the transfer waits here until then, and the
        // delegate decides (Apple ignores the date outside background sessions; Ferry honours it).
        let start = Task { [weak self] in
            try? await WallClock.sleep(until: wait)
            guard let self, !Task.isCancelled else { return }
            self.mutable.withLock { $0.delayedStart = nil }
            await self.owner.bridge.willBeginDelayedRequest(self)
        }
        mutable.withLock { $0.delayedStart = start }
    }

    /// Starts the transfer now: on the engine, or through the task's `URLProtocol`.
    func begin() {
        guard let ferry else { return loader?.resume() ?? () }
        listen(to: ferry)
        ferry.resume()
    }

    /// An async method's task: its transfer runs in the calling task when it is an engine task of a
    /// session in this process with no date to wait for (the engine's async methods do the same; it saves
    /// a wake-up a request). Otherwise, and when it did not start here, it is resumed as any task is.
    func runForAsyncCaller() async {
        let now = mutable.withLock { state in
            state.delayedStart == nil && (state.earliestBeginDate.map { $0 <= Date() } ?? true)
        }
        if now, let ferry, loader == nil, owner.configurationCopy.kind != .background {
            listen(to: ferry)
            if await owner.ferry.runInline(ferry) { return }
        }
        resume()
    }

    /// Routes the engine task's task-level events through the bridge when someone listens. Each event the
    /// bridge hears is a hop to the session's delegate queue: a completion-handler task with no delegate
    /// to tell skips them (half the cost of a small request, measured).
    private func listen(to ferry: SessionTask) {
        let (bridges, stream) = mutable.withLock { ($0.bridgesTaskEvents, $0.bodyStream != nil) }
        if bridges, ferry.delegate == nil, stream || delegate != nil || owner.delegate is any URLSessionTaskDelegate {
            ferry.delegate = owner.bridge
        }
    }

    /// Pauses the task; ``resume()`` continues it. (A `URLProtocol` is not told: Apple's protocols
    /// have no suspend either.)
    open func suspend() {
        let delayed = mutable.withLock { state -> Task<Void, Never>? in
            defer { state.delayedStart = nil }
            return state.delayedStart
        }
        delayed?.cancel()
        ferry?.suspend()
    }

    /// Cancels the task: it completes with `URLError.cancelled`.
    open func cancel() {
        let delayed = mutable.withLock { state -> Task<Void, Never>? in
            defer { state.delayedStart = nil }
            return state.delayedStart
        }
        delayed?.cancel()
        if let loader { return loader.cancel() }
        guard let ferry else {
            reportRefusal()
            return
        }
        ferry.cancel()
    }

    /// A task that could not be made (no URL, an unsupported scheme, a refused configuration) completes
    /// with its error when resumed, as Apple's does.
    private func reportRefusal() {
        let first = reported.withLock { done in
            defer { done = true }
            return !done
        }
        guard first, let refusal else { return }
        owner.bridge.complete(self, error: refusal)
    }

    /// The task itself: a task is one transfer, so a copy is the same task (as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    override open var description: String {
        "<\(type(of: self)) \(taskIdentifier) \(originalRequest?.url?.absoluteString ?? "-")>"
    }

    // MARK: Bridge

    func record(response: URLResponse) {
        mutable.withLock { $0.response = response }
    }

    func record(currentRequest: URLRequest) {
        mutable.withLock { $0.currentRequest = currentRequest }
    }

    /// Marks the task completed with `error`; false when it already was.
    func markCompleted(error: (any Error)?) -> Bool {
        mutable.withLock { state in
            guard !state.completed else { return false }
            state.completed = true
            state.error = error
            return true
        }
    }

    func updateProgress() {
        guard ferry != nil || loader != nil, let progress = madeProgress.withLock({ $0?.value }) else { return }
        let upload = self is URLSessionUploadTask
        progress.totalUnitCount = upload ? countOfBytesExpectedToSend : countOfBytesExpectedToReceive
        progress.completedUnitCount = upload ? countOfBytesSent : countOfBytesReceived
    }

    /// The request body stream, taken once (the engine asks for it when the task starts).
    func takeBodyStream() -> InputStream? {
        mutable.withLock { state in
            defer { state.bodyStream = nil }
            return state.bodyStream?.stream
        }
    }

    func setBodyStream(_ stream: InputStream?) {
        let box = stream.map(BodyStreamBox.init)
        mutable.withLock { $0.bodyStream = box }
    }
}

/// A request's body stream, kept by its task until the engine reads it (once, from one task).
struct BodyStreamBox: @unchecked Sendable {
    let stream: InputStream
}

/// A task whose body arrives as data (Apple's `URLSessionDataTask`).
open class URLSessionDataTask: URLSessionTask, @unchecked Sendable {}

/// A data task with a request body (Apple's `URLSessionUploadTask`).
open class URLSessionUploadTask: URLSessionDataTask, @unchecked Sendable {
    /// Cancels a resumable upload and hands its resume data (nil when it cannot be continued) to
    /// `completionHandler` (see `Request.resumableUpload`).
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        guard let upload = ferry as? UploadTask else {
            cancel()
            completionHandler(nil)
            return
        }
        upload.cancel(byProducingResumeData: completionHandler)
    }
}

/// A task whose body goes to a file (Apple's `URLSessionDownloadTask`).
open class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {
    /// Cancels the download and hands its resume data to `completionHandler`: pass it to
    /// ``URLSession/downloadTask(withResumeData:)``, in this process or a later one. Nil when the
    /// download cannot be continued (not started, finished, or no validator from the server).
    open func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        guard let download = ferry as? DownloadTask else {
            cancel()
            completionHandler(nil)
            return
        }
        download.cancel(byProducingResumeData: completionHandler)
    }

    /// Cancels the download and returns its resume data (nil when it cannot be continued).
    open func cancelByProducingResumeData() async -> Data? {
        guard let download = ferry as? DownloadTask else {
            cancel()
            return nil
        }
        return await download.cancelByProducingResumeData()
    }
}
