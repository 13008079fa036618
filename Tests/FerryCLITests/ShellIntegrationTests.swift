import FerryTestServer
import Foundation
import Testing

/// Shell completions and the man page's source, as docs/CLI.md installs them.
@Suite struct ShellIntegrationTests {
    @Test func completionScriptsAreMadeForBashZshAndFishAndBashAcceptsItsOwn() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cli = CLIRunner(directory: directory)
        for shell in ["bash", "zsh", "fish"] {
            let run = try await cli.run(["--generate-completion-script", shell])
            #expect(run.status == 0, "\(shell): \(run.stderr)")
            // Subcommands and their flags are offered.
            #expect(run.stdout.contains("max-time") && run.stdout.contains("parallel"), "\(shell)")
            try run.stdout.write(toFile: directory + "/ferry.\(shell)", atomically: true, encoding: .utf8)
        }
        let check = try ChildProcess.spawn("/bin/bash", arguments: ["-n", directory + "/ferry.bash"])
        let checked = try await cli.finish(check, check.standardOutput!, check.standardError!)
        #expect(checked.status == 0, "bash -n: \(checked.stderr)")
    }

    @Test func theManualsSourceListsEverySubcommandAndFlag() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // What swift-argument-parser's generate-manual plugin renders into ferry.1.
        let run = try await CLIRunner(directory: directory).run(["--experimental-dump-help"])
        #expect(run.status == 0, "\(run.stderr)")
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let command = try #require(dump["command"] as? [String: Any])
        let subcommands = (command["subcommands"] as? [[String: Any]]) ?? []
        let names = subcommands.compactMap { $0["commandName"] as? String }
        for expected in ["get", "put", "ws", "ls", "wait", "daemon"] { #expect(names.contains(expected), "\(expected)") }
        let get = try #require(subcommands.first { $0["commandName"] as? String == "get" })
        let flags = ((get["arguments"] as? [[String: Any]]) ?? []).flatMap { ($0["names"] as? [[String: Any]]) ?? [] }
            .compactMap { $0["name"] as? String }
        for flag in ["write-out", "max-time", "range", "parallel", "input-file", "referer"] { #expect(flags.contains(flag), "\(flag)") }
    }
}
