import AsyncHTTPClient
public import FerryCore
import FerryEngine
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Talks to `ferryd` over its control API (HTTP/1.1 and JSON on the unix socket; ``ControlAPI`` lists
/// the routes), and starts it when no daemon answers. Used by background sessions and by the `ferry`
/// command; scripts may use it too.
///
/// Each call has two forms. Async code gets the async one, which suspends and never blocks a thread. The
/// synchronous one blocks the calling thread (never an event loop of the client's) for one round trip
/// over the local socket; it is left for what must answer at once, as URLSession's task factories do
/// (a new task's identifier comes from the daemon).
public final class DaemonClient: Sendable {
    /// Where the daemon's socket and state are.
    public let paths: DaemonPaths
    private let http: HTTPClient

    /// A client for the daemon at `paths`.
    public init(paths: DaemonPaths) {
        self.paths = paths
        self.http = Self.controlClient
    }

    /// The HTTP client of every DaemonClient in the process. Unlike `HTTPClient.shared` it does not
    /// retry a refused connection (AsyncHTTPClient's default keeps trying until the deadline), so a
    /// daemon that is not running is known at once, with no probe connection before each call.
    private static let controlClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    /// A client for this user's daemon (or the one `FERRY_HOME` names).
    /// - Throws: ``FerryError`` when no directory can be worked out.
    public static func forCurrentUser() throws -> DaemonClient {
        DaemonClient(paths: try DaemonPaths(environment: ProcessInfo.processInfo.environment))
    }

    // MARK: Calls

    /// Sends one request and decodes the JSON answer.
    /// - Throws: the daemon's ``FerryError`` for a 4xx/5xx answer; ``FerryError/Code/backgroundSessionWasDisconnected``
    ///   when no daemon answers.
    public func call<Answer: Decodable>(
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none,
        timeout: Double = 30,
        as: Answer.Type = Answer.self
    ) throws -> Answer {
        try Self.decode(Answer.self, try send(method, path, body: body, timeout: timeout), method, path)
    }

    /// Sends one request whose answer has no body (204).
    public func perform(
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none,
        timeout: Double = 30
    )
        throws
    {
        _ = try send(method, path, body: body, timeout: timeout)
    }

    /// Sends one request and decodes the JSON answer, suspending (never blocking) the caller meanwhile:
    /// the form async code gets.
    /// - Throws: as the synchronous form.
    public func call<Answer: Decodable>(
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none,
        timeout: Double = 30,
        as: Answer.Type = Answer.self
    ) async throws -> Answer {
        try Self.decode(Answer.self, try await sendAsync(method, path, body: body, timeout: timeout), method, path)
    }

    /// Sends one request whose answer has no body (204), suspending the caller meanwhile.
    public func perform(
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none,
        timeout: Double = 30
    ) async throws {
        _ = try await sendAsync(method, path, body: body, timeout: timeout)
    }

    private func sendAsync(_ method: String, _ path: String, body: (some Encodable)?, timeout: Double) async throws
        -> Data
    {
        let request = try makeRequest(method, path, body: body)
        let response: HTTPClient.Response
        do {
            response = try await http.execute(
                request: request,
                deadline: .now() + .milliseconds(Int64(timeout * 1000))
            ).get()
        } catch {
            throw unreachable(error)
        }
        return try Self.answer(response)
    }

    private func send(_ method: String, _ path: String, body: (some Encodable)?, timeout: Double) throws -> Data {
        let request = try makeRequest(method, path, body: body)
        let response: HTTPClient.Response
        do {
            response = try http.execute(request: request, deadline: .now() + .milliseconds(Int64(timeout * 1000)))
                .wait()
        } catch {
            throw unreachable(error)
        }
        return try Self.answer(response)
    }

    /// The JSON answer to `method` `path`, decoded (both forms of ``call(_:_:body:timeout:as:)``).
    private static func decode<Answer: Decodable>(_: Answer.Type, _ data: Data, _ method: String, _ path: String)
        throws -> Answer
    {
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw FerryError(
                .badServerResponse,
                "ferryd's answer to \(method) \(path) is not what this client expects: \(error)"
            )
        }
    }

    private static func answer(_ response: HTTPClient.Response) throws -> Data {
        let data = response.body.map { Data($0.readableBytesView) } ?? Data()
        guard (200..<300).contains(Int(response.status.code)) else {
            throw Self.decodeError(data, status: response.status.code)
        }
        return data
    }

    private func makeRequest(_ method: String, _ path: String, body: (some Encodable)? = String?.none) throws
        -> HTTPClient.Request
    {
        guard let url = URL(httpURLWithSocketPath: paths.socket, uri: path) else {
            throw FerryError(.badURL, "cannot address ferryd's socket \(paths.socket) with \(path)")
        }
        var request = try HTTPClient.Request(url: url, method: HTTPMethod(rawValue: method))
        if let body {
            request.body = .data(try JSONEncoder().encode(body))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        return request
    }

    private func unreachable(_ error: Any) -> FerryError {
        FerryError(
            .backgroundSessionWasDisconnected,
            "ferryd does not answer on \(paths.socket) (\(error)); is it running? `ferry daemon status` tells"
        )
    }

    static func decodeError(_ data: Data, status: UInt) -> FerryError {
        if let body = try? JSONDecoder().decode(ControlAPI.ErrorBody.self, from: data) { return body.error }
        let text = String(decoding: data.prefix(300), as: UTF8.self)
        return FerryError(.badServerResponse, "ferryd answered \(status): \(text)")
    }

    /// Percent-encodes a session identifier for a route.
    public static func pathComponent(_ identifier: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%")
        return identifier.addingPercentEncoding(withAllowedCharacters: allowed) ?? identifier
    }

    // MARK: The daemon itself

    /// The daemon's status, or nil when none answers.
    public func status() -> ControlAPI.DaemonStatus? {
        // A plain connect first: AsyncHTTPClient keeps retrying a refused connection until its deadline,
        // which would make "no daemon" slow to learn.
        guard socketAccepts() else { return nil }
        return try? call("GET", "\(ControlAPI.prefix)/daemon", timeout: 5)
    }

    /// The daemon's status, or nil when none answers; suspends the caller meanwhile.
    public func status() async -> ControlAPI.DaemonStatus? {
        guard socketAccepts() else { return nil }
        return try? await call("GET", "\(ControlAPI.prefix)/daemon", timeout: 5)
    }

    /// Whether something accepts connections on the socket now.
    func socketAccepts() -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(paths.socket.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    /// Starts `ferryd` unless one answers already, and waits until it serves (at most `timeout`
    /// seconds). The executable is `FERRYD_PATH`, else `ferryd` beside this program, else on `PATH`.
    /// Two processes starting it at once are safe: the daemon's lock lets one run.
    /// - Throws: ``FerryError`` when it cannot be found, or does not answer in time (its log says why).
    /// - Parameter environment: more environment variables for a daemon started here (its tuning
    ///   variables, `ferryd --help` lists them).
    public func ensureRunning(timeout: Double = 10, environment: [String: String] = [:]) throws {
        if socketAccepts() {
            if (try? call("GET", "\(ControlAPI.prefix)/daemon", timeout: 5) as ControlAPI.DaemonStatus) != nil { return }
            throw notAnswering
        }
        let executable = try startDaemon(environment: environment)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: paths.socket), status() != nil { return }
            usleep(20_000)
        }
        throw didNotStart(executable, within: timeout)
    }

    /// ``ensureRunning(timeout:environment:)`` for async code: the waits suspend, never block.
    public func ensureRunning(timeout: Double = 10, environment: [String: String] = [:]) async throws {
        if socketAccepts() {
            if await status() != nil { return }
            throw notAnswering
        }
        let executable = try startDaemon(environment: environment)
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while ContinuousClock.now < deadline {
            if FileManager.default.fileExists(atPath: paths.socket), await status() != nil { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw didNotStart(executable, within: timeout)
    }

    /// Something holds the socket but does not answer: starting another ferryd would only wait for its
    /// lock, so both forms of ``ensureRunning(timeout:environment:)`` say so at once.
    private var notAnswering: FerryError {
        FerryError(
            .backgroundSessionWasDisconnected,
            "ferryd on \(paths.socket) accepts connections but does not answer within 5 s (stopped, e.g. by SIGSTOP, or overloaded); see \(paths.logFile)"
        )
    }

    private func didNotStart(_ executable: String, within timeout: Double) -> FerryError {
        FerryError(
            .backgroundSessionWasDisconnected,
            "ferryd (\(executable)) did not start serving on \(paths.socket) within \(Int(timeout)) s; see \(paths.logFile)"
        )
    }

    /// Starts ferryd detached; returns the executable started.
    private func startDaemon(environment: [String: String]) throws -> String {
        let executable = try Self.daemonExecutable()
        try FileManager.default.createDirectory(
            atPath: paths.stateDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        try Self.spawnDetached(executable, log: paths.logFile, paths: paths, extra: environment)
        return executable
    }

    static func daemonExecutable() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["FERRYD_PATH"], !path.isEmpty { return path }
        var candidates: [String] = []
        if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((me as NSString).deletingLastPathComponent + "/ferryd")
        }
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin").split(separator: ":") {
            candidates.append("\(directory)/ferryd")
        }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw FerryError(
                .backgroundSessionWasDisconnected,
                "cannot find the ferryd executable (looked beside this program and on PATH); set FERRYD_PATH"
            )
        }
        return found
    }

    /// Starts the daemon detached (``DetachedProcess``), its paths in its environment whatever this
    /// process's environment says.
    private static func spawnDetached(
        _ executable: String,
        log: String,
        paths: DaemonPaths,
        extra: [String: String]
    ) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["FERRY_HOME"] = paths.stateDirectory
        environment["FERRY_SOCKET"] = paths.socket
        environment.merge(extra) { _, new in new }
        do {
            try DetachedProcess.spawn(executable, environment: environment, log: log)
        } catch let error as FerryError {
            throw FerryError(.backgroundSessionWasDisconnected, error.message)
        }
    }

    // MARK: Attach

    /// Attaches to `session`'s event stream; returns once the daemon has accepted (or refused) it.
    /// - Throws: ``FerryError/Code/backgroundSessionInUseByAnotherProcess`` when another process is
    ///   attached; the daemon's error otherwise.
    func attach(session: String) throws -> EventStream {
        guard socketAccepts() else { throw unreachable("nothing listens on the socket") }
        let (task, delegate) = try startAttach(session: session)
        return try stream(task, delegate, head: Result { try delegate.head.futureResult.wait() })
    }

    /// ``attach(session:)`` for async code: waits for the daemon's answer without blocking a thread.
    func attach(session: String) async throws -> EventStream {
        guard socketAccepts() else { throw unreachable("nothing listens on the socket") }
        let (task, delegate) = try startAttach(session: session)
        let head: Result<Void, any Error>
        do {
            head = .success(try await delegate.head.futureResult.get())
        } catch {
            head = .failure(error)
        }
        return try stream(task, delegate, head: head)
    }

    /// The attached stream once the daemon accepted (`head` succeeded); otherwise the request is
    /// cancelled and the daemon's refusal, or why it could not be reached, is thrown.
    private func stream(
        _ task: HTTPClient.Task<Void>,
        _ delegate: AttachDelegate,
        head: Result<Void, any Error>
    ) throws -> EventStream {
        if case .failure(let error) = head {
            task.cancel()
            throw error as? FerryError ?? unreachable(error)
        }
        return EventStream(events: delegate.events, cancel: { task.cancel() })
    }

    private func startAttach(session: String) throws -> (HTTPClient.Task<Void>, AttachDelegate) {
        let path = "\(ControlAPI.prefix)/sessions/\(Self.pathComponent(session))/attach?pid=\(getpid())"
        let request = try makeRequest("POST", path)
        let delegate = AttachDelegate(eventLoop: http.eventLoopGroup.next())
        return (http.execute(request: request, delegate: delegate), delegate)
    }

    /// An attached session's events, in the daemon's order, until it ends or is cancelled.
    struct EventStream: Sendable {
        let events: AsyncThrowingStream<BackgroundEvent, any Error>
        let cancel: @Sendable () -> Void
    }
}

