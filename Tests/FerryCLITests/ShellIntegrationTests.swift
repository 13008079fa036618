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

    /// The top command of the binary's help dump (`--experimental-dump-help`): what swift-argument-parser's
    /// generate-manual plugin renders into ferry.1.
    private func helpDump() async throws -> [String: Any] {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLIRunner(directory: directory).run(["--experimental-dump-help"])
        #expect(run.status == 0, "\(run.stderr)")
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        return try #require(dump["command"] as? [String: Any])
    }

    @Test func theManualsSourceListsEverySubcommandAndFlag() async throws {
        let command = try await helpDump()
        let subcommands = (command["subcommands"] as? [[String: Any]]) ?? []
        let names = subcommands.compactMap { $0["commandName"] as? String }
        for expected in ["get", "put", "ws", "ls", "wait", "daemon"] { #expect(names.contains(expected), "\(expected)") }
        let get = try #require(subcommands.first { $0["commandName"] as? String == "get" })
        let flags = ((get["arguments"] as? [[String: Any]]) ?? []).flatMap { ($0["names"] as? [[String: Any]]) ?? [] }
            .compactMap { $0["name"] as? String }
        for flag in ["write-out", "max-time", "range", "parallel", "input-file", "referer"] { #expect(flags.contains(flag), "\(flag)") }
    }

    /// docs/CLI.md names every option and flag of every subcommand, by at least one of its spellings
    /// (as the binary's own help dump lists them), so a flag added without its documentation fails here.
    @Test func theCLIGuideNamesEveryFlag() async throws {
        let command = try await helpDump()
        let guidePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/CLI.md").path
        let guide = try String(contentsOfFile: guidePath, encoding: .utf8)
        /// Whether `spelling` stands in the guide as a whole flag (not as the start of a longer one).
        func named(_ spelling: String) -> Bool {
            var searched = guide[...]
            while let found = searched.range(of: spelling) {
                let next = searched[found.upperBound...].first
                if next.map({ !($0.isLetter || $0.isNumber || $0 == "-") }) ?? true { return true }
                searched = searched[found.upperBound...]
            }
            return false
        }
        var unnamed: [String] = []
        var checked = 0
        func visit(_ command: [String: Any], path: String) {
            for argument in (command["arguments"] as? [[String: Any]]) ?? [] {
                guard let kind = argument["kind"] as? String, kind == "option" || kind == "flag",
                    argument["shouldDisplay"] as? Bool != false
                else { continue }
                let names = ((argument["names"] as? [[String: Any]]) ?? []).compactMap { name -> String? in
                    guard let text = name["name"] as? String, let nameKind = name["kind"] as? String else { return nil }
                    return (nameKind == "long" ? "--" : "-") + text
                }
                if names.contains(where: { ["--help", "-h", "--version"].contains($0) }) { continue }
                checked += 1
                if !names.contains(where: named) { unnamed.append("\(path) \(names.joined(separator: "/"))") }
            }
            for sub in (command["subcommands"] as? [[String: Any]]) ?? [] {
                visit(sub, path: path + " " + ((sub["commandName"] as? String) ?? "?"))
            }
        }
        visit(command, path: "ferry")
        #expect(checked > 100, "the dump listed \(checked) flags")
        #expect(unnamed.isEmpty, "docs/CLI.md does not name: \(unnamed.joined(separator: ", "))")
    }
}
