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

    /// A response that is not HTTP/1.1 says what is wrong with it, not the parser's "invalid constant
    /// string" or "unknown (http_parser error)".
    @Test func aResponseThatIsNotHTTPSaysWhatIsWrong() async throws {
        let peer = try await PythonPeer.start("hostile_peer.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cli = CLIRunner(directory: directory)
        for (path, words) in [
            ("bad-status", "its status code is not a number of three digits"),
            ("bad-length", "its Content-Length is not a valid length"),
            ("bad-chunk", "a chunk's size in its chunked body is not valid"),
        ] {
            let run = try await cli.run(["get", "-q", "http://127.0.0.1:\(peer.ports[0])/raw/\(path)", "-o", path])
            #expect(run.status == 1, "\(path): \(run.stderr)")
            #expect(run.stderr.contains("the server's response is not valid HTTP/1.1: \(words)"), "\(path): \(run.stderr)")
            #expect(!run.stderr.contains("http_parser") && !run.stderr.contains("invalid constant"), "\(run.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    /// An HTTP/2 GOAWAY below the request is said in words, not as a Swift value's dump.
    @Test(.enabled(if: SafeByDefaultTests.h2Available, "Python's h2 (hpack) is not installed (.ci/run installs it from PyPI)"))
    func aGoAwayIsSaidInWords() async throws {
        let peer = try await PythonPeer.start("hostile_h2_peer.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let run = try await CLIRunner(directory: directory).run([
            "get", "-q", "--cacert", "ca.pem", "https://127.0.0.1:\(peer.ports[0])/goaway", "-o", "g",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(
            run.stderr.contains("the server refused the request without processing it: it is closing the connection (GOAWAY, NO_ERROR)"),
            "\(run.stderr)"
        )
        #expect(!run.stderr.contains("refused(\""), "\(run.stderr)")
    }

    /// An untrusted certificate names the CLI's option, not the library's "session's TLS settings".
    @Test func anUntrustedCertificateNamesCacert() async throws {
        let peer = try await PythonPeer.start("hostile_h2_peer.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLIRunner(directory: directory).run(["get", "-q", "https://127.0.0.1:\(peer.ports[0])/good", "-o", "g"])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("trust its CA with --cacert FILE"), "\(run.stderr)")
        #expect(!run.stderr.contains("session"), "\(run.stderr)")
    }
}
