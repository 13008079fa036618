import FerryCore
import Foundation
import Testing

/// `ferry --version` answers without parsing the command tree (issue 40), with what ArgumentParser
/// answers when the flag comes with others.
@Suite struct VersionTests {
    @Test func theVersionAloneIsOneLineAndTheSameAsTheParsersAnswer() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cli = CLIRunner(directory: directory)
        let alone = try await cli.run(["--version"])
        #expect(alone.status == 0, "\(alone.stderr)")
        #expect(alone.stdout == FerryVersion.current + "\n")
        #expect(alone.stderr.isEmpty)
        // Through ArgumentParser (the subcommand's own --version is the root's flag): the same answer.
        let parsed = try await cli.run(["daemon", "--version"])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        #expect(parsed.stdout == alone.stdout)
    }
}
