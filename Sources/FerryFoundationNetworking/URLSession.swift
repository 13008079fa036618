package import Ferry
package import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

/// Apple's `URLSession` on Ferry's engine: the same names, signatures and behaviour, so code written
/// for URLSession runs on Ferry by importing this module. In-process sessions run on Ferry's transport;
/// background sessions (`URLSessionConfiguration.background(withIdentifier:)`) run in ferryd.
///
/// Delegate calls and completion handlers run on ``delegateQueue``, one at a time, in order.
open class URLSession: NSObject, @unchecked Sendable {
    /// The shared session: default configuration, no delegate. It is never invalidated.
    open class var shared: URLSession { sharedSession }
    private static let sharedSession = URLSession(shared: ())

    /// A copy of the configuration the session was made with.
    open var configuration: URLSessionConfiguration { configurationCopy.copy() as! URLSessionConfiguration }
    /// The delegate, held until the session is invalidated.
    open var delegate: (any URLSessionDelegate)? { state.withLock { $0.delegate } }
    /// Where delegate calls and completion handlers run: serially, in order.
    public let delegateQueue: OperationQueue
    /// A description for the application's own use.
    open var sessionDescription: String? {
        get { state.withLock { $0.sessionDescription } }
        set { state.withLock { $0.sessionDescription = newValue } }
    }

    struct State {
        var delegate: (any URLSessionDelegate)?
        var sessionDescription: String?
        /// Live tasks by their Ferry task.
        var tasks: [ObjectIdentifier: URLSessionTask] = [:]
        var nextLocalIdentifier = 1 << 40
    }

    let configurationCopy: URLSessionConfiguration
    let state: Mutex<State>
    /// The engine's session; nil when the configuration was refused (`refusal` says why).
    private(set) var ferry: Session!
    let refusal: URLError?
    let isShared: Bool
    /// Turns Ferry's events into this session's delegate calls.
    private(set) var bridge: DelegateBridge!

    /// A session with `configuration` and no delegate.
    public convenience init(configuration: URLSessionConfiguration) {
        self.init(configuration: configuration, delegate: nil, delegateQueue: nil)
    }

    /// A session with `configuration`, whose `delegate` is called on `queue` (a new serial queue when
    /// nil).
    public convenience init(configuration: URLSessionConfiguration, delegate: (any URLSessionDelegate)?, delegateQueue queue: OperationQueue?) {
        self.init(configuration: configuration, delegate: delegate, delegateQueue: queue, daemon: nil)
    }

    /// A session whose background tasks go to `daemon` instead of this user's ferryd (tests, and
    /// programs that run a daemon of their own), and whose others go through `transport` when given
    /// one (instead of the configuration's stores and Ferry's network transport).
    package init(
        configuration: URLSessionConfiguration,
        delegate: (any URLSessionDelegate)?,
        delegateQueue queue: OperationQueue?,
        daemon: DaemonClient?,
        transport: (any HTTPTransport)? = nil
    ) {
        self.configurationCopy = configuration.copy() as! URLSessionConfiguration
        self.delegateQueue = queue ?? Self.serialQueue()
        self.state = Mutex(State(delegate: delegate))
        self.isShared = false
        var refusal: URLError?
        let ferryConfiguration: SessionConfiguration
        switch configurationCopy.ferryConfiguration() {
        case .success(let made): ferryConfiguration = made
        case .failure(let error):
            refusal = error
            ferryConfiguration = .ephemeral
        }
        self.refusal = refusal
        super.init()
        bridge = DelegateBridge(session: self)
        if let transport, refusal == nil, configurationCopy.kind != .background {
            // A transport of the caller's (`urlsession-bench-ferry layers`: this module's CPU alone).
            ferry = Session(configuration: ferryConfiguration, delegate: bridge, transport: transport)
        } else if let daemon, configurationCopy.kind == .background, refusal == nil {
            ferry = Session(configuration: ferryConfiguration, delegate: bridge, daemon: daemon)
        } else if refusal == nil, configurationCopy.kind != .background {
            // The configuration's own stores (an ephemeral one's cookies and credentials, a URLCache
            // object), shared with the other sessions made from it.
            var cookies: CookieStore?
            if let storage = configurationCopy.httpCookieStorage, storage !== HTTPCookieStorage.shared {
                storage.store.acceptPolicy = ferryConfiguration.cookieJarAcceptPolicy
                cookies = storage.store
            }
            let credentials = configurationCopy.urlCredentialStorage.flatMap { $0 === URLCredentialStorage.shared ? nil : $0.store }
            ferry = Session(
                configuration: ferryConfiguration,
                delegate: bridge,
                cookies: cookies,
                cache: configurationCopy.urlCache?.cache,
                credentials: credentials
            )
        } else {
            ferry = Session(configuration: ferryConfiguration, delegate: bridge)
        }
    }

