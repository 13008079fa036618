import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Loads one task through a `URLProtocol` subclass (this module's, or FoundationNetworking's) and turns
/// the protocol's reports into the task's delegate calls and completion, as Apple's loader does.
///
/// The protocol reports from any thread; the reports queue up in order and one consumer handles them,
/// waiting for the delegate where Apple's delegate answers (a response's disposition, a redirect, a
/// challenge). ``URLProtocolLoadState`` decides which reports count. The protocol object's
/// `startLoading` and `stopLoading` run on the loader's own serial queue.
final class URLProtocolLoader: NSObject, URLProtocolClient, @unchecked Sendable {
    /// A protocol class of either kind.
    enum ProtocolClass: @unchecked Sendable {
        case ferry(URLProtocol.Type)
        case foundation(FoundationNetworking.URLProtocol.Type)

        init?(_ candidate: AnyClass) {
            if let ours = candidate as? URLProtocol.Type {
                self = .ferry(ours)
            } else if let theirs = candidate as? FoundationNetworking.URLProtocol.Type {
                self = .foundation(theirs)
            } else {
                return nil
            }
        }

        /// Whether the class takes `request` (for `task` when there is one).
        func canInit(_ task: URLSessionTask?, _ request: URLRequest) -> Bool {
            switch self {
            case .ferry(let type): task.map { type.canInit(with: $0) } ?? type.canInit(with: request)
            case .foundation(let type): type.canInit(with: request)
            }
        }

        func canonical(_ request: URLRequest) -> URLRequest {
            switch self {
            case .ferry(let type): type.canonicalRequest(for: request)
            case .foundation(let type): type.canonicalRequest(for: request)
            }
        }
    }

    /// The first of `classes` that loads `request` for `task`.
    static func choose(from classes: [AnyClass], task: URLSessionTask, request: URLRequest) -> ProtocolClass? {
        for candidate in classes {
            if let made = ProtocolClass(candidate), made.canInit(task, request) { return made }
        }
        return nil
    }

    private enum Event {
        case redirected(URLRequest, URLResponse)
        case response(URLResponse)
        case data(Data)
        case finished
        case failed(any Error)
        case challenge(URLAuthenticationChallenge)
    }

    private struct Queued: @unchecked Sendable {
        let generation: Int
        let event: Event
    }

    private struct Live {
        var state = URLProtocolLoadState()
        var protocolClass: ProtocolClass
        /// The protocol object now loading, and its generation.
        var current: (object: Carried<NSObject>, generation: Int)?
        var received: Int64 = 0
        var expected: Int64 = -1
        var sent: Int64 = 0
        var expectedToSend: Int64 = 0
    }

    private let task: URLSessionTask
    private let session: URLSession
    private let body: Body
    private let live: Mutex<Live>
    private let queue = DispatchQueue(label: "FerryFoundationNetworking.URLProtocolLoader")
    private let events: AsyncStream<Queued>.Continuation
    private let stream: AsyncStream<Queued>

    /// What the request's body is, for the protocol's `httpBodyStream`.
    enum Body {
        case none
        case data(Data)
        case file(URL)
        /// The request's `httpBodyStream`, or else the delegate's `needNewBodyStream`.
        case stream
    }

    init(task: URLSessionTask, session: URLSession, protocolClass: ProtocolClass, body: Body) {
        self.task = task
        self.session = session
        self.body = body
        self.live = Mutex(Live(protocolClass: protocolClass))
        (stream, events) = AsyncStream.makeStream(of: Queued.self)
        super.init()
    }

    // MARK: The task's calls

    /// Apple's task state (`URLSessionTask.State`'s raw value).
    var taskState: Int { live.withLock { $0.state.taskState } }
    var countOfBytesReceived: Int64 { live.withLock { $0.received } }
    var countOfBytesExpectedToReceive: Int64 { live.withLock { $0.expected } }
    var countOfBytesSent: Int64 { live.withLock { $0.sent } }
    var countOfBytesExpectedToSend: Int64 { live.withLock { $0.expectedToSend } }

