import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ferryd's operations surface with real peers (issue "Operations"): the metrics a test's own work
/// produced, checked by promtool; the status page in headless Chromium; socket activation with a socket
/// the test makes and passes in.
@Suite(.serialized) struct DaemonOperationsTests {
    @Test func theMetricsCountWhatTheDaemonDidAndPromtoolAcceptsThem() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: [
                "FERRY_RETRY_BASE_DELAY": "0.05", "FERRY_THROUGHPUT_FLOOR": "1000000",
                "FERRY_THROUGHPUT_WINDOW": "0.5", "FERRY_CHECKPOINT_SECONDS": "0.05",
                "FERRY_METRICS_ADDRESS": "127.0.0.1:0",
            ]) { daemon in
                // One download that completes: its bytes, its response, its checkpoints.
                _ = try await daemon.download(server.url("/bytes/1500000?seed=3&throttle=3000000"), session: "t.metrics")
                try await eventually("the download completes", within: 30) {
                    await (try? daemon.tasks("t.metrics"))?.first?.state == .completed
                }
                var metrics = try await Self.scrape(daemon)
                #expect(metrics.value("ferry_received_bytes_total") == 1_500_000)
                #expect(metrics.value("ferry_http_responses_total", ["protocol": "http/1.1", "status": "2xx"]) == 1)
                #expect((metrics.value("ferry_checkpoint_sync_seconds_count") ?? 0) >= 1)
                #expect(metrics.value("ferry_tasks", ["session": "t.metrics", "state": "completed"]) == 1)
                #expect(metrics.value("ferry_tasks", ["session": "t.metrics", "state": "running"]) == 0)
                #expect(metrics.value("ferry_event_backlog", ["session": "t.metrics"]) == 2)

                // One that retries a refused port, one that fails under the throughput floor.
                let refused = try await daemon.download("http://127.0.0.1:1/nothing", session: "t.retry")
                _ = try await daemon.download(server.url("/bytes/5000000?throttle=100000"), session: "t.slow")
                try await eventually("the slow one fails", within: 20) {
                    await (try? daemon.tasks("t.slow"))?.first?.state == .completed
                }
                try await eventually("two retries", within: 20) {
                    ((try? await Self.scrape(daemon))?.value("ferry_retries_total", ["reason": "cannotConnectToHost"]) ?? 0) >= 2
                }
                metrics = try await Self.scrape(daemon)
                #expect(metrics.value("ferry_failures_total", ["reason": "timedOut"]) == 1)
                let retries = try #require(metrics.value("ferry_retries_total", ["reason": "cannotConnectToHost"]))
                #expect(metrics.value("ferry_http_errors_total", ["reason": "cannotConnectToHost"]).map { $0 >= retries } == true)
                // The listing says why the task waits. (Between its waits it makes an attempt: with retries
                // 0.05 s apart and growing, a listing on a loaded machine may catch one.)
                var listed: BackgroundTaskInfo?
                try await eventually("the listing shows the task waiting for its next attempt", within: 20) {
                    listed = try? await daemon.tasks("t.retry").first { $0.taskIdentifier == refused.taskIdentifier }
                    return listed?.state == .pending && listed?.nextAttemptTime != nil
                }
                #expect(listed?.lastError?.code == .cannotConnectToHost)
                #expect((listed?.failedAttempts ?? 0) >= 2)

                guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else {
                    Issue.record("promtool is not installed (Debian package prometheus; .ci/run installs it)")
                    return
                }
                let check = try await runTool("/usr/bin/promtool", ["check", "metrics"], input: metrics.text)
                #expect(check.status == 0, "promtool: \(check.output)")

                // The same metrics over TCP on the loopback port the daemon was given (0: any; its log
                // says which).
                let port = try #require(
                    daemon.log.firstMatch(of: /metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/).map { String($0.1) }
                )
                let overTCP = try await runTool("/usr/bin/curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"])
                #expect(Exposition(text: overTCP.output).value("ferry_received_bytes_total") == metrics.value("ferry_received_bytes_total"))
                #expect(try await Self.status(of: "http://127.0.0.1:\(port)/v1/daemon", host: nil) == 404, "metrics only")
                // A page under another name (DNS rebinding) is refused; the loopback names are served.
                #expect(try await Self.status(of: "http://127.0.0.1:\(port)/metrics", host: "evil.example:\(port)") == 403)
                #expect(try await Self.status(of: "http://127.0.0.1:\(port)/metrics", host: "localhost:\(port)") == 200)
            }
        }
    }

    @Test func aMetricsAddressThatIsNotLoopbackIsRefused() async throws {
        let home = "/tmp/ferry-m-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let result = try await runTool(Self.ferryd, ["--metrics-address", "0.0.0.0:9466"], environment: ["FERRY_HOME": home])
        #expect(result.status == 1)
        #expect(result.output.contains("is not a loopback address; ferryd serves metrics on 127.0.0.1 or ::1 only"))
        // A port another program holds: said in plain words.
        try await TestServer.withServer { server in
            let port = try #require(URL(string: server.url("/"))?.port)
            let taken = try await runTool(Self.ferryd, ["--metrics-address", "127.0.0.1:\(port)"], environment: ["FERRY_HOME": home])
            #expect(taken.status == 1)
            #expect(taken.output.contains("cannot serve metrics on 127.0.0.1:\(port): Address already in use"), "\(taken.output)")
        }
        let unknown = try await runTool(Self.ferryd, ["--metrics"], environment: ["FERRY_HOME": home])
        #expect(unknown.status == 2)
        #expect(unknown.output.contains("Unknown option '--metrics'"), "\(unknown.output)")
    }

    @Test func theStatusPageListsTasksPausesOneAndRefusesRequestsWithoutItsToken() async throws {
        guard let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile)
        else {
            Issue.record("headless Chromium is not installed (Debian package chromium; .ci/run installs it)")
            return
        }
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let running = try await daemon.download(server.url("/bytes/20000000?throttle=200000"), session: "t.page")
                try await eventually("it runs", within: 30) {
                    await (try? daemon.tasks("t.page"))?.first?.state == .running
                }
                // A task whose strings would break a page that embeds them as markup (a comment opened in
                // the script), with a credential and a query token that the page must not show.
                var hostile = request(server.url("/bytes/10?token=SECRET-ONE"))
                hostile.headers.add(name: "Authorization", value: "Bearer SECRET-TWO")
                let planted: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/t.page/tasks",
                    body: ControlAPI.TaskCreation(kind: .download, request: hostile, taskDescription: "<!--<script>")
                )
                let page: ControlAPI.StatusPage = try await daemon.client.call("POST", "/v1/ui")
                let again: ControlAPI.StatusPage = try await daemon.client.call("POST", "/v1/ui")
                #expect(again == page)
                #expect(page.url.hasPrefix("http://127.0.0.1:"))

                // The DOM Chromium builds lists the running task.
                let dump = try await runTool(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.url])
                #expect(dump.output.contains(#"<tr data-session="t.page" data-task="\#(running.taskIdentifier)" data-state="running">"#))
                #expect(dump.output.contains(#"<tr data-session="t.page" data-task="\#(planted.taskIdentifier)""#))
                #expect(!dump.output.contains("SECRET-ONE") && !dump.output.contains("SECRET-TWO"))

                // Without the token, or with another, or under another host name: 403.
                let base = String(page.url.prefix { $0 != "?" })
                let port = String(base.dropFirst("http://127.0.0.1:".count).dropLast())
                for (url, host) in [
                    (base, nil), (base + "?token=" + String(repeating: "0", count: 64), nil),
                    (base + "api/tasks", nil), (page.url, "localhost:\(port)"),
                ] as [(String, String?)] {
                    #expect(try await Self.status(of: url, host: host) == 403, "\(url) \(host ?? "")")
                }
                #expect(try await Self.status(of: page.url, host: nil) == 200)

                // Pressing Pause in Chromium suspends the task.
                let press = try await runTool(
                    "/usr/bin/python3",
                    [Self.script("chromium_press.py"), page.url,
                     #"button[data-action="pause"][data-task="\#(running.taskIdentifier)"]"#]
                )
                #expect(press.status == 0, "\(press.output)")
                // (Chromium shares the machine with the rest of the suite: generous.)
                try await eventually("the task is suspended", within: 30) {
                    await (try? daemon.tasks("t.page"))?.first?.state == .suspended
                }

                // Stopped, the page is gone.
                try await daemon.client.perform("DELETE", "/v1/ui")
                #expect((try? await Self.status(of: page.url, host: nil)) == nil)
            }
        }
    }

    @Test func socketActivationServesTheSocketItIsGivenAndLeavesItInPlace() async throws {
        let home = "/tmp/ferry-sa-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let path = home + "/ferryd.sock"
        let listener = try Self.listeningSocket(path)
        defer { close(listener) }
        // A client that connects before the daemon runs waits in the socket's queue, as with systemd.
        let early = try Self.connect(path)
        defer { close(early) }
        let request = "GET /v1/daemon HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\n\r\n"
        _ = request.withCString { write(early, $0, strlen($0)) }

        let client = DaemonClient(paths: try DaemonPaths(environment: ["FERRY_HOME": home]))
        for round in 1...2 {
            let daemon = try ChildProcess.spawn(
                "/bin/sh",
                arguments: ["-c", #"LISTEN_PID=$$ LISTEN_FDS=1; export LISTEN_PID LISTEN_FDS; exec "$0""#, Self.ferryd],
                environment: ["FERRY_HOME": home, "PATH": "/usr/bin:/bin"],
                output: .discarded,
                passing: [listener]
            )
            defer {
                kill(daemon.processIdentifier, SIGKILL)
                daemon.waitUntilExit()
            }
            try await eventually("ferryd answers on the inherited socket (round \(round))", within: 20) {
                await client.status()?.pid == daemon.processIdentifier
            }
            if round == 1 {
                let answer = try await readAll(early)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
                #expect(answer.contains("\"pid\":\(daemon.processIdentifier)"))
            }
            // A task goes in and is listed: the API works whole through the relay.
            var creation = ControlAPI.TaskCreation(kind: .download, request: Request(url: URL(string: "http://127.0.0.1:1/x")!))
            creation.start = false
            let created: BackgroundTaskInfo = try await client.call("POST", "/v1/sessions/t.sa/tasks", body: creation)
            let listed: [BackgroundTaskInfo] = try await client.call("GET", "/v1/sessions/t.sa/tasks")
            #expect(listed.contains { $0.taskIdentifier == created.taskIdentifier })
            // SIGTERM: the daemon exits and leaves systemd's socket where it was, for the next start.
            kill(daemon.processIdentifier, SIGTERM)
            try await eventually("ferryd exits", within: 20) { !daemon.isRunning }
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }

    // MARK: Helpers

    /// The daemon's metrics, parsed.
    static func scrape(_ daemon: DaemonFixture) async throws -> Exposition {
        Exposition(text: try await daemon.client.text("GET", "/metrics"))
    }

    /// The status of GET `url` with `host` as the Host header (nil: the URL's), or nil when nothing
    /// answers.
    static func status(of url: String, host: String?) async throws -> Int? {
        var arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url]
        if let host { arguments += ["-H", "Host: \(host)"] }
        let result = try await runTool("/usr/bin/curl", arguments)
        return Int(result.output).flatMap { $0 == 0 ? nil : $0 }
    }

    static var ferryd: String { ChildProcess.builtProduct("ferryd") }

    /// A script in Tests/Scripts.
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Scripts/\(name)").path
    }

    static func listeningSocket(_ path: String) throws -> Int32 {
        try unixSocket(path) { descriptor, address, length in bind(descriptor, address, length) == 0 && listen(descriptor, 16) == 0 }
    }

    static func connect(_ path: String) throws -> Int32 {
        try unixSocket(path) { descriptor, address, length in Glibc.connect(descriptor, address, length) == 0 }
    }

    /// A unix stream socket, given to `use` (bind or connect) with `path`'s address.
    private static func unixSocket(
        _ path: String,
        _ use: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            _ = path.utf8CString.withUnsafeBytes { raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(raw.count))) }
        }
        let done = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { use(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, done else {
            throw DaemonFixture.FixtureError("cannot use a unix socket at \(path): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }
}

/// Prometheus text, parsed enough to read samples.
struct Exposition {
    let text: String

    /// The value of the sample `name` whose labels are exactly `labels`.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            let series = parts[0]
            let (metric, labelText) =
                series.firstIndex(of: "{").map { (series[..<$0], series[series.index(after: $0)..<series.index(before: series.endIndex)]) }
                ?? (series, "")
            guard metric == name else { continue }
            var found: [String: String] = [:]
            for pair in labelText.split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { found[String(kv[0])] = String(kv[1].dropFirst().dropLast()) }
            }
            if found == labels { return Double(parts[1]) }
        }
        return nil
    }
}