    private init(shared: Void) {
        self.configurationCopy = .default
        self.delegateQueue = Self.serialQueue()
        self.state = Mutex(State())
        self.isShared = true
        self.refusal = nil
        super.init()
        bridge = DelegateBridge(session: self)
        ferry = Session(configuration: .default, delegate: bridge)
    }

    private static func serialQueue() -> OperationQueue {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "FerryFoundationNetworking.URLSession.delegateQueue"
        return queue
    }

    // MARK: Data tasks

    /// A data task for `request` (its `httpBody` or `httpBodyStream`, if any, is sent).
    open func dataTask(with request: URLRequest) -> URLSessionDataTask {
        make(URLSessionDataTask.self, request, body: .fromRequest, completion: nil)
    }

    /// A data task for a GET of `url`.
    open func dataTask(with url: URL) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url))
    }

    /// A data task whose body and response go to `completionHandler` (on the delegate queue) instead of
    /// the delegate's data methods.
    open func dataTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        make(URLSessionDataTask.self, request, body: .fromRequest, completion: .data(completionHandler))
    }

    /// A data task for a GET of `url`, with a completion handler.
    open func dataTask(
        with url: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        dataTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    // MARK: Upload tasks

    /// An upload of the file at `fileURL` (read as it is sent).
    open func uploadTask(with request: URLRequest, fromFile fileURL: URL) -> URLSessionUploadTask {
        make(URLSessionUploadTask.self, request, body: .file(fileURL), completion: nil)
    }

    /// An upload of `bodyData`.
    open func uploadTask(with request: URLRequest, from bodyData: Data) -> URLSessionUploadTask {
        make(URLSessionUploadTask.self, request, body: .data(bodyData), completion: nil)
    }

    /// An upload whose body comes from the delegate's `needNewBodyStream` (or the request's
    /// `httpBodyStream`).
    open func uploadTask(withStreamedRequest request: URLRequest) -> URLSessionUploadTask {
        make(URLSessionUploadTask.self, request, body: .stream, completion: nil)
    }

    /// An upload of the file at `fileURL`, with a completion handler.
    open func uploadTask(
        with request: URLRequest,
        fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        make(URLSessionUploadTask.self, request, body: .file(fileURL), completion: .data(completionHandler))
    }

    /// An upload of `bodyData` (nil: none), with a completion handler.
    open func uploadTask(
        with request: URLRequest,
        from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        make(URLSessionUploadTask.self, request, body: .data(bodyData ?? Data()), completion: .data(completionHandler))
    }

    /// Continues a resumable upload from resume data (`URLSessionUploadTask.cancel(byProducingResumeData:)`).
    open func uploadTask(withResumeData resumeData: Data) -> URLSessionUploadTask {
        let ferryTask = ferry.uploadTask(withResumeData: resumeData)
        return adopt(URLSessionUploadTask.self, ferryTask, original: ferryTask.originalRequest.map(FoundationBridge.urlRequest))
    }

    // MARK: Download tasks

    /// A download of `request` to a temporary file handed to `didFinishDownloadingTo`.
    open func downloadTask(with request: URLRequest) -> URLSessionDownloadTask {
        make(URLSessionDownloadTask.self, request, body: .download, completion: nil)
    }

    /// A download of `url`.
    open func downloadTask(with url: URL) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url))
    }

    /// A download that continues from resume data (from `cancel(byProducingResumeData:)` or a failed
    /// download's `URLError.downloadTaskResumeData`), in this process or an earlier one.
    open func downloadTask(withResumeData resumeData: Data) -> URLSessionDownloadTask {
        make(URLSessionDownloadTask.self, nil, body: .resume(resumeData), completion: nil)
    }

    /// A download whose file goes to `completionHandler` (removed when it returns).
    open func downloadTask(
        with request: URLRequest,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        make(URLSessionDownloadTask.self, request, body: .download, completion: .file(completionHandler))
    }

    /// A download of `url`, with a completion handler.
    open func downloadTask(
        with url: URL,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        downloadTask(with: URLRequest(url: url), completionHandler: completionHandler)
    }

    /// A download from resume data, with a completion handler.
    open func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        make(URLSessionDownloadTask.self, nil, body: .resume(resumeData), completion: .file(completionHandler))
    }

    // MARK: WebSocket tasks

    /// A WebSocket task for `url` (ws:// or wss://).
    open func webSocketTask(with url: URL) -> URLSessionWebSocketTask {
        webSocketTask(with: URLRequest(url: url))
    }

    /// A WebSocket task for `url`, offering `protocols` (Sec-WebSocket-Protocol).
    open func webSocketTask(with url: URL, protocols: [String]) -> URLSessionWebSocketTask {
        makeWebSocketTask(URLRequest(url: url), protocols: protocols)
    }

    /// A WebSocket task for `request`: its URL, header fields and timeout apply to the handshake.
    open func webSocketTask(with request: URLRequest) -> URLSessionWebSocketTask {
        makeWebSocketTask(request, protocols: [])
    }

    // MARK: Stream tasks

    /// A TCP connection to `hostname`:`port`, through the session's proxy when one applies.
    open func streamTask(withHostName hostname: String, port: Int) -> URLSessionStreamTask {
        if let refusal { return refused(URLSessionStreamTask.self, nil, refusal, completion: nil) }
        return adopt(URLSessionStreamTask.self, ferry.streamTask(withHostName: hostname, port: port), original: nil)
    }

    // MARK: Session

    /// The tasks not yet completed.
    open func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        Task {
            let tasks = await self.allTasks
            self.delegateQueue.addOperation { completionHandler(tasks) }
        }
    }

    /// The tasks not yet completed, by kind.
    open func getTasksWithCompletionHandler(
        _ completionHandler: @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) -> Void
    ) {
        Task {
            let (data, upload, download) = await self.tasks
            self.delegateQueue.addOperation { completionHandler(data, upload, download) }
        }
    }

    /// The tasks not yet completed (for a background session, ferryd's, made by any process).
    open var allTasks: [URLSessionTask] {
        get async {
            let live = await ferry.allTasks
            let loaded = state.withLock { $0.tasks.values.filter { $0.loader != nil } }
            return (live.map { bridge.wrapper(for: $0) } + loaded)
                .filter { $0.state != .completed }
                .sorted { $0.taskIdentifier < $1.taskIdentifier }
        }
    }

    /// The tasks not yet completed, by kind.
    open var tasks: ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask]) {
        get async {
            let all = await allTasks
            return (
                all.compactMap { $0 is URLSessionUploadTask ? nil : $0 as? URLSessionDataTask },
                all.compactMap { $0 as? URLSessionUploadTask },
                all.compactMap { $0 as? URLSessionDownloadTask }
            )
        }
    }

    /// Lets the tasks finish, then invalidates the session (`didBecomeInvalidWithError(nil)`). Does
    /// nothing on ``shared``.
    open func finishTasksAndInvalidate() {
        guard !isShared else { return }
        ferry.finishTasksAndInvalidate()
    }

    /// Cancels every task and invalidates the session. Does nothing on ``shared``.
    open func invalidateAndCancel() {
        guard !isShared else { return }
        ferry.invalidateAndCancel()
    }

    /// Empties the session's cookies, credentials and cache, then calls `completionHandler` on the
    /// delegate queue. (Open connections stay in the pool: docs/FOUNDATION_NETWORKING.md.)
    open func reset(completionHandler: @escaping @Sendable () -> Void) {
        ferry.cookies?.removeAll()
        ferry.cache?.removeAllCachedResponses()
        ferry.credentials?.removeAll()
        delegateQueue.addOperation { completionHandler() }
    }

    /// Writes what the session keeps to disk. Ferry's stores write each change as it happens, so this
    /// only calls `completionHandler` (on the delegate queue) once what is pending is written.
    open func flush(completionHandler: @escaping @Sendable () -> Void) {
        delegateQueue.addOperation { completionHandler() }
    }

    // MARK: Async

    /// Loads `request` and returns its body and response. `delegate` gets this task's events.
    open func data(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        let outcome = try await run(URLSessionDataTask.self, request, body: .fromRequest, delegate: delegate)
        guard case .data(let data, let response) = outcome else { throw URLError(.unknown) }
        return (data, response)
    }

    /// Loads `url` with a GET.
    open func data(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (Data, URLResponse) {
        try await data(for: URLRequest(url: url), delegate: delegate)
    }

    /// Uploads the file at `fileURL` and returns the response body.
    open func upload(
        for request: URLRequest,
        fromFile fileURL: URL,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        let outcome = try await run(URLSessionUploadTask.self, request, body: .file(fileURL), delegate: delegate)
        guard case .data(let data, let response) = outcome else { throw URLError(.unknown) }
        return (data, response)
    }

    /// Uploads `bodyData` and returns the response body.
    open func upload(
        for request: URLRequest,
        from bodyData: Data,
        delegate: (any URLSessionTaskDelegate)? = nil
    ) async throws -> (Data, URLResponse) {
        let outcome = try await run(URLSessionUploadTask.self, request, body: .data(bodyData), delegate: delegate)
        guard case .data(let data, let response) = outcome else { throw URLError(.unknown) }
        return (data, response)
    }

    /// Downloads `request` to a file that is now the caller's to move or remove.
    open func download(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        let outcome = try await run(URLSessionDownloadTask.self, request, body: .download, delegate: delegate)
        guard case .file(let url, let response) = outcome else { throw URLError(.unknown) }
        return (url, response)
    }

    /// Downloads `url`.
    open func download(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        try await download(for: URLRequest(url: url), delegate: delegate)
    }

    /// Continues a download from resume data.
    open func download(resumeFrom resumeData: Data, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        let outcome = try await run(URLSessionDownloadTask.self, nil, body: .resume(resumeData), delegate: delegate)
        guard case .file(let url, let response) = outcome else { throw URLError(.unknown) }
        return (url, response)
    }

    // MARK: Making tasks

    /// Where a task's body comes from.
    enum Body {
        /// The request's `httpBody` or `httpBodyStream`, if any.
        case fromRequest
        case data(Data)
        case file(URL)
        case stream
        case download
        case resume(Data)
    }

    /// What a completion-handler task hands over.
    enum Completion {
        case data(@Sendable (Data?, URLResponse?, (any Error)?) -> Void)
        case file(@Sendable (URL?, URLResponse?, (any Error)?) -> Void)
        /// An async method waits: its continuation takes the outcome.
        case async(@Sendable (Result<DelegateBridge.Delivered, any Error>) -> Void)
    }

    func make<T: URLSessionTask>(_ kind: T.Type, _ request: URLRequest?, body: Body, completion: Completion?) -> T {
        var work: Session.BridgedWork
        var stream: InputStream?
        switch body {
        case .fromRequest:
            if let data = request?.httpBody {
                work = .upload(data)
            } else if let bodyStream = request?.httpBodyStream {
                work = .uploadStream
                stream = bodyStream
            } else {
                work = .data
            }
        case .data(let data): work = .upload(data)
        case .file(let file): work = .uploadFile(file)
        case .stream:
            work = .uploadStream
            stream = request?.httpBodyStream
        case .download: work = .download
        case .resume(let data): work = .downloadResume(data)
        }
        // A URLProtocol class comes first: it may take schemes the engine does not.
        if self.refusal == nil, let request, request.url != nil,
            let loaded = loadedByProtocol(kind, request, body: body, stream: stream, completion: completion)
        {
            return loaded
        }
        var ferryRequest: Request?
        var refusal = self.refusal
        if let request, refusal == nil {
            switch FoundationBridge.request(request) {
            case .success(let made): ferryRequest = made
            case .failure(let error): refusal = error
            }
        }
        if case .downloadResume = work, refusal == nil { ferryRequest = Request(url: URL(string: "http://resume.invalid/")!) }
        guard refusal == nil, let ferryRequest else {
            return refused(kind, request, refusal ?? URLError(.badURL), completion: completion)
        }
        // The handler needs the wrapper, made after the Ferry task: the slot takes it before the task can
        // run (tasks are made suspended).
        let slot = Mutex<URLSessionTask?>(nil)
        var route: (@Sendable (Session.BridgedOutcome) -> Void)?
        if completion != nil {
            let bridge = self.bridge!
            // Taken once: the wrapper holds the Ferry task, which holds this route, so the slot must let go
            // of the wrapper when the task ends (20,000 requests kept 1 GB alive before it did).
            route = { outcome in
                let task = slot.withLock { slot in
                    defer { slot = nil }
                    return slot
                }
                if let task { bridge.finish(task, with: outcome) }
            }
        }
        let ferryTask = ferry.bridgedTask(ferryRequest, work, completion: route)
        let original: URLRequest? =
            if case .downloadResume = work { ferryTask.originalRequest.map(FoundationBridge.urlRequest) } else { request }
        let task = adopt(kind, ferryTask, original: original)
        task.setBodyStream(stream)
        if let completion {
            bridge.setCompletion(completion, for: task)
            slot.withLock { $0 = task }
            // Task-level events (redirects, challenges, progress, metrics) still reach the delegates:
            // URLSessionTask.begin() routes them through the bridge when someone listens.
            task.mutable.withLock { $0.bridgesTaskEvents = true }
        }
        return task
    }

    /// A task that cannot run: it completes with `refusal` when resumed, as Apple's does.
    private func refused<T: URLSessionTask>(_ kind: T.Type, _ request: URLRequest?, _ refusal: URLError, completion: Completion?) -> T {
        let task = T.make(owner: self, ferry: nil, original: request, refusal: refusal, identifier: nextLocalIdentifier())
        if let completion { bridge.setCompletion(completion, for: task) }
        bridge.created(task)
        return task
    }

    /// A WebSocket task on Ferry's WebSocket client.
    func makeWebSocketTask(_ request: URLRequest, protocols: [String]) -> URLSessionWebSocketTask {
        if let refusal { return refused(URLSessionWebSocketTask.self, request, refusal, completion: nil) }
        switch FoundationBridge.request(request) {
        case .failure(let error):
            return refused(URLSessionWebSocketTask.self, request, error, completion: nil)
        case .success(let made):
            return adopt(URLSessionWebSocketTask.self, ferry.webSocketTask(with: made, protocols: protocols), original: request)
        }
    }

    private func nextLocalIdentifier() -> Int {
        state.withLock { state in
            defer { state.nextLocalIdentifier += 1 }
            return state.nextLocalIdentifier
        }
    }

    /// The `URLProtocol` classes this session consults, in order: the configuration's, then (for
    /// ``shared`` only, as Apple's) the registered ones. Background sessions consult none.
    var protocolClasses: [AnyClass] {
        guard configurationCopy.kind != .background else { return [] }
        let configured = configurationCopy.protocolClasses ?? []
        return isShared ? configured + URLProtocol.registeredClasses : configured
    }

    /// A task loaded by the first protocol class that takes `request`; nil when none does (or there are
    /// none: the engine loads it).
    private func loadedByProtocol<T: URLSessionTask>(
        _ kind: T.Type,
        _ request: URLRequest,
        body: Body,
        stream: InputStream?,
        completion: Completion?
    ) -> T? {
        let classes = protocolClasses
        guard !classes.isEmpty else { return nil }
        // canInit(with: task) needs the task: a wrapper no one sees unless a class takes it.
        let task = T.make(owner: self, ferry: nil, original: request, refusal: nil, identifier: nextLocalIdentifier())
        guard let chosen = URLProtocolLoader.choose(from: classes, task: task, request: request) else { return nil }
        let loaderBody: URLProtocolLoader.Body =
            switch body {
            case .data(let data): .data(data)
            case .file(let file): .file(file)
            case .stream: .stream
            case .fromRequest where request.httpBodyStream != nil: .stream
            case .fromRequest, .download, .resume: .none
            }
        task.setBodyStream(stream)
        task.loader = URLProtocolLoader(task: task, session: self, protocolClass: chosen, body: loaderBody)
        if let completion { bridge.setCompletion(completion, for: task) }
        state.withLock { $0.tasks[task.key] = task }
        bridge.created(task)
        return task
    }

    /// The wrapper of a Ferry task made by this session, registered so Ferry's events find it.
    func adopt<T: URLSessionTask>(_ kind: T.Type, _ ferryTask: SessionTask, original: URLRequest?) -> T {
        let task = T.make(owner: self, ferry: ferryTask, original: original, refusal: nil, identifier: ferryTask.taskIdentifier)
        state.withLock { $0.tasks[ObjectIdentifier(ferryTask)] = task }
        bridge.created(task)
        return task
    }

    /// Runs a task for an async method: cancelling the caller cancels it.
    func run<T: URLSessionTask>(
        _ kind: T.Type,
        _ request: URLRequest?,
        body: Body,
        delegate: (any URLSessionTaskDelegate)?
    ) async throws -> DelegateBridge.Delivered {
        try await runMade(delegate: delegate) { completion in
            self.make(kind, request, body: body, completion: completion)
        }
    }

    /// ``run(_:_:body:delegate:)`` for the task `make` makes with the completion it is given. Not
    /// generic, as ``AsyncTaskCall`` is not: closures made inside a generic method are compiled for
    /// every kind of task.
    private func runMade(
        delegate: (any URLSessionTaskDelegate)?,
        _ make: (Completion) -> URLSessionTask
    ) async throws -> DelegateBridge.Delivered {
        let call = AsyncTaskCall()
        return try await withTaskCancellationHandler {
            let task = make(.async({ call.finish($0) }))
            task.delegate = delegate
            call.set(task)
            await task.runForAsyncCaller()
            return try await call.result().get()
        } onCancel: {
            call.cancel()
        }
    }
}
