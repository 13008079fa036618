import FerryTestServer
import Foundation
import Testing

/// Answers over HTTP/3 that break RFC 9114's rules (`h3_peer.py`'s `/hostile/NAME`, written frame by
/// frame): each fails with what the server did, and nothing is saved; the well-formed ones (trailers,
/// a 103 before the answer) succeed byte for byte. The exchange's rules are the same state machine's
/// as over HTTP/1.1 and HTTP/2 (`ExchangeStateMachine`).
@Suite struct HTTP3HostileServerTests {
    /// `ferry get --http3-only` of `/hostile/NAME` from one aioquic peer: exit status, stderr, and the
    /// file when one was saved.
    static func fetch(_ names: [String]) async throws -> [String: (status: Int32, stderr: String, file: Data?)] {
        var results: [String: (status: Int32, stderr: String, file: Data?)] = [:]
        try await HTTP3CommandTests.withH3Peer { peer, directory in
            let cli = CLIRunner(directory: directory)
            for name in names {
                let run = try await cli.run([
                    "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/hostile/\(name)", "-o", name,
                ])
                results[name] = (run.status, run.stderr, FileManager.default.contents(atPath: directory + "/" + name))
            }
        }
        return results
    }

    static let kibibyte = Data((0..<1024).map { UInt8($0 % 256) })

    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func answersThatBreakTheRulesFailWithWhatTheServerDid() async throws {
        let expected: KeyValuePairs<String, String> = [
            "short": "after 1024 of the 2048 bytes its Content-Length promised",
            "long": "more than the 1000 bytes its Content-Length promised",
            "two-status": "a response head with a second :status",
            "upper": "the field name X-Upper in upper case",
            "connection": "the connection-specific field connection",
            "data-first": "content before the response's header fields",
            "after-trailers": "a frame after the response's trailers",
            "settings": "a SETTINGS frame on a request stream",
            "push-promise": "a PUSH_PROMISE, though this side allowed no push",
            "status-101": "answered 101 over HTTP/3",
            "mid-frame": "ended the HTTP/3 stream in the middle of a frame",
        ]
        let results = try await Self.fetch(expected.map(\.key))
        for (name, words) in expected {
            let result = try #require(results[name])
            #expect(result.status != 0, "\(name): exit \(result.status)")
            #expect(result.stderr.contains(words), "\(name): \(result.stderr)")
            #expect(result.file == nil, "\(name): a file was saved")
        }
    }

    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func trailersAndAnEarlyHintAreWellFormed() async throws {
        let results = try await Self.fetch(["trailers", "early-hints"])
        for name in ["trailers", "early-hints"] {
            let result = try #require(results[name])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(result.file == Self.kibibyte, "\(name)")
        }
    }

    /// A server that lost the connection (restarted) says so with a stateless reset (RFC 9000 §10.3):
    /// the client ends at once, in those words, and keeps the part for -C, instead of waiting out the
    /// 30 s idle timeout.
    @Test(.enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aStatelessResetEndsTheConnectionInWords() async throws {
        try await HTTP3CommandTests.withH3Peer { peer, directory in
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/reset/100000", "-o", "r",
            ])
            #expect(run.status != 0)
            #expect(run.stderr.contains("a stateless reset: it no longer has the connection"), "\(run.stderr)")
            #expect(run.stderr.contains("-C"), "\(run.stderr)")
        }
    }
}
