import FerryCLI
import FerryTestServer
import Foundation
import Testing

/// The config file: parsed as .curlrc and aria2.conf are, applied before the command line.
@Suite struct ConfigFileTests {
    @Test func linesParseAsCurlrcAndAria2confHoldThem() throws {
        let lines = try ConfigFile.parse(
            """
            # a comment
            max-time = 30
            --retry 3
            silent
              proxy=http://127.0.0.1:3128
            user-agent = "agent \\"x\\" 1"
            x 4

            """,
            file: "config"
        )
        #expect(lines.map(\.arguments) == [
            ["--max-time=30"], ["--retry=3"], ["--silent"], ["--proxy=http://127.0.0.1:3128"], ["--user-agent=agent \"x\" 1"],
            ["-x", "4"],
        ])
        #expect(lines.map(\.number) == [2, 3, 4, 5, 6, 7])
        #expect(throws: CLIFailure.self) { try ConfigFile.parse("user-agent = \"open", file: "config") }
        #expect(throws: CLIFailure.self) { try ConfigFile.parse("= 3", file: "config") }
    }

    @Test func theFileGoesBeforeTheCommandLineToTheCommandsThatTakeIt() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory + "/xdg/ferry", withIntermediateDirectories: true)
            try "max-redirs = 0\nconnections 2\nreferer = https://from.config/\n"
                .write(toFile: directory + "/xdg/ferry/config", atomically: true, encoding: .utf8)
            let cli = CLIRunner(environment: ["XDG_CONFIG_HOME": directory + "/xdg"], directory: directory)
            let url = server.url("/redirect/1?to=/echo")
            // The file's --max-redirs 0 stops at the redirect; the command line's wins over it.
            let stopped = try await cli.run(["get", "-q", url, "-o", "a.json"])
            #expect(stopped.status == 1)
            #expect(stopped.stderr.contains("more than 0 redirects"))
            let allowed = try await cli.run(["get", "-q", "--max-redirs", "2", url, "-o", "b.json"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            let echo = try String(contentsOfFile: directory + "/b.json", encoding: .utf8)
            #expect(echo.contains("https:\\/\\/from.config\\/") || echo.contains("https://from.config/"))
            // put takes the options it knows (the referer) and leaves get's (connections, max-redirs).
            try "x".write(toFile: directory + "/x.txt", atomically: true, encoding: .utf8)
            let put = try await cli.run(["put", "-q", "x.txt", server.url("/echo")])
            #expect(put.status == 0, "\(put.stderr)")
            #expect(put.stdout.contains("from.config"))
            // --disable (curl's) skips the file; --config FILE names another.
            let disabled = try await cli.run(["get", "--disable", "-q", url, "-o", "c.json"])
            #expect(disabled.status == 0, "\(disabled.stderr)")
            try "max-time = 0\n".write(toFile: directory + "/other.conf", atomically: true, encoding: .utf8)
            let other = try await cli.run(["get", "--config", "other.conf", "-q", url, "-o", "d.json"])
            #expect(other.status == 2, "the other file's invalid --max-time 0 is reported: \(other.stderr)")
            // A line no command takes is named with its file and line.
            try "connections 2\nno-such-option = 1\n".write(toFile: directory + "/xdg/ferry/config", atomically: true, encoding: .utf8)
            let bad = try await cli.run(["get", url, "-o", "e.json"])
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("config line 2: no ferry command takes --no-such-option"), "\(bad.stderr)")
            // Commands other than get, put and ws do not read it.
            #expect(try await cli.run(["--version"]).status == 0)
        }
    }
}
