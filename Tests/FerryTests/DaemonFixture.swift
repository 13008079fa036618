import Ferry
import FerryStore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A ferryd of a test's own: a fresh FERRY_HOME, the daemon built beside this test binary started on
/// demand (as the library does), stopped with SIGTERM and its directory removed at the end.
final class DaemonFixture: @unchecked Sendable {
    let home: String
    let client: DaemonClient
    /// Tuning for the daemon (`ferryd --help`).
    let environment: [String: String]

    init(environment: [String: String] = [:]) throws {
        // Short, so the socket path fits a unix socket.
        home = "/tmp/ferry-t-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        client = DaemonClient(paths: try DaemonPaths(environment: ["FERRY_HOME": home]))
        self.environment = environment
    }

    /// Starts the daemon unless it runs; returns its pid. Waits up to 60 s: at the start of a full
    /// parallel test run on two cores a debug ferryd once took just over 10 s to serve.
    @discardableResult
    func start() async throws -> Int32 {
        try await client.ensureRunning(timeout: 60, environment: environment)
        let pid = try await pid()
        startedPid = pid
        return pid
    }

    /// The daemon this fixture started last: stopped even when it no longer answers.
    private var startedPid: Int32?

    /// The daemon's pid. A daemon that accepts connections gets six status calls of 5 s each: at the start
    /// of a full parallel run on two cores one call once took over 5 s right after the daemon had
    /// answered `ensureRunning` (the test process itself was starved, not ferryd).
    func pid() async throws -> Int32 {
        for _ in 0..<6 {
            if let status = await client.status() { return status.pid }
            guard client.socketAccepts() else { break }
        }
        throw FixtureError("ferryd does not answer; log:\n\(log)")
    }

    /// The pid ferryd wrote into the lock file it holds while it runs: a daemon that started but was
    /// not seen serving in time (a starved test process) is stopped too, not left running.
    private var lockHolder: Int32? {
        (try? String(contentsOfFile: client.paths.lockFile, encoding: .utf8))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Sends `signal` to the daemon and waits until it has exited.
    func stop(signal: Int32 = SIGTERM) async throws {
        let alive: (Int32) -> Int32? = { kill($0, 0) == 0 ? $0 : nil }
        guard let pid = await client.status()?.pid ?? startedPid.flatMap(alive) ?? lockHolder.flatMap(alive) else { return }
        kill(pid, signal)
        try await eventually("ferryd \(pid) exits", within: 20) { kill(pid, 0) != 0 }
    }

    /// The daemon's JSON log, then what it printed (a crash's last words).
    var log: String {
        ((try? String(contentsOfFile: client.paths.logFile, encoding: .utf8)) ?? "(no log)")
            + ((try? String(contentsOfFile: client.paths.outputFile, encoding: .utf8)).map { "--- ferryd.out ---\n" + $0 } ?? "")
    }

    /// The daemon's tasks of `session`.
    func tasks(_ session: String) async throws -> [BackgroundTaskInfo] {
        try await client.call("GET", "/v1/sessions/\(DaemonClient.pathComponent(session))/tasks")
    }

    /// Creates a download in the daemon directly (as `ferry get --background` does).
    /// Waits until `server` has sent `sent` body bytes of `path` in all (the response is then held by a
    /// `gate=` fault) and the store has recorded a checkpoint past `recorded` (a loaded machine may take
    /// a while to write what arrived), gives a checkpoint whose sync was running a moment to land,
    /// SIGKILLs the daemon and returns the bytes its store recorded for the session's first task: what
    /// the kill keeps.
    func killWhileHeld(
        _ session: String,
        server: TestServer,
        path: String,
        sent: Int64,
        past recorded: Int64 = 0
    ) async throws -> Int64 {
        try await eventually("the server sent \(sent) bytes of \(path)", within: 60) {
            server.counters.bodyBytesSent(path: path) >= sent
        }
        let store = try FerryStore(path: client.paths.database)
        try await eventually("a checkpoint past \(recorded) bytes", within: 30) {
            ((try? store.tasks(session: session).first?.bytesReceived) ?? 0) > recorded
        }
        try await Task.sleep(for: .milliseconds(300))
        try await stop(signal: SIGKILL)
        return try #require(try store.tasks(session: session).first).bytesReceived
    }

    func download(_ url: String, session: String, description: String? = nil) async throws -> BackgroundTaskInfo {
        try await client.call(
            "POST",
            "/v1/sessions/\(DaemonClient.pathComponent(session))/tasks",
            body: ControlAPI.TaskCreation(kind: .download, request: request(url), taskDescription: description)
        )
    }

    func cleanUp() async {
        try? await stop()
        try? FileManager.default.removeItem(atPath: home)
    }

    struct FixtureError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// Runs `body` with a fresh daemon, stopped afterwards.
func withDaemon<Result>(
    environment: [String: String] = [:],
    _ body: (DaemonFixture) async throws -> Result
) async throws -> Result {
    let fixture = try DaemonFixture(environment: environment)
    do {
        try await fixture.start()
        let result = try await body(fixture)
        await fixture.cleanUp()
        return result
    } catch {
        let log = fixture.log
        await fixture.cleanUp()
        throw DaemonFixture.FixtureError("\(error)\n--- ferryd log ---\n\(log.suffix(4000))")
    }
}