/// Runs a tool to its end, its stdout (and stderr) collected; `input` goes to its stdin through a file;
/// `environment` is added to this process's.
func runTool(
    _ executable: String,
    _ arguments: [String],
    input: String? = nil,
    environment: [String: String] = [:]
) async throws -> (status: Int32, output: String) {
    var arguments = arguments
    var executable = executable
    let base = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    if let input {
        let file = NSTemporaryDirectory() + "ferry-input-\(UUID().uuidString)"
        try input.write(toFile: file, atomically: true, encoding: .utf8)
        arguments = ["-c", #"exec "$0" "$@" < "$FERRY_INPUT""#, executable] + arguments
        executable = "/bin/sh"
        let child = try ChildProcess.spawn(
            executable,
            arguments: arguments,
            environment: base.merging(["FERRY_INPUT": file]) { $1 }
        )
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try await finish(child)
    }
    return try await finish(try ChildProcess.spawn(executable, arguments: arguments, environment: base))
}

private func finish(_ child: ChildProcess) async throws -> (status: Int32, output: String) {
    async let out = child.standardOutput!.readToEndOffPool()
    async let err = child.standardError!.readToEndOffPool()
    let (o, e) = await (out, err)
    while child.isRunning { try await Task.sleep(for: .milliseconds(10)) }
    return (child.terminationStatus, String(decoding: o, as: UTF8.self) + String(decoding: e, as: UTF8.self))
}

/// Everything readable from `descriptor` until the peer closes, read off the cooperative pool.
func readAll(_ descriptor: Int32) async throws -> String {
    await withCheckedContinuation { continuation in
        Thread {
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count <= 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            continuation.resume(returning: String(decoding: data, as: UTF8.self))
        }.start()
    }
}
