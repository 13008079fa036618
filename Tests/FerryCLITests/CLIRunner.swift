import Crypto
import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `ferry` (beside this test binary) as a user would, capturing its output.
struct CLIRunner {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// stderr's lines, without the empty last one.
        var errorLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    /// Environment added to the child's (e.g. FERRY_HOME).
    var environment: [String: String] = [:]
    /// The working directory.
    var directory: String

    static var binary: String { ChildProcess.builtProduct("ferry") }

    /// This process's environment, but with a config directory of the test's own (empty unless the
    /// test writes one): the user's ~/.config/ferry/config must not change what a test sees.
    static func isolated(_ directory: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = directory + "/.config-of-this-test"
        return environment
    }

    /// Starts `ferry arguments` and returns the process, its output collected by the pipes.
    func start(_ arguments: [String]) throws -> (ChildProcess, FileHandle, FileHandle) {
        let child = try ChildProcess.spawn(
            Self.binary,
            arguments: arguments,
            environment: Self.isolated(directory).merging(environment) { $1 },
            directory: directory
        )
        return (child, child.standardOutput!, child.standardError!)
    }

    /// Runs `ferry arguments` to the end (at most `timeout` seconds, then it is killed).
    func run(_ arguments: [String], timeout: Double = 60) async throws -> Run {
        let (process, out, err) = try start(arguments)
        return try await finish(process, out, err, timeout: timeout)
    }

    func finish(
        _ process: ChildProcess,
        _ out: FileHandle,
        _ err: FileHandle,
        timeout: Double = 60
    ) async throws
        -> Run
    {
        // Read both pipes while the child runs, so a full pipe never blocks it (on threads of their own,
        // not the cooperative pool).
        async let stdout = out.readToEndOffPool()
        async let stderr = err.readToEndOffPool()
        let end = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > end { kill(process.processIdentifier, SIGKILL) }
            try await Task.sleep(for: .milliseconds(10))
        }
        let (o, e) = await (stdout, stderr)
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self)
        )
    }
}

/// SHA-256 of a file, in hex.
func fileSHA256(_ path: String) throws -> String {
    SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
}

/// SHA-256 of the test server's `/bytes/{count}` (`?seed=`, default 0).
func bytesSHA256(_ count: Int, seed: UInt64 = 0) -> String {
    SHA256.hash(data: DeterministicBytes(seed: seed).bytes(offset: 0, count: count)).map { String(format: "%02x", $0) }
        .joined()
}

/// A fresh directory, removed by the caller.
func makeDirectory() throws -> String {
    let path = "/tmp/ferry-cli-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

extension CLIRunner {
    /// Kills this CLI's ferryd with SIGKILL (its pid from `daemon status --json`) and waits until it is
    /// gone: a crash, for the tests that check what survives one.
    func killDaemon() async throws {
        let status = try await run(["daemon", "status", "--json"])
        let pid = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["pid"] as? Int)
        #expect(kill(Int32(pid), SIGKILL) == 0)
        try await waitUntil("ferryd is gone") { kill(Int32(pid), 0) != 0 }
    }
}

/// Waits until `condition` holds, failing after `seconds`.
func waitUntil(_ what: String, within seconds: Double = 20, _ condition: () -> Bool) async throws {
    let end = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < end else { throw FerryError(.timedOut, "never happened: \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Runs `body` with a CLI whose ferryd is its own (`FERRY_HOME` in a fresh directory) in a fresh working
/// directory; however `body` ends, the daemon is stopped and both directories are removed.
func withBackgroundCLI<Result>(_ body: (_ cli: CLIRunner, _ directory: String) async throws -> Result) async throws -> Result {
    let directory = try makeDirectory()
    let home = "/tmp/ferry-h-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    let cli = CLIRunner(environment: ["FERRY_HOME": home], directory: directory)
    defer {
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: home)
    }
    let outcome: Swift.Result<Result, any Error>
    do {
        outcome = .success(try await body(cli, directory))
    } catch {
        outcome = .failure(error)
    }
    _ = try? await cli.run(["daemon", "stop"])
    return try outcome.get()
}

extension CLIRunner.Run {
    /// stdout without its surrounding white space: a task id, say.
    var output: String { stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
}
