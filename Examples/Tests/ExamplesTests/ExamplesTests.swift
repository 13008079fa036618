import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Each example program, built by this package, run as a user would against ferry-testserver (in
/// process) or a real WebSocket peer. The background examples need `ferryd` from the main package's
/// build (`swift build` in the directory above); without it they are skipped with the reason.
@Suite struct ExamplesTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The repository's root (this file is Examples/Tests/ExamplesTests/ExamplesTests.swift).
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// ferryd and ferry from the main package's debug build.
    static let daemonTools: (ferryd: String, ferry: String)? = {
        let directory = repository.appendingPathComponent(".build/debug").path
        let tools = (directory + "/ferryd", directory + "/ferry")
        let present = FileManager.default.isExecutableFile(atPath: tools.0) && FileManager.default.isExecutableFile(atPath: tools.1)
        return present ? tools : nil
    }()

    /// A fresh directory, removed by the caller.
    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-example-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Starts the example `name` (built beside this test binary) with `arguments`; standard input from
    /// `input` when given.
    static func start(_ name: String, _ arguments: [String], input: String? = nil, environment: [String: String] = [:], in directory: String) throws
        -> ChildProcess
    {
        let executable = ChildProcess.builtProduct(name)
        var command = "exec \"$0\" \"$@\""
        if let input {
            try input.write(toFile: directory + "/stdin.txt", atomically: true, encoding: .utf8)
            command += " < stdin.txt"
        }
        return try ChildProcess.spawn(
            "/bin/sh",
            arguments: ["-c", command, executable] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: directory
        )
    }

    /// The first line of a background example's output that says what it did with its task. "caught up"
    /// (`urlSessionDidFinishEvents`, after ferryd replays the previous run's events) and the
    /// `getTasksWithCompletionHandler` answer both arrive on the delegate queue in no promised order, as
    /// on Apple's platforms, so it may come first.
    static func firstAction(_ stdout: String) -> String? {
        stdout.split(separator: "\n").map(String.init).first { $0 != "caught up" }
    }

    /// Collects the output of `process` until it exits (killed after `timeout` seconds).
    static func finish(_ process: ChildProcess, timeout: Double = 60) async throws -> Run {
        async let stdout = process.standardOutput!.readToEndOffPool()
        async let stderr = process.standardError!.readToEndOffPool()
        let end = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > end { kill(process.processIdentifier, SIGKILL) }
            try await Task.sleep(for: .milliseconds(10))
        }
        let (out, err) = await (stdout, stderr)
        return Run(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }

    static func run(_ name: String, _ arguments: [String], input: String? = nil, environment: [String: String] = [:], in directory: String)
        async throws -> Run
    {
        try await finish(try start(name, arguments, input: input, environment: environment, in: directory))
    }

    /// Environment for a daemon of the test's own under `directory`, and a way to stop it.
    static func isolatedDaemon(in directory: String) -> (environment: [String: String], stop: () -> Void)? {
        guard let tools = daemonTools else { return nil }
        let environment = ["FERRY_HOME": directory + "/home", "FERRYD_PATH": tools.ferryd]
        return (environment, {
            let stop = try? ChildProcess.spawn(
                tools.ferry,
                arguments: ["daemon", "stop"],
                environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                output: .discarded
            )
            stop?.waitUntilExit()
        })
    }

    @Test(.enabled(if: daemonTools != nil, "ferryd is not built: run `swift build` in the repository first"))
    func theBackgroundDownloaderSurvivesBeingKilled() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try #require(Self.isolatedDaemon(in: directory))
        defer { daemon.stop() }
        try await TestServer.withServer { server in
            // 3 MB at 1 MB/s: running for a while after the first run is killed.
            let url = server.url("/bytes/3000000?seed=5&throttle=1000000")
            let destination = directory + "/file.bin"
            let first = try Self.start("BackgroundDownloader", [url, destination], environment: daemon.environment, in: directory)
            // Killed once ferryd has the task (its note is written after resume()) and bytes flow.
            let end = Date().addingTimeInterval(30)
            while server.counters.requests(path: "/bytes/3000000") == 0 || !FileManager.default.fileExists(atPath: destination + ".task") {
                #expect(Date() < end, "the download never started")
                if Date() > end { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            kill(first.processIdentifier, SIGKILL)
            let killed = try await Self.finish(first)
            #expect(killed.stdout.contains("started task"), "\(killed.stdout)\(killed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: destination))

            let second = try await Self.run("BackgroundDownloader", [url, destination], environment: daemon.environment, in: directory)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(second.stdout.contains("continuing task"))
            #expect(second.stdout.contains("saved \(destination)"))
            let saved = try Data(contentsOf: URL(fileURLWithPath: destination))
            #expect(saved == Data(DeterministicBytes(seed: 5).bytes(offset: 0, count: 3_000_000)))
            // One download: the second run did not start another.
            #expect(server.counters.requests(path: "/bytes/3000000") == 1)
        }
    }

    /// ferryd's pid, from `ferry daemon status` with `environment`.
    static func daemonPid(_ environment: [String: String]) async throws -> Int32? {
        guard let tools = daemonTools else { return nil }
        let status = try ChildProcess.spawn(
            tools.ferry,
            arguments: ["daemon", "status"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: .pipes
        )
        let run = try await finish(status)
        guard let range = run.stdout.range(of: "pid ") else { return nil }
        return Int32(run.stdout[range.upperBound...].prefix { $0.isNumber })
    }

    /// Waits until `server` has sent `bytes` of `path`'s body (30 s at most: then the download never started).
    static func waitUntilSent(_ bytes: Int64, of path: String, by server: TestServer) async throws {
        let end = Date().addingTimeInterval(30)
        while server.counters.bodyBytesSent(path: path) < bytes {
            #expect(Date() < end, "the download never started")
            if Date() > end { break }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test(.enabled(if: daemonTools != nil, "ferryd is not built: run `swift build` in the repository first"))
    func theAppleStyleDownloaderSurvivesItselfAndFerrydBeingKilled() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try #require(Self.isolatedDaemon(in: directory))
        defer { daemon.stop() }
        try await TestServer.withServer { server in
            // 3 MB at 1 MB/s: still running when the program and ferryd are killed.
            let url = server.url("/bytes/3000000?seed=7&throttle=1000000")
            let destination = directory + "/file.bin"
            let first = try Self.start("AppleStyleDownloader", [url, destination], environment: daemon.environment, in: directory)
            try await Self.waitUntilSent(200_000, of: "/bytes/3000000", by: server)
            let ferryd = try #require(try await Self.daemonPid(daemon.environment))
            kill(first.processIdentifier, SIGKILL)
            kill(ferryd, SIGKILL)
            let killed = try await Self.finish(first)
            #expect(killed.stdout.contains("started task"), "\(killed.stdout)\(killed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: destination))

            // The same program, unchanged, run again: it starts ferryd, finds its task by description,
            // and collects the file.
            let second = try await Self.run("AppleStyleDownloader", [url, destination], environment: daemon.environment, in: directory)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(Self.firstAction(second.stdout)?.hasPrefix("continuing task") == true, "\(second.stdout)")
            #expect(second.stdout.contains("saved \(destination)"))
            let saved = try Data(contentsOf: URL(fileURLWithPath: destination))
            #expect(saved == Data(DeterministicBytes(seed: 7).bytes(offset: 0, count: 3_000_000)))
        }
    }

    @Test(.enabled(if: daemonTools != nil, "ferryd is not built: run `swift build` in the repository first"))
    func theAppleStyleDownloaderStopsWithResumeDataAndContinues() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try #require(Self.isolatedDaemon(in: directory))
        defer { daemon.stop() }
        try await TestServer.withServer { server in
            let url = server.url("/bytes/3000000?seed=6&throttle=1000000")
            let destination = directory + "/file.bin"
            let first = try Self.start("AppleStyleDownloader", [url, destination], environment: daemon.environment, in: directory)
            try await Self.waitUntilSent(200_000, of: "/bytes/3000000", by: server)
            kill(first.processIdentifier, SIGTERM)
            let stopped = try await Self.finish(first)
            #expect(stopped.stdout.contains("stopped; resume data kept"), "\(stopped.stdout)\(stopped.stderr)")
            #expect(FileManager.default.fileExists(atPath: destination + ".resume"))

            let second = try await Self.run("AppleStyleDownloader", [url, destination], environment: daemon.environment, in: directory)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(Self.firstAction(second.stdout)?.hasPrefix("resumed task") == true, "\(second.stdout)")
            let saved = try Data(contentsOf: URL(fileURLWithPath: destination))
            #expect(saved == Data(DeterministicBytes(seed: 6).bytes(offset: 0, count: 3_000_000)))
            // The second run asked for the rest only.
            #expect(server.counters.bodyBytesSent(path: "/bytes/3000000") < 3_000_000 + 1_000_000)
        }
    }

    @Test(.enabled(if: daemonTools != nil, "ferryd is not built: run `swift build` in the repository first"))
    func theGuidesWorkedPortIsTheExampleAndItRuns() async throws {
        // The Ferry program the guide shows is this example's code, character for character.
        let guide = try String(
            contentsOf: Self.repository.appendingPathComponent("Sources/Ferry/Ferry.docc/MovingFromURLSession.md"),
            encoding: .utf8
        )
        let blocks = guide.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let example = try String(
            contentsOf: Self.repository.appendingPathComponent("Examples/Sources/ReportDownloader/main.swift"),
            encoding: .utf8
        )
        let code = example.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("//") }.joined(separator: "\n")
        #expect(blocks.contains(code), "the guide's Ferry program differs from Examples/Sources/ReportDownloader/main.swift")

        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try #require(Self.isolatedDaemon(in: directory))
        defer { daemon.stop() }
        try await TestServer.withServer { server in
            let destination = directory + "/report.pdf"
            let run = try await Self.run(
                "ReportDownloader",
                [server.url("/bytes/200000?seed=3"), destination],
                environment: daemon.environment,
                in: directory
            )
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout == "saved \(destination)\n")
            #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(DeterministicBytes(seed: 3).bytes(offset: 0, count: 200_000)))
        }
    }

    @Test func theResumableUploaderSendsTheWholeFile() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = DeterministicBytes(seed: 11).bytes(offset: 0, count: 3 << 20)
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/upload.bin"))
        try await TestServer.withServer { server in
            let run = try await Self.run(
                "ResumableUploader",
                [server.url("/upload?keep=example", on: .resumable), directory + "/upload.bin"],
                in: directory
            )
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout.contains("sent \(bytes.count)/\(bytes.count)"))
            #expect(server.storedUpload(key: "example")?.body == bytes)
        }
    }

    @Test(.enabled(if: WebSocketPeer.unavailable == nil, "python3 with websockets is needed (.ci/run installs it)"))
    func theChatClientSendsEachLineAndPrintsTheAnswers() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let peer = try await WebSocketPeer.start()
        defer { peer.stop() }
        let run = try await Self.run("WebSocketChat", [peer.url("/echo").absoluteString], input: "hello\nworld\n", in: directory)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout == "< hello\n< world\nclosed with 1000\n")
    }

    @Test func theMetricsReaderShowsHTTP2OverTLSAndAReusedConnection() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await TestServer.withServer { server in
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let run = try await Self.run("MetricsReader", [server.url("/bytes/1000", on: .tls), directory + "/ca.pem"], in: directory)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { $0.contains("status=200 fetch=networkLoad protocol=h2") && $0.contains("tls=TLSv1.3") && $0.contains("bytes=1000") })
            #expect(lines.first?.contains("reused=false") == true)
            #expect(lines.last?.contains("reused=true") == true)
        }
    }
}
