import FerryTestServer
import Foundation
import Testing

/// A failure says why in the command line's words (issue 41).
@Suite struct FailureWordsTests {
    /// A redirect to a scheme ferry does not fetch is the final answer: the failure says which and why,
    /// and nothing is saved (or written to stdout).
    @Test(arguments: ["file:///etc/passwd", "ftp://example.com/x", "data:,hello"])
    func aRedirectToAnotherSchemeSaysWhyItWasNotFollowed(location: String) async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let target = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location
            let url = server.url("/redirect/1?to=\(target)")
            let scheme = String(location.prefix { $0 != ":" })
            let cli = CLIRunner(directory: directory)
            let saved = try await cli.run(["get", "-q", url, "-o", "f"])
            #expect(saved.status == 1, "\(saved.stderr)")
            #expect(
                saved.stderr.contains("answered 302, a redirect to \(location), which ferry does not follow (\(scheme): is not fetched, only http and https); nothing was saved"),
                "\(saved.stderr)"
            )
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            let written = try await cli.run(["get", "-q", url, "-o", "-"])
            #expect(written.status == 1, "\(written.stderr)")
            #expect(written.stdout.isEmpty)
            #expect(written.stderr.contains("a redirect to \(location), which ferry does not follow"), "\(written.stderr)")
        }
    }

    /// A redirect with no Location says so.
    @Test func aRedirectWithoutALocationSaysSo() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run(["get", "-q", server.url("/status/302"), "-o", "f"])
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stderr.contains("answered 302, a redirect without a Location to follow; nothing was saved"), "\(run.stderr)")
        }
    }
}
