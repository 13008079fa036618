import Crypto
import Ferry
import FerryEngine
import FerryTestServer
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import Synchronization

/// Runs `body` with a test server and a session (with `delegate`) that trusts it; the session is
/// invalidated afterwards.
func withSession<Result>(
    _ configuration: SessionConfiguration = .default,
    delegate: (any SessionDelegate)? = nil,
    _ body: (TestServer, Session) async throws -> Result
) async throws -> Result {
    try await TestServer.withServer { server in
        let session = try makeSession(configuration, delegate: delegate, trusting: server)
        defer { session.invalidateAndCancel() }
        return try await body(server, session)
    }
}

/// Where default sessions made by ``makeSession(_:delegate:trusting:)`` keep their disk cache: a directory
/// of this test process (removed with those of test processes that are gone), not the user's
/// `~/.cache/ferry/http`, which would grow with every run and carry entries from one run to the next.
let testCacheDirectory: String = {
    let base = FileManager.default.temporaryDirectory.path
    let prefix = "ferry-test-cache-"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix(prefix) {
        guard let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0 else { continue }
        try? FileManager.default.removeItem(atPath: base + "/" + name)
    }
    return base + "/" + prefix + String(getpid())
}()

/// A session whose transport trusts `server`'s certificate.
func makeSession(
    _ configuration: SessionConfiguration = .default,
    delegate: (any SessionDelegate)? = nil,
    trusting server: TestServer
) throws -> Session {
    var configuration = configuration
    if configuration.kind == .default, configuration.urlCache != nil, configuration.urlCache?.directory == nil {
        configuration.urlCache?.directory = testCacheDirectory
    }
    var options = StandardTransport.Options(configuration)
    options.additionalTrustRootsPEM = [server.certificates.trustRootPEM]
    return Session(
        configuration: configuration,
        delegate: delegate,
        transport: try StandardTransport(options: options)
    )
}

/// A request for a URL string.
func request(_ url: String) -> Request {
    Request(url: URL(string: url)!)
}

/// SHA-256 in hex.
func sha256(_ bytes: some Sequence<UInt8>) -> String {
    SHA256.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
}

