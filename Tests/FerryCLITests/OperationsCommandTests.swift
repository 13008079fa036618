import FerryCLI
import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry clean`, `ferry ui`, `ferry daemon metrics|log|install` as a user runs them.
@Suite struct OperationsCommandTests {
    @Test func cleanMetricsLogAndTheStatusPageFromTheCommandLine() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            let home = "/tmp/ferry-o-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            var runner = CLIRunner(directory: directory)
            runner.environment = ["FERRY_HOME": home]
            let cli = runner
            do {
                try await Self.operations(cli, server: server, directory: directory, home: home)
            } catch {
                _ = try? await cli.run(["daemon", "stop"])
                throw error
            }
            _ = try await cli.run(["daemon", "stop"])
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: home)
        }
    }

    private static func operations(_ cli: CLIRunner, server: TestServer, directory: String, home: String) async throws {
        do {
            let submit = try await cli.run(["get", "--background", server.url("/bytes/20000"), "-o", "a.bin"])
            #expect(submit.status == 0, "\(submit.stderr)")
            let wait = try await cli.run(["wait", "1", "--timeout", "30"])
            #expect(wait.status == 0, "\(wait.stderr)")

            // Metrics: the text format, with this task counted.
            let metrics = try await cli.run(["daemon", "metrics"])
            #expect(metrics.status == 0)
            #expect(metrics.stdout.contains(#"ferry_tasks{session="ferry-cli",state="completed"} 1.0"#))
            #expect(metrics.stdout.contains("ferry_received_bytes_total 20000"))

            // The log: readable lines naming the task, or the JSON as written.
            let log = try await cli.run(["daemon", "log", "-n", "50"])
            #expect(log.status == 0)
            #expect(log.stdout.contains("[ferry-cli#1]"), "\(log.stdout)")
            let json = try await cli.run(["daemon", "log", "-n", "3", "--json"])
            let lines = json.stdout.split(separator: "\n")
            #expect(lines.count == 3)
            #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] })

            // -f prints what is written after it started.
            let (follower, out, err) = try cli.start(["daemon", "log", "-f", "-n", "0"])
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await cli.run(["get", "--background", "http://127.0.0.1:1/refused", "-o", "b.bin"]).status == 0)
            try await Task.sleep(for: .milliseconds(1500))
            kill(follower.processIdentifier, SIGINT)
            let followed = try await cli.finish(follower, out, err, timeout: 10)
            #expect(followed.stdout.contains("[ferry-cli#2]"), "\(followed.stdout)")
            #expect(followed.status == 0)

            // ls says why task 2 waits.
            let listed = try await cli.run(["ls"])
            #expect(listed.stdout.contains("retrying"), "\(listed.stdout)")
            #expect(listed.stdout.contains("could not connect to 127.0.0.1:1"))

            // clean: the finished one goes, with nothing of the pending one.
            #expect(try await cli.run(["clean", "--older-than", "1h"]).stdout.hasPrefix("removed 0 finished task(s)"))
            let clean = try await cli.run(["clean", "--json"])
            let result = try JSONDecoder().decode(ControlAPI.CleanResult.self, from: Data(clean.stdout.utf8))
            #expect(result.removedTasks == 1)
            let after = try await cli.run(["ls", "--json"])
            #expect(try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(after.stdout.utf8)).map(\.taskIdentifier) == [2])
            #expect(FileManager.default.fileExists(atPath: directory + "/a.bin"), "a destination is the user's")
            let bad = try await cli.run(["clean", "--older-than", "soon"])
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("90s, 30m, 12h or 7d"))

            // The status page: an address with a token, stopped with --stop.
            let ui = try await cli.run(["ui", "--detach", "--json"])
            let page = try JSONDecoder().decode(ControlAPI.StatusPage.self, from: Data(ui.stdout.utf8))
            #expect(page.url.hasPrefix("http://127.0.0.1:") && page.url.hasSuffix("?token=\(page.token)"))
            #expect(page.token.count == 64)
            // A page open in a browser (its event stream) ends when the page stops, and a normal stop
            // writes no error to ferryd's log (it wrote Hummingbird's "Waiting on child channel:
            // CancellationError()" and "Server shutdown error: Already closed").
            let events = page.url.replacingOccurrences(of: "/?token=", with: "/api/events?token=")
            let browser = try ChildProcess.spawn("/usr/bin/curl", arguments: ["-sSN", "--max-time", "120", events])
            #expect(await browser.standardOutput!.readLineOffPool()?.hasPrefix("data: ") == true)
            #expect(try await cli.run(["ui", "--stop"]).status == 0)
            let closed = try await cli.finish(browser, browser.standardOutput!, browser.standardError!, timeout: 60)
            #expect(closed.status == 0, "the event stream ends cleanly: \(closed.stderr)")
            let daemonLog = try String(contentsOfFile: home + "/ferryd.log", encoding: .utf8)
            let errors = daemonLog.split(separator: "\n").filter { $0.contains(#""level":"error""#) }
            #expect(errors.isEmpty, "\(errors)")
            #expect(daemonLog.contains("status page stopped"))
        }
    }

    @Test func installWritesUnitsThatSystemdAcceptsAndContribHoldsTheSame() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var cli = CLIRunner(directory: directory)
        cli.environment = ["XDG_CONFIG_HOME": directory + "/config", "FERRY_HOME": ""]
        let install = try await cli.run(["daemon", "install", "--no-enable"])
        #expect(install.status == 0, "\(install.stderr)")
        let units = directory + "/config/systemd/user"
        let service = try String(contentsOfFile: units + "/ferryd.service", encoding: .utf8)
        #expect(service.contains("ExecStart=\((CLIRunner.binary as NSString).deletingLastPathComponent)/ferryd\n"))
        #expect(service.contains("Restart=on-failure"))
        let socket = try String(contentsOfFile: units + "/ferryd.socket", encoding: .utf8)
        #expect(socket.contains("ListenStream=%t/ferry/ferryd.sock"))

        if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") {
            let verify = try ChildProcess.spawn(
                "/usr/bin/systemd-analyze",
                arguments: ["verify", units + "/ferryd.service", units + "/ferryd.socket"]
            )
            let result = try await cli.finish(verify, verify.standardOutput!, verify.standardError!)
            #expect(result.status == 0 && result.stderr.isEmpty, "systemd-analyze: \(result.stderr)")
        } else {
            Issue.record("systemd-analyze is missing (Debian package systemd; .ci/run installs it)")
        }

        // contrib/systemd holds the units as rendered for /usr/local/bin/ferryd.
        let contrib = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("contrib/systemd").path
        let rendered = SystemdUnits.render(ferryd: "/usr/local/bin/ferryd")
        #expect(try String(contentsOfFile: contrib + "/ferryd.service", encoding: .utf8) == rendered.service)
        #expect(try String(contentsOfFile: contrib + "/ferryd.socket", encoding: .utf8) == rendered.socket)
        #expect(SystemdUnits.quoted("/opt/my apps/ferryd") == #""/opt/my apps/ferryd""#)
        #expect(SystemdUnits.quoted("/x/100%") == "/x/100%%")
    }

    @Test func theTableSaysWhyATaskWaitsAndWhenItTriesAgain() {
        var task = BackgroundTaskInfo(
            session: "s", taskIdentifier: 4, kind: .download, state: .pending,
            originalRequest: Request(url: URL(string: "http://h/x")!)
        )
        task.lastError = FerryError(.cannotConnectToHost, "could not connect to h:80")
        task.failedAttempts = 2
        task.nextAttemptTime = 1_000_030
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(TaskTable.state(task) == "retrying")
        #expect(TaskTable.error(task, now: now) == "could not connect to h:80 (try 3 in 30s)")
        task.state = .completed
        task.error = FerryError(.cannotConnectToHost, "gave up")
        #expect(TaskTable.error(task, now: now) == "gave up")
    }

    @Test func theTableSaysWhenAHeldTaskStarts() {
        var task = BackgroundTaskInfo(
            session: "s", taskIdentifier: 5, kind: .download, state: .pending,
            originalRequest: Request(url: URL(string: "http://h/x")!)
        )
        task.earliestBeginTime = 1_000_300
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(TaskTable.state(task, now: now) == "starts in 5m")
        #expect(TaskTable.state(task, now: now.addingTimeInterval(300)) == "pending", "its time has come")
    }
}
