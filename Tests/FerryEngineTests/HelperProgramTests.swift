import FerryCore
import FerryEngine
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct HelperProgramTests {
    @Test func outputIsWhatAProgramPrintsWhenItSucceeds() async {
        #expect(await HelperProgram.output(of: "/bin/sh", ["-c", "printf 'a b\\n'"], timeout: 10) == "a b\n")
        #expect(await HelperProgram.output(of: "/bin/sh", ["-c", "echo out; exit 3"], timeout: 10) == nil)
        #expect(await HelperProgram.output(of: "/nonexistent/program", [], timeout: 10) == nil)
    }

    /// Past its time it is killed: one that sleeps with its output open, and one that closed its output
    /// first (its reader sees the end at once, and the wait for its exit must still end).
    @Test(arguments: ["exec sleep 60", "exec >&-; exec sleep 60"])
    func aProgramPastItsTimeIsKilled(script: String) async throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-helper-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let start = ContinuousClock.now
        // It writes its pid, then sleeps far past the timeout.
        #expect(await HelperProgram.output(of: "/bin/sh", ["-c", "echo $$ > '\(marker)'; \(script)"], timeout: 0.5) == nil)
        // Well before the sleep's 60 s (loose: a loaded machine answers late, but not a minute late).
        #expect(ContinuousClock.now - start < .seconds(45))
        let pid = try #require(Int32(String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Gone, not left running (kill with signal 0 asks whether it exists).
        var gone = false
        for _ in 0..<100 where !gone {
            gone = kill(pid, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone, "process \(pid) still runs")
    }

    @Test func statusIsTheExitStatusOfAProgramFoundInPath() async throws {
        #expect(try await HelperProgram.status(ofProgramNamed: "true", []) == 0)
        #expect(try await HelperProgram.status(ofProgramNamed: "sh", ["-c", "exit 7"]) == 7)
        await #expect(throws: FerryError.self) { try await HelperProgram.status(ofProgramNamed: "no-such-program-ferry", []) }
    }
}
