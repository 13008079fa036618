import AsyncAlgorithms
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

/// Talks to `ferryd` over its control API (HTTP/1.1 and JSON on the unix socket; `ControlAPI` lists
/// the routes), and starts it when no daemon answers. Used by background sessions and by the `ferry`
/// command; scripts may use it too.
///
/// Every call is async: it suspends its caller and never blocks a thread, and each has a deadline, so a
/// daemon that is stopped (SIGSTOP) or overloaded costs a caller at most that long.
public final class DaemonClient: Sendable {
    /// Where the daemon's socket and state are.
    public let paths: DaemonPaths
    private let transport: NetworkTransport

    /// A client for the daemon at `paths`.
    public init(paths: DaemonPaths) {
        self.paths = paths
        self.transport = Self.transport(for: paths.socket)
    }

    /// Ferry's own transport over the daemon's socket, one per socket in the process (its connections
    /// are kept for the next call). Never a proxy; no idle limit (an attached session may be quiet
    /// for hours).
    private static func transport(for socket: String) -> NetworkTransport {
        controlTransports.withLock { transports in
            if let existing = transports[socket] { return existing }
            var options = TransportOptions()
            options.unixSocketPath = socket
            options.proxies = ProxySettings()
            options.idleTimeout = 10 * 365 * 86_400
            options.connectTimeout = 5
            let made = NetworkTransport(options: options)
            transports[socket] = made
            return made
        }
    }

    private static let controlTransports = Mutex<[String: NetworkTransport]>([:])

    /// A client for this user's daemon (or the one `FERRY_HOME` names).
    /// - Throws: `FerryError` when no directory can be worked out.
    public static func forCurrentUser() throws -> DaemonClient {
        DaemonClient(paths: try DaemonPaths(environment: ProcessInfo.processInfo.environment))
    }

    // MARK: Calls

    /// Sends one request and decodes the JSON answer, suspending (never blocking) the caller meanwhile.
    /// - Throws: the daemon's `FerryError` for a 4xx/5xx answer; `FerryError/Code/backgroundSessionWasDisconnected`
    ///   when no daemon answers within `timeout` seconds.
    public func call<Answer: Decodable>(
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none,
        timeout: Double = 30,
        as: Answer.Type = Answer.self
    ) async throws -> Answer {
        try Self.decode(Answer.self, try await sendAsync(method, path, body: body, timeout: timeout), method, path)
    }

    /// Sends one request and returns its answer as text (`GET /metrics`), suspending the caller meanwhile.
    public func text(_ method: String, _ path: String, timeout: Double = 30) async throws -> String {
        String(decoding: try await sendAsync(method, path, body: String?.none, timeout: timeout), as: UTF8.self)
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
        try await exchange(try makeRequest(method, path, body: body), timeout: timeout)
    }

    /// One request and its whole answer; a 4xx/5xx answer becomes the daemon's `FerryError`.
    private func exchange(_ request: TransportRequest, timeout: Double) async throws -> Data {
        // A request may carry credentials: only to a socket of this user's own, in a directory of theirs.
        try PrivateDirectory.checkSocket(paths.socket)
        let status: Int
        var data = Data()
        do {
            let response = try await transport.send(request, deadline: .now() + .milliseconds(Int64(timeout * 1000)))
            status = response.status
            for try await chunk in response.body { data.append(contentsOf: chunk.readableBytesView) }
        } catch {
            throw unreachable(error)
        }
        guard (200..<300).contains(status) else { throw Self.decodeError(data, status: UInt(status)) }
        return data
    }

    /// The JSON answer to `method` `path`, decoded.
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

    private func makeRequest(_ method: String, _ path: String, body: (some Encodable)? = String?.none) throws
        -> TransportRequest
    {
        // The host names nothing (the socket is the address); the path and query are the route.
        guard let url = URL(string: "http://ferryd" + path) else {
            throw FerryError(.badURL, "cannot address ferryd's socket \(paths.socket) with \(path)")
        }
        var headers = Headers()
        var payload: TransportRequestBody?
        if let body {
            payload = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
            headers.add(name: "Content-Type", value: "application/json")
        }
        return TransportRequest(method: method, url: url, headers: headers, body: payload)
    }

    private func unreachable(_ error: Any) -> FerryError {
        if let refusal = error as? FerryError, refusal.code != .cannotConnectToHost, refusal.code != .networkConnectionLost,
            refusal.code != .timedOut, refusal.code != .cancelled
        {
            return refusal
        }
        return FerryError(.backgroundSessionWasDisconnected, Self.unreachableMessage(error, socket: paths.socket, log: paths.logFile))
    }