    func resume() {
        guard case .start(let generation) = live.withLock({ $0.state.apply(.resume) }) else { return }
        Task {
            guard let request = await self.requestWithBody(task.currentRequest ?? task.originalRequest) else {
                return self.failFromLoader(URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "the task has no request"]))
            }
            self.start(request, generation: generation)
            await self.consume()
        }
    }

    func cancel() {
        let (action, object) = live.withLock { ($0.state.apply(.cancel), $0.current?.object.value) }
        guard action == .stopAndCancel else { return }
        if let object { stop(object) }
        events.finish()
        // The task is canceling until its completion is delivered, after cancel() returns (as Apple's).
        let error = FoundationBridge.error(.cancelled, "cancelled", url: task.currentRequest?.url)
        Task { self.complete(.failure(error)) }
    }

    // MARK: The protocol object

    /// The request the protocol sees: its body, if any, as `httpBodyStream` (as Apple hands it over).
    private func requestWithBody(_ request: URLRequest?) async -> URLRequest? {
        guard var request else { return nil }
        switch body {
        case .none:
            if let data = request.httpBody {
                request.httpBodyStream = InputStream(data: data)
                live.withLock { $0.expectedToSend = Int64(data.count) }
            }
        case .data(let data):
            request.httpBodyStream = InputStream(data: data)
            live.withLock { $0.expectedToSend = Int64(data.count) }
        case .file(let file):
            request.httpBodyStream = InputStream(url: file)
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value
            live.withLock { $0.expectedToSend = size ?? -1 }
        case .stream:
            if let stream = task.takeBodyStream() {
                request.httpBodyStream = stream
            } else {
                request.httpBodyStream = await session.bridge.needNewBodyStream(task)
            }
            live.withLock { $0.expectedToSend = -1 }
        }
        return request
    }

    private func start(_ request: URLRequest, generation: Int) {
        let protocolClass = live.withLock { $0.protocolClass }
        let canonical = protocolClass.canonical(request)
        task.record(currentRequest: canonical)
        let object: NSObject
        switch protocolClass {
        case .ferry(let type):
            object = type.init(task: task, cachedResponse: nil, client: self)
        case .foundation(let type):
            object = type.init(request: canonical, cachedResponse: nil, client: self)
        }
        let carried = Carried(value: object)
        let stillLoading = live.withLock { live -> Bool in
            guard live.state.generation == generation, live.state.phase != .finishing, live.state.phase != .completed else { return false }
            live.current = (carried, generation)
            return true
        }
        guard stillLoading else { return }
        queue.async {
            switch carried.value {
            case let ours as URLProtocol: ours.startLoading()
            case let theirs as FoundationNetworking.URLProtocol: theirs.startLoading()
            default: break
            }
        }
    }

    private func stop(_ object: NSObject) {
        let carried = Carried(value: object)
        queue.async {
            switch carried.value {
            case let ours as URLProtocol: ours.stopLoading()
            case let theirs as FoundationNetworking.URLProtocol: theirs.stopLoading()
            default: break
            }
        }
    }

    /// The generation of `object`'s reports (0 for an object the loader does not know: ignored).
    private func generation(of object: AnyObject) -> Int {
        let identity = ObjectIdentifier(object)
        return live.withLock { live in
            guard let current = live.current, ObjectIdentifier(current.object.value) == identity else { return 0 }
            return current.generation
        }
    }

    private func report(_ object: AnyObject, _ event: Event) {
        events.yield(Queued(generation: generation(of: object), event: event))
    }

    // MARK: Handling reports

    /// The body so far, for a completion handler or an async caller.
    private var collected = Data()
    /// A download's file, made when the first data arrives (the consumer alone touches it).
    private var file: (url: URL, handle: FileHandle)?
    /// Whether the file went to the delegate, completion handler or async caller.
    private var handedOver = false

    private func consume() async {
        for await queued in stream {
            let kind: URLProtocolLoadState.Report =
                switch queued.event {
                case .redirected: .redirect
                case .response: .response
                case .data: .data
                case .finished: .finished
                case .failed: .failed
                case .challenge: .challenge
                }
            guard live.withLock({ $0.state.apply(.report(generation: queued.generation, kind)) }) == .handle else { continue }
            let goOn = await handle(queued.event)
            if !goOn { break }
        }
        // A download's file not handed over (failed, cancelled) is removed.
        if let file, !handedOver {
            try? file.handle.close()
            try? FileManager.default.removeItem(at: file.url)
        }
    }

    /// Handles one report; false when the load is over.
    private func handle(_ event: Event) async -> Bool {
        let bridge = session.bridge!
        switch event {
        case .response(let response):
            task.record(response: response)
            live.withLock { $0.expected = response.expectedContentLength }
            let disposition = await bridge.protocolResponse(task, response)
            guard answered() else { return false }
            switch disposition {
            case .allow:
                return true
            case .cancel:
                cancel()
                return false
            case .becomeDownload, .becomeStream:
                stopCurrent()
                failFromLoader(FoundationBridge.error(.unsupportedURL, "a task loaded by a URLProtocol cannot become a download or a stream in FerryFoundationNetworking", url: task.currentRequest?.url))
                return false
            }
        case .data(let data):
            let total = live.withLock { live -> Int64 in
                live.received += Int64(data.count)
                return live.received
            }
            task.updateProgress()
            if task is URLSessionDownloadTask {
                do {
                    try write(data)
                } catch {
                    stopCurrent()
                    failFromLoader(URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "could not write the download: \(error)"]))
                    return false
                }
                await bridge.protocolWrote(task, Int64(data.count), total, live.withLock { $0.expected })
            } else if bridge.hasCompletion(task) {
                collected.append(data)
            } else {
                await bridge.protocolData(task, data)
            }
            return true
        case .redirected(let request, let response):
            stopCurrent()
            let next = await bridge.protocolRedirect(task, response, request)
            guard answered() else { return false }
            guard let next else {
                // The delegate refused: the redirect's response is the answer, without a body.
                task.record(response: response)
                await finishFromLoader()
                return false
            }
            let classes = session.protocolClasses
            guard let protocolClass = Self.choose(from: classes, task: task, request: next) else {
                failFromLoader(FoundationBridge.error(.unsupportedURL, "a URLProtocol redirected to \(next.url?.absoluteString ?? "a request without a URL"), which no protocol class of the session loads (FerryFoundationNetworking cannot hand a URLProtocol's task to the network mid-way)", url: next.url))
                return false
            }
            let generation = live.withLock { live in
                live.protocolClass = protocolClass
                return live.state.redirected()
            }
            task.record(currentRequest: next)
            collected = Data()
            guard let withBody = await requestWithBody(next) else { return false }
            start(withBody, generation: generation)
            return true
        case .challenge(let challenge):
            await bridge.protocolChallenge(task, challenge)
            return answered()
        case .finished:
            await finishFromLoader()
            return false
        case .failed(let error):
            deliverFailure(error)
            return false
        }
    }

    /// The delegate has answered; false when the task was cancelled meanwhile.
    private func answered() -> Bool {
        live.withLock { $0.state.apply(.answered) } == .handle
    }

    private func stopCurrent() {
        if let object = live.withLock({ $0.current?.object.value }) { stop(object) }
    }

    private func write(_ data: Data) throws {
        if file == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("CFNetworkDownload_\(UUID().uuidString).tmp")
            guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw URLError(.cannotCreateFile)
            }
            file = (url, try FileHandle(forWritingTo: url))
        }
        try file?.handle.write(contentsOf: data)
    }

    /// The protocol finished (or the delegate refused a redirect): deliver the body or the file.
    private func finishFromLoader() async {
        guard live.withLock({ live -> Bool in
            // A refused redirect ends from `asking`'s answer; a finish report already moved to finishing.
            if live.state.phase == .loading { _ = live.state.apply(.report(generation: live.state.generation, .finished)) }
            return live.state.phase == .finishing
        }) else { return }
        events.finish()
        let response = task.response ?? URLResponse(url: task.currentRequest?.url ?? URL(fileURLWithPath: "/"), mimeType: nil, expectedContentLength: -1, textEncodingName: nil)
        if task is URLSessionDownloadTask {
            if file == nil { try? write(Data()) }
            try? file?.handle.close()
            guard let url = file?.url else { return failFromLoader(URLError(.cannotCreateFile)) }
            handedOver = true
            complete(.success(.file(url, response)))
        } else {
            if !session.bridge.hasCompletion(task) { await session.bridge.deliverHeldBody(task) }
            complete(.success(.data(collected, response)))
        }
    }

    private func failFromLoader(_ error: URLError) {
        live.withLock { live in
            if live.state.phase == .loading || live.state.phase == .asking || live.state.phase == .suspended {
                _ = live.state.apply(.cancel)
            }
        }
        events.finish()
        complete(.failure(error))
    }

    private func deliverFailure(_ error: any Error) {
        events.finish()
        complete(.failure(error))
    }

    private func complete(_ result: Result<DelegateBridge.Delivered, any Error>) {
        session.bridge.deliver(task, result)
        _ = live.withLock { $0.state.apply(.delivered) }
    }

    // MARK: URLProtocolClient (this module's)

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {
        report(`protocol`, .redirected(request, redirectResponse))
    }

    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {
        report(`protocol`, .response(cachedResponse.response))
        report(`protocol`, .data(cachedResponse.data))
        report(`protocol`, .finished)
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy) {
        report(`protocol`, .response(response))
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        report(`protocol`, .data(data))
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        report(`protocol`, .finished)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) {
        report(`protocol`, .failed(error))
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        report(`protocol`, .challenge(challenge))
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {}
}