/// SHA-256 of a file, in hex.
func sha256(ofFile path: String) throws -> String {
    sha256(try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// SHA-256 of `/bytes/{count}?seed=` (version `version`).
func expectedSHA256(_ count: Int, seed: UInt64, version: Int = 0) -> String {
    sha256(DeterministicBytes(seed: seed, version: version).bytes(offset: 0, count: count))
}

/// A fresh directory (``TestDirectory``: removed when the process exits).
func temporaryDirectory() throws -> URL {
    try TestDirectory.make()
}

/// Waits until `condition` holds (polling), failing after `seconds`.
func eventually(_ what: String, within seconds: Double = 60, _ condition: () async throws -> Bool) async throws {
    let end = Date().addingTimeInterval(seconds)
    while try await !condition() {
        guard Date() < end else { throw FerryError(.timedOut, "never happened: \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// One delegate event, as recorded.
enum Event: Sendable, Equatable {
    /// didReceiveInformationalResponse, with the status and the Link field.
    case informational(task: Int, status: Int, link: String?)
    case response(task: Int, status: Int)
    case data(task: Int, count: Int)
    case sent(task: Int, total: Int64, expected: Int64)
    case wrote(task: Int, total: Int64, expected: Int64)
    case resumed(task: Int, offset: Int64)
    case finished(task: Int, sha256: String, existedDuringCallback: Bool)
    case becameDownload(from: Int, to: Int)
    case redirect(task: Int, to: String)
    case metrics(task: Int, transactions: Int)
    case complete(task: Int, error: FerryError.Code?)
    case invalid
    /// sessionDidFinishEvents(forBackgroundSession:).
    case finishedEvents
}

/// A delegate that records every event, with knobs for the decisions.
final class Recorder: DataDelegate, DownloadDelegate, @unchecked Sendable {
    private let log = Mutex<[Event]>([])
    private let bodies = Mutex<[Int: [UInt8]]>([:])
    private let collectedMetrics = Mutex<[Int: TaskMetrics]>([:])
    private let errors = Mutex<[Int: FerryError]>([:])
    private let callbackDepth = Atomic<Int>(0)
    private let overlapped = Atomic<Bool>(false)
    private let finishedFiles = Mutex<[String]>([])

    /// What didReceiveResponse answers.
    let disposition: ResponseDisposition
    /// Redirects: follow (default), refuse, or rewrite to another URL.
    let redirect: @Sendable (Request) -> Request?
    /// The body of streamed uploads.
    let bodyStream: @Sendable () -> RequestBodyStream?

    init(
        disposition: ResponseDisposition = .allow,
        redirect: @escaping @Sendable (Request) -> Request? = { $0 },
        bodyStream: @escaping @Sendable () -> RequestBodyStream? = { nil }
    ) {
        self.disposition = disposition
        self.redirect = redirect
        self.bodyStream = bodyStream
    }

    var events: [Event] { log.withLock { $0 } }
    func events(of task: Int) -> [Event] { events.filter { $0.task == task } }
    func body(of task: Int) -> [UInt8] { bodies.withLock { $0[task] ?? [] } }
    func metrics(of task: Int) -> TaskMetrics? { collectedMetrics.withLock { $0[task] } }
    func error(of task: Int) -> FerryError? { errors.withLock { $0[task] } }
    /// Whether two callbacks ever ran at the same time (they must not: S1.6).
    var callbacksOverlapped: Bool { overlapped.load(ordering: .relaxed) }
    var completions: Int { events.filter { if case .complete = $0 { true } else { false } }.count }
    var finishedFilePaths: [String] { finishedFiles.withLock { $0 } }

    private func record(_ event: Event) async {
        if callbackDepth.add(1, ordering: .relaxed).newValue > 1 { overlapped.store(true, ordering: .relaxed) }
        log.withLock { $0.append(event) }
        await Task.yield()  // give a concurrent callback the chance to show itself
        callbackDepth.subtract(1, ordering: .relaxed)
    }

    func session(_ session: Session, didBecomeInvalidWithError error: FerryError?) async {
        await record(.invalid)
    }

    func sessionDidFinishEvents(forBackgroundSession session: Session) async {
        await record(.finishedEvents)
    }

    func session(
        _ session: Session,
        task: SessionTask,
        willPerformHTTPRedirection response: Response,
        newRequest: Request
    ) async -> Request? {
        await record(.redirect(task: task.taskIdentifier, to: newRequest.url.absoluteString))
        return redirect(newRequest)
    }

    func session(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) async {
        await record(.sent(task: task.taskIdentifier, total: totalBytesSent, expected: totalBytesExpectedToSend))
    }

    func session(_ session: Session, needNewBodyStreamFor task: SessionTask) async -> RequestBodyStream? {
        bodyStream()
    }

    func session(_ session: Session, task: SessionTask, didReceiveInformationalResponse response: Response) async {
        await record(.informational(task: task.taskIdentifier, status: response.statusCode, link: response.headers["Link"]))
    }

    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
        collectedMetrics.withLock { $0[task.taskIdentifier] = metrics }
        await record(.metrics(task: task.taskIdentifier, transactions: metrics.transactionMetrics.count))
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        if let error { errors.withLock { $0[task.taskIdentifier] = error } }
        await record(.complete(task: task.taskIdentifier, error: error?.code))
    }

    func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
        await record(.response(task: dataTask.taskIdentifier, status: response.statusCode))
        return disposition
    }

    func session(_ session: Session, dataTask: DataTask, didBecome downloadTask: DownloadTask) async {
        await record(.becameDownload(from: dataTask.taskIdentifier, to: downloadTask.taskIdentifier))
    }

    func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
        bodies.withLock { $0[dataTask.taskIdentifier, default: []].append(contentsOf: data) }
        await record(.data(task: dataTask.taskIdentifier, count: data.count))
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        let exists = FileManager.default.fileExists(atPath: location.path)
        let digest = (try? sha256(ofFile: location.path)) ?? "unreadable"
        finishedFiles.withLock { $0.append(location.path) }
        await record(.finished(task: downloadTask.taskIdentifier, sha256: digest, existedDuringCallback: exists))
    }

    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async {
        await record(
            .wrote(task: downloadTask.taskIdentifier, total: totalBytesWritten, expected: totalBytesExpectedToWrite)
        )
    }

    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didResumeAtOffset fileOffset: Int64,
        expectedTotalBytes: Int64
    ) async {
        await record(.resumed(task: downloadTask.taskIdentifier, offset: fileOffset))
    }
}

extension Event {
    var task: Int? {
        switch self {
        case .informational(let task, _, _): task
        case .response(let task, _), .data(let task, _), .sent(let task, _, _), .wrote(let task, _, _),
            .resumed(let task, _), .finished(let task, _, _), .redirect(let task, _), .metrics(let task, _),
            .complete(let task, _):
            task
        case .becameDownload(let from, _): from
        case .invalid, .finishedEvents: nil
        }
    }

    /// The event's kind, without its values, for order checks.
    var kind: String {
        switch self {
        case .informational: "informational"
        case .response: "response"
        case .data: "data"
        case .sent: "sent"
        case .wrote: "wrote"
        case .resumed: "resumed"
        case .finished: "finished"
        case .becameDownload: "became"
        case .finishedEvents: "finishedEvents"
        case .redirect: "redirect"
        case .metrics: "metrics"
        case .complete: "complete"
        case .invalid: "invalid"
        }
    }
}

/// Kinds in order with repeats collapsed: [data, data, metrics] → [data, metrics].
func collapsed(_ events: [Event]) -> [String] {
    events.map(\.kind).reduce(into: []) { kinds, kind in
        if kinds.last != kind { kinds.append(kind) }
    }
}

/// This test binary run again with only the test named `test` selected and `variables` added to its
/// environment: a second process for tests about more than one.
func spawnTestChild(_ test: String, variables: [String: String], output: ChildProcess.Output) throws -> ChildProcess {
    try ChildProcess.spawn(
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
        arguments: ["--testing-library", "swift-testing", "--filter", test],
        environment: ProcessInfo.processInfo.environment.merging(variables) { _, new in new },
        output: output
    )
}

/// Waits for a child from ``spawnTestChild(_:variables:output:)`` to exit, and fails with its report
/// (written to `report`) unless it exited with 0.
func requireSuccess(of child: ChildProcess, report: URL) async throws {
    try await eventually("the child exits", within: 60) { !child.isRunning }
    try #require(
        child.terminationStatus == 0,
        "the child failed: \(String(decoding: (try? Data(contentsOf: report)) ?? Data(), as: UTF8.self))"
    )
}

extension StreamTask {
    /// `count` bytes as text, or fewer at the end of the stream; each read waits at most 10 s.
    func readText(_ count: Int) async throws -> String {
        var text = ""
        while text.utf8.count < count {
            let (data, atEOF) = try await readData(ofMinLength: 1, maxLength: count - text.utf8.count, timeout: 10)
            text += String(decoding: data ?? Data(), as: UTF8.self)
            if atEOF { break }
        }
        return text
    }
}
