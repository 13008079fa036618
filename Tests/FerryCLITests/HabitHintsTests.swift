import FerryTestServer
import Foundation
import Testing

/// Other tools' habits that mean something else in ferry (docs/CLI.md, "Coming from curl, wget or
/// aria2"): the built binary's error names the ferry equivalent, and curl's URL-first order works.
@Suite struct HabitHintsTests {
    @Test func wgetsDashIWithAFileOfURLsNamesInputFile() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "http://127.0.0.1:1/a\n".write(toFile: directory + "/list.txt", atomically: true, encoding: .utf8)
        let run = try await CLIRunner(directory: directory).run(["get", "-i", "list.txt"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("-i is curl's --include here"), "\(run.stderr)")
        #expect(run.stderr.contains("use --input-file list.txt"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["list.txt"])
    }

    @Test func wgetsDashCNamesDashCapitalCAndWritesNoCookieJar() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLIRunner(directory: directory).run(["get", "-c", "http://127.0.0.1:1/file.bin"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("-c is the cookie jar file (curl's)"), "\(run.stderr)")
        #expect(run.stderr.contains("use -C: ferry get -C URL"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func theURLFirstAsCurlTakesItIsAGet() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run([server.url("/bytes/5000"), "-o", "out.bin", "-s"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try fileSHA256(directory + "/out.bin") == bytesSHA256(5000))
        }
    }

    @Test func optionsBeforeTheURLWithoutACommandSayToNameGet() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLIRunner(directory: directory).run(["-o", "out.bin", "http://127.0.0.1:1/file.bin"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("name the command first: ferry get URL [options]"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