#if canImport(FoundationNetworking)
/// FoundationNetworking's client protocol: a subclass of its `URLProtocol` reports here too.
extension URLProtocolLoader: FoundationNetworking.URLProtocolClient {
    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: FoundationNetworking.URLResponse) {
        report(`protocol`, .redirected(request, .foundation(redirectResponse)))
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, cachedResponseIsValid cachedResponse: FoundationNetworking.CachedURLResponse) {
        report(`protocol`, .response(.foundation(cachedResponse.response)))
        report(`protocol`, .data(cachedResponse.data))
        report(`protocol`, .finished)
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, didReceive response: FoundationNetworking.URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy) {
        report(`protocol`, .response(.foundation(response)))
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, didLoad data: Data) {
        report(`protocol`, .data(data))
    }

    func urlProtocolDidFinishLoading(_ protocol: FoundationNetworking.URLProtocol) {
        report(`protocol`, .finished)
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, didFailWithError error: any Error) {
        report(`protocol`, .failed(error))
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, didReceive challenge: FoundationNetworking.URLAuthenticationChallenge) {
        report(`protocol`, .challenge(URLAuthenticationChallenge(challenge)))
    }

    func urlProtocol(_ protocol: FoundationNetworking.URLProtocol, didCancel challenge: FoundationNetworking.URLAuthenticationChallenge) {}
}
#endif