    /// Why ferryd could not be reached, as one plain sentence (no engine internals, no errno dump).
    static func unreachableMessage(_ error: Any, socket: String, log: String) -> String {
        switch (error as? FerryError)?.code {
        case .cannotConnectToHost?:
            return "ferryd is not running: nothing answers on \(socket) (`ferry daemon start` starts it)"
        case .networkConnectionLost?:
            return "ferryd stopped while answering on \(socket) (`ferry daemon status` tells whether it runs again; its log is \(log))"
        case .timedOut?:
            return "ferryd on \(socket) does not answer in time (stopped, e.g. by SIGSTOP, or overloaded; its log is \(log))"
        case .cancelled?:
            return "the request to ferryd on \(socket) was cancelled"
        default:
            let reason = (error as? FerryError)?.message ?? (error as? String) ?? "\(error)"
            return "cannot reach ferryd on \(socket): \(reason)"
        }
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

    /// The daemon's status, or nil when none answers; suspends the caller meanwhile.
    public func status() async -> ControlAPI.DaemonStatus? {
        guard socketAccepts() else { return nil }
        return try? await call("GET", "\(ControlAPI.prefix)/daemon", timeout: 5)
    }

    /// Whether something accepts connections on the socket now.
    public func socketAccepts() -> Bool {
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
    /// seconds), suspending the caller meanwhile. The executable is `FERRYD_PATH`, else `ferryd` beside
    /// this program, else on `PATH`. Two processes starting it at once are safe: the daemon's lock lets
    /// one run.
    /// - Throws: `FerryError` when it cannot be found, does not answer in time (its log says why), or
    ///   accepts connections without answering (stopped, e.g. by SIGSTOP).
    /// - Parameters:
    ///   - timeout: seconds to wait for the daemon to serve. A daemon usually serves within a fraction of
    ///     a second; the 30 s default covers a machine under heavy load, where starting a process, opening
    ///     its store and recovering its tasks took over 10 s (seen on a two-core CI run of 680 tests).
    ///   - environment: more environment variables for a daemon started here (its tuning variables,
    ///     `ferryd --help` lists them).
    public func ensureRunning(timeout: Double = 30, environment: [String: String] = [:]) async throws {
        if socketAccepts() {
            // A busy ferryd (a loaded two-core machine running dozens of them) has taken more than one
            // status call's 5 s to answer: it gets a second before it counts as not answering.
            for _ in 0..<2 {
                if await status() != nil { return }
            }
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
    /// lock, so ``ensureRunning(timeout:environment:)`` says so at once.
    private var notAnswering: FerryError {
        FerryError(
            .backgroundSessionWasDisconnected,
            "ferryd on \(paths.socket) accepts connections but does not answer within 10 s (stopped, e.g. by SIGSTOP, or overloaded); see \(paths.logFile)"
        )
    }

    private func didNotStart(_ executable: String, within timeout: Double) -> FerryError {
        FerryError(
            .backgroundSessionWasDisconnected,
            "ferryd (\(executable)) did not start serving on \(paths.socket) within \(Int(timeout)) s; see \(paths.outputFile) and \(paths.logFile)"
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
        try Self.spawnDetached(executable, log: paths.outputFile, paths: paths, extra: environment)
        return executable
    }

    /// The ferryd executable this process would start: `FERRYD_PATH`, else `ferryd` beside this program,
    /// else on `PATH`.
    public static func daemonExecutable() throws -> String {
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

    /// Starts the daemon detached (`DetachedProcess`), its paths in its environment whatever this
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

    /// Attaches to `session`'s event stream; returns once the daemon has accepted (or refused) it,
    /// suspending the caller meanwhile (at most 10 s).
    /// - Throws: `FerryError/Code/backgroundSessionInUseByAnotherProcess` when another process is
    ///   attached; the daemon's error otherwise.
    func attach(session: String) async throws -> EventStream {
        guard socketAccepts() else { throw unreachable(FerryError(.cannotConnectToHost, "nothing listens on the socket")) }
        try PrivateDirectory.checkSocket(paths.socket)
        let path = "\(ControlAPI.prefix)/sessions/\(Self.pathComponent(session))/attach?pid=\(getpid())"
        let request = try makeRequest("POST", path)
        let response: TransportResponse
        do {
            // The answer's head within 10 s (a stopped daemon must not hang the caller); its body, the
            // events, has no end.
            response = try await withThrowingTaskGroup(of: TransportResponse.self) { group in
                group.addTask { try await self.transport.send(request, deadline: .distantFuture) }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    throw FerryError(.timedOut, "no answer to the attach within 10 s")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            throw unreachable(error)
        }
        guard response.status == 200 else {
            var data = Data()
            for try await chunk in response.body { data.append(contentsOf: chunk.readableBytesView) }
            throw Self.decodeError(data, status: UInt(response.status))
        }
        // The body is JSON lines, one event each. They are handed over one at a time: the next is read
        // from the socket only when the consumer has taken this one (a slow delegate holds the daemon's
        // stream back instead of piling events up here). Cancelling drops the connection.
        let events = AsyncThrowingChannel<BackgroundEvent, any Error>()
        let reader = Task {
            var pending = Data()
            do {
                for try await chunk in response.body {
                    pending.append(contentsOf: chunk.readableBytesView)
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let line = pending[pending.startIndex..<newline]
                        pending.removeSubrange(pending.startIndex...newline)
                        guard !line.isEmpty else { continue }
                        let event: BackgroundEvent
                        do {
                            event = try JSONDecoder().decode(BackgroundEvent.self, from: line)
                        } catch {
                            throw FerryError(.badServerResponse, "ferryd sent an event this client cannot read: \(error)")
                        }
                        await events.send(event)
                        try Task.checkCancellation()
                    }
                }
                events.finish()
            } catch {
                events.fail(error)
            }
        }
        return EventStream(events: events, cancel: { reader.cancel() })
    }

    /// An attached session's events, in the daemon's order, until it ends or is cancelled.
    struct EventStream: Sendable {
        let events: AsyncThrowingChannel<BackgroundEvent, any Error>
        let cancel: @Sendable () -> Void
    }
}
