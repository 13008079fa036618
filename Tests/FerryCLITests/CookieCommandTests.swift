import Crypto
import FerryCore
import FerryTestServer
import Foundation
import Testing

/// `-b` and `-c`, and cookie files that the real curl reads and writes (.ci/run installs curl).
@Suite struct CookieCommandTests {
    static let curl: String? = ["/usr/bin/curl", "/usr/local/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The cookies `/cookies` echoed into `file`.
    func echoed(_ file: String) throws -> [String: String] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any]
        return json?["cookies"] as? [String: String] ?? [:]
    }

    /// curl's stdout for `arguments` (with -s). Through ChildProcess (posix_spawn), not Foundation's
    /// Process: a full suite crashed in Process.run's copy of the environment while other tests ran.
    func runCurl(_ arguments: [String]) async throws -> String {
        let process = try ChildProcess.spawn(try #require(Self.curl), arguments: ["-s"] + arguments)
        let run = try await CLIRunner(directory: FileManager.default.temporaryDirectory.path).finish(
            process,
            process.standardOutput!,
            process.standardError!
        )
        return run.stdout
    }

    @Test func dataAndTheLoginRedirect() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let literal = try await cli.run(["get", "-b", "x=9; y=8", server.url("/cookies"), "-o", "a.json"])
            #expect(literal.status == 0, "\(literal.stderr)")
            #expect(try echoed(directory + "/a.json") == ["x": "9", "y": "8"])
            // -b "" turns cookies on: the one set on the redirect goes to the page behind it.
            let login = server.url("/redirect/1?to=/cookies&set_cookie=session%3Dabc%3B%20Path%3D%2F")
            let run = try await cli.run(["get", "-b", "", login, "-o", "b.json", "-c", "jar.txt"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try echoed(directory + "/b.json") == ["session": "abc"])
            let jar = try String(contentsOfFile: directory + "/jar.txt", encoding: .utf8)
            #expect(jar.hasPrefix(NetscapeCookieFile.header))
            #expect(jar.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc"))
            let missing = try await cli.run(["get", "-b", "no-such-file", server.url("/cookies"), "-o", "c.json"])
            #expect(missing.status == 4)
            #expect(missing.stderr.contains("cannot read the cookie file no-such-file"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func curlAndFerryReadEachOthersJars() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // curl writes, ferry reads.
            _ = try await runCurl(["-c", directory + "/curl.jar", server.url("/cookies/set?a=1&b=2")])
            let read = try await cli.run(["get", "-b", "curl.jar", server.url("/cookies"), "-o", "from-curl.json"])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(try echoed(directory + "/from-curl.json") == ["a": "1", "b": "2"])
            // ferry writes, curl reads.
            let wrote = try await cli.run(["get", "-c", "ferry.jar", server.url("/cookies/set?c=3"), "-o", "set.json"])
            #expect(wrote.status == 0, "\(wrote.stderr)")
            let echoed = try await runCurl(["-b", directory + "/ferry.jar", server.url("/cookies")])
            let cookies = (try JSONSerialization.jsonObject(with: Data(echoed.utf8)) as? [String: Any])?["cookies"] as? [String: String]
            #expect(cookies == ["c": "3"], "curl sent \(echoed)")
        }
    }

    @Test func userAndNetrcAnswerTheServer() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let url = server.url("/basic-auth/alice/pw")
            let refused = try await cli.run(["get", url, "-o", "no.txt"])
            #expect(refused.status != 0)
            let user = try await cli.run(["get", "-u", "alice:pw", url, "-o", "u.txt"])
            #expect(user.status == 0, "\(user.stderr)")
            try "machine 127.0.0.1 login alice password pw\n".write(toFile: directory + "/netrc", atomically: true, encoding: .utf8)
            let netrc = try await cli.run(["get", "--netrc-file", "netrc", url, "-o", "n.txt"])
            #expect(netrc.status == 0, "\(netrc.stderr)")
            let prompt = try await cli.run(["get", "-u", "alice", url, "-o", "p.txt"])
            #expect(prompt.status == 2)
            #expect(prompt.stderr.contains("does not prompt"))
        }
    }

    @Test func dumpHeaderWritesEveryResponseHead() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run([
                "get", "-D", "heads.txt", server.url("/redirect/1?to=/bytes/10"), "-o", "body.bin",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let heads = try String(contentsOfFile: directory + "/heads.txt", encoding: .utf8)
            #expect(heads.hasPrefix("HTTP/1.1 302 Found\r\n"))
            #expect(heads.contains("\r\n\r\nHTTP/1.1 200 OK\r\n"), "the redirect's head, then the file's")
            #expect(heads.lowercased().contains("content-length: 10\r\n"))
            #expect(heads.hasSuffix("\r\n\r\n"))
            let toStdout = try await CLIRunner(directory: directory).run(["get", "-D", "-", server.url("/bytes/10"), "-o", "b2.bin", "-q"])
            #expect(toStdout.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"))
        }
    }

    @Test func includePutsTheHeadsBeforeTheBody() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let run = try await cli.run(["get", "-i", server.url("/redirect/1?to=/bytes/5000%3Fseed%3D3"), "-o", "out.bin", "-q"])
            #expect(run.status == 0, "\(run.stderr)")
            let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin"))
            let text = String(decoding: data, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 302 Found\r\n"))
            let end = try #require(data.range(of: Data("\r\n\r\nHTTP/1.1 200 OK\r\n".utf8)))
            let bodyStart = try #require(data.range(of: Data("\r\n\r\n".utf8), in: end.upperBound..<data.endIndex)).upperBound
            #expect(SHA256.hash(data: data[bodyStart...]).map { String(format: "%02x", $0) }.joined() == bytesSHA256(5000, seed: 3))
            #expect(!FileManager.default.fileExists(atPath: directory + "/out.bin.ferry-include"))

            let resumed = try await cli.run(["get", "-i", "-C", server.url("/bytes/10"), "-o", "x.bin"])
            #expect(resumed.status == 2 && resumed.stderr.contains("-i cannot be continued with -C"))
            let background = try await cli.run(["get", "-i", "--background", server.url("/bytes/10"), "-o", "y.bin"])
            #expect(background.status == 2 && background.stderr.contains("-i is for foreground downloads"))
        }
    }

    @Test func compressedSavesTheDecodedBody() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let url = server.url("/bytes/300000?seed=4&gzip=1")
            let decoded = try await cli.run(["get", "--compressed", url, "-o", "plain.bin"])
            #expect(decoded.status == 0, "\(decoded.stderr)")
            #expect(try fileSHA256(directory + "/plain.bin") == bytesSHA256(300_000, seed: 4))
            // Without it the bytes are kept as sent, as curl does.
            let raw = try await cli.run(["get", url, "-o", "raw.gz"])
            #expect(raw.status == 0, "\(raw.stderr)")
            let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: directory + "/raw.gz")).read(upToCount: 2)
            #expect(head == Data([0x1F, 0x8B]), "a gzip member")
            let both = try await cli.run(["get", "--compressed", "-C", url, "-o", "x.bin"])
            #expect(both.status == 2)
        }
    }

    @Test func backgroundDownloadsKeepCookiesAndWriteTheJar() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, directory in
                // -b FILE's cookies go out; the login's cookie reaches the page behind the redirect; -c's
                // jar is written by ferryd when the task ends.
                try (NetscapeCookieFile.header + "\n127.0.0.1\tFALSE\t/\tFALSE\t0\tfromfile\tyes\n")
                    .write(toFile: directory + "/in.txt", atomically: true, encoding: .utf8)
                let login = server.url("/redirect/1?to=/cookies&set_cookie=session%3Dabc%3B%20Path%3D%2F")
                let submit = try await cli.run(["get", "--background", "-b", "in.txt", "-c", "jar.txt", login, "-o", "page.json"])
                #expect(submit.status == 0, "\(submit.stderr)")
                let wait = try await cli.run(["wait", submit.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(try echoed(directory + "/page.json") == ["session": "abc", "fromfile": "yes"])
                let jar = try String(contentsOfFile: directory + "/jar.txt", encoding: .utf8)
                #expect(jar.contains("\tsession\tabc"))
                #expect(jar.contains("\tfromfile\tyes"))

                // Each command has cookies of its own: a later one without -b sends none.
                let later = try await cli.run(["get", "--background", "-b", "", server.url("/cookies"), "-o", "later.json"])
                _ = try await cli.run(["wait", later.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(try echoed(directory + "/later.json") == [:])

                let missing = try await cli.run(["get", "--background", "-b", "no-such-file", login, "-o", "x.json"])
                #expect(missing.status == 4)
                #expect(missing.stderr.contains("cannot read the cookie file no-such-file"))
            }
        }
    }
}
