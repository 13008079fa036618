import Foundation
import Testing

/// Benchmarks/autobahn_verdicts.py, which judges the Autobahn fuzzing server's reports for
/// Benchmarks/autobahn.sh (issue 43): a case without a verdict fails the run, as a case that did not
/// pass does. The reports here are written as kosoku writes them (index.json, then one file per case).
@Suite struct AutobahnVerdictsTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Benchmarks/autobahn_verdicts.py").path

    /// A report folder with `cases` (id, behavior, closing behavior) for agent "ferry".
    static func reports(_ cases: [(String, String, String)]) throws -> String {
        let directory = NSTemporaryDirectory() + "ferry-autobahn-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var index: [String: [String: String]] = [:]
        for (id, behavior, closing) in cases {
            let file = "ferry_case_\(id.replacingOccurrences(of: ".", with: "_")).json"
            index[id] = ["behavior": behavior, "behaviorClose": closing, "reportfile": file]
            let report = try JSONSerialization.data(withJSONObject: ["id": id, "behavior": behavior, "behaviorClose": closing])
            try report.write(to: URL(fileURLWithPath: directory + "/" + file))
        }
        try JSONSerialization.data(withJSONObject: ["ferry": index]).write(to: URL(fileURLWithPath: directory + "/index.json"))
        return directory
    }

    static let passing = [
        ("1.1.1", "OK", "OK"), ("3.2", "NON-STRICT", "OK"), ("7.1.6", "INFORMATIONAL", "INFORMATIONAL"),
        ("12.1.1", "OK", "OK"),
    ]

    @Test func everyCaseWithAPassingVerdictPasses() async throws {
        let directory = try Self.reports(Self.passing)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await runTool("/usr/bin/python3", [Self.script, directory, "4"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("judged 4 of 4 cases"), "\(run.output)")
        #expect(run.output.contains("| 12 permessage-deflate, server compresses | 1 OK |"), "\(run.output)")
    }

    @Test func aDeletedReportFailsTheRunAndIsNamed() async throws {
        let directory = try Self.reports(Self.passing)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.removeItem(atPath: directory + "/ferry_case_3_2.json")
        let run = try await runTool("/usr/bin/python3", [Self.script, directory, "4"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("no verdict: 3.2"), "\(run.output)")
        #expect(run.output.contains("judged 3 of 4 cases"), "\(run.output)")
    }

    @Test func fewerCasesInTheIndexThanTheClientRanFailsTheRun() async throws {
        // The race issue 43 found: the server had written 328 of 517 cases when the script read them.
        let directory = try Self.reports(Self.passing)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await runTool("/usr/bin/python3", [Self.script, directory, "517"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("513 of the 517 cases the client ran are not in the server's index"), "\(run.output)")
    }

    @Test func noIndexAtAllFailsTheRun() async throws {
        let directory = try Self.reports(Self.passing)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.removeItem(atPath: directory + "/index.json")
        let run = try await runTool("/usr/bin/python3", [Self.script, directory, "4"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("judged 0 of 4 cases"), "\(run.output)")
    }

    @Test func aFailedCaseOrAnUncleanCloseFailsTheRunAndIsNamed() async throws {
        let directory = try Self.reports(Self.passing + [("6.4.1", "FAILED", "OK"), ("7.3.1", "OK", "UNCLEAN")])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await runTool("/usr/bin/python3", [Self.script, directory, "6"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("not passed: 6.4.1 FAILED OK"), "\(run.output)")
        #expect(run.output.contains("not passed: 7.3.1 OK UNCLEAN"), "\(run.output)")
    }
}
