import FerryTestServer
import Foundation
import Testing

/// Every row of docs/CLI.md's "Coming from curl, wget or aria2" table, checked against the built
/// binary: a habit ferry keeps works, and one it does not keep gets an error that names ferry's
/// equivalent. A row added to the table without a check here, or a check whose row is gone, fails.
@Suite struct HabitTableTests {
    /// One row's check: runs `ferry` in a fresh directory, beside a test server.
    typealias Check = @Sendable (_ cli: CLIRunner, _ server: TestServer, _ directory: String) async throws -> Void

    /// The table's first column, as written in docs/CLI.md.
    static let documentedHabits: [String] = {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/CLI.md")
        guard let text = try? String(contentsOf: docs, encoding: .utf8),
            let start = text.range(of: "## Coming from curl, wget or aria2")
        else { return [] }
        let section = text[start.upperBound...].prefix { _ in true }
        var habits: [String] = []
        for line in section.split(separator: "\n").dropFirst() {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("| "), !line.hasPrefix("| habit |"), !line.hasPrefix("| --- |"),
                let end = line.range(of: " | ")
            else { continue }
            habits.append(String(line[line.index(line.startIndex, offsetBy: 2)..<end.lowerBound]))
        }
        return habits
    }()

    @Test func everyRowOfTheTableHasACheckAndEveryCheckARow() {
        #expect(Self.documentedHabits.count > 20, "docs/CLI.md's table was not found")
        let documented = Set(Self.documentedHabits)
        let checked = Set(Self.checks.keys)
        #expect(documented.subtracting(checked).isEmpty, "rows without a check: \(documented.subtracting(checked).sorted())")
        #expect(checked.subtracting(documented).isEmpty, "checks without a row: \(checked.subtracting(documented).sorted())")
    }

    @Test(arguments: HabitTableTests.checks.keys.sorted())
    func theBinaryDoesWhatTheRowSays(habit: String) async throws {
        let check = try #require(Self.checks[habit])
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await check(CLIRunner(directory: directory), server, directory)
        }
    }

    /// The files in `directory`.
    static func files(_ directory: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
    }

    /// A usage error (exit 2) whose words contain each of `words`; nothing written.
    static func refused(_ run: CLIRunner.Run, _ words: String..., directory: String) {
        #expect(run.status == 2, "\(run.stderr)")
        for word in words { #expect(run.stderr.contains(word), "\(word) in: \(run.stderr)") }
        #expect(files(directory).isEmpty)
    }

    static let checks: [String: Check] = curlRows.merging(wgetAndAria2Rows) { first, _ in first }
}