/// Reads the attach response: the head decides acceptance; the body is JSON lines, one event each.
private final class AttachDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    let head: EventLoopPromise<Void>
    let events: AsyncThrowingStream<BackgroundEvent, any Error>
    private let continuation: AsyncThrowingStream<BackgroundEvent, any Error>.Continuation
    private let state = Mutex((status: UInt(0), pending: Data()))

    init(eventLoop: any EventLoop) {
        head = eventLoop.makePromise()
        (events, continuation) = AsyncThrowingStream.makeStream(bufferingPolicy: .unbounded)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { $0.status = head.status.code }
        if head.status == .ok { self.head.succeed(()) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let lines: [Data] = state.withLock { state in
            state.pending.append(contentsOf: buffer.readableBytesView)
            guard state.status == 200 else { return [] }
            var lines: [Data] = []
            while let newline = state.pending.firstIndex(of: 0x0A) {
                lines.append(state.pending[state.pending.startIndex..<newline])
                state.pending.removeSubrange(state.pending.startIndex...newline)
            }
            return lines
        }
        for line in lines where !line.isEmpty {
            do {
                continuation.yield(try JSONDecoder().decode(BackgroundEvent.self, from: line))
            } catch {
                continuation.finish(
                    throwing: FerryError(.badServerResponse, "ferryd sent an event this client cannot read: \(error)")
                )
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        let (status, body) = state.withLock { ($0.status, $0.pending) }
        if status != 200 {
            head.fail(DaemonClient.decodeError(body, status: status))
        }
        continuation.finish()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        head.fail(error)
        continuation.finish(throwing: error)
    }
}
