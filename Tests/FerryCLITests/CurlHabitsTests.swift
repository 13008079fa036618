import FerryCLI
import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// curl's habits in `ferry get` (-o -, -s, -L, -f, -e, --max-redirs, --max-time, --json with failures),
/// and wget's and aria2's where ferry keeps them, each run as the built binary and, where the other tool
/// has the flag, side by side with the real tool on the same server.
@Suite struct CurlHabitsTests {
    static let curl: String? = ["/usr/bin/curl", "/usr/local/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let wget: String? = ["/usr/bin/wget", "/usr/local/bin/wget"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let aria2c: String? = ["/usr/bin/aria2c", "/usr/local/bin/aria2c"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs a shell command line in `directory` (`$FERRY` is the built ferry, `$CURL` curl, `$WGET` wget,
    /// `$ARIA2C` aria2c).
    private func shell(_ line: String, in directory: String) async throws -> CLIRunner.Run {
        let runner = CLIRunner(directory: directory)
        var environment = CLIRunner.isolated(directory)
        environment["FERRY"] = CLIRunner.binary
        environment["CURL"] = Self.curl ?? "curl"
        environment["WGET"] = Self.wget ?? "wget"
        environment["ARIA2C"] = Self.aria2c ?? "aria2c"
        let process = try ChildProcess.spawn("/bin/sh", arguments: ["-c", line], environment: environment, directory: directory)
        return try await runner.finish(process, process.standardOutput!, process.standardError!)
    }

    private func echoedHeaders(_ path: String) throws -> [String: String] {
        let echo = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        let fields = ((echo as? [String: Any])?["headers"] as? [[String]]) ?? []
        return Dictionary(fields.map { ($0[0].lowercased(), $0[1]) }, uniquingKeysWith: { first, _ in first })
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func dashOWritesTheBodyToStdoutAsCurlDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/bytes/300000?seed=4")
            // Into a file by redirection, and through a pipe: the same bytes as curl's.
            let run = try await shell(
                "\"$FERRY\" get '\(url)' -o - > ferry.bin && \"$FERRY\" get '\(url)' -o - | cat > piped.bin && \"$CURL\" -s '\(url)' > curl.bin",
                in: directory
            )
            #expect(run.status == 0, "\(run.stderr)")
            let curl = try Data(contentsOf: URL(fileURLWithPath: directory + "/curl.bin"))
            #expect(curl.count == 300_000)
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/ferry.bin")) == curl)
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/piped.bin")) == curl)
            // Nothing else was written: no part file, no file named "-".
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["curl.bin", "ferry.bin", "piped.bin"])

            // An error status writes nothing to stdout and fails.
            let missing = try await CLIRunner(directory: directory).run(["get", server.url("/status/404"), "-o", "-"])
            #expect(missing.status == 1)
            #expect(missing.stdout.isEmpty)
            #expect(missing.stderr.contains("answered 404"))
            // What cannot go with a stream is refused before anything is sent.
            let refused = try await CLIRunner(directory: directory).run(["get", url, "-o", "-", "-C"])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("cannot be continued"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func silentLocationFailAndRefererAreAcceptedAsCurlTakesThem() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/redirect/2?to=/echo")
            let run = try await shell(
                "\"$FERRY\" get -sLf -e https://from.example/page '\(url)' -o ferry.json && \"$CURL\" -sLf -e https://from.example/page '\(url)' -o curl.json",
                in: directory
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty, "-s prints nothing: \(run.stderr)")
            let ferry = try echoedHeaders(directory + "/ferry.json")
            let curl = try echoedHeaders(directory + "/curl.json")
            #expect(ferry["referer"] == "https://from.example/page")
            #expect(ferry["referer"] == curl["referer"])
            // -f: an error status fails, as curl's does.
            let failed = try await shell("\"$FERRY\" get -sf '\(server.url("/status/500"))' -o x; echo \"ferry $?\"; \"$CURL\" -sf '\(server.url("/status/500"))' -o y; echo \"curl $?\"", in: directory)
            #expect(failed.stdout == "ferry 1\ncurl 22\n")
            // A Referer with a line break is refused.
            for referer in ["a\nb", "a\r\nX-Injected: 1"] {
                let bad = try await CLIRunner(directory: directory).run(["get", "-e", referer, url, "-o", "z"])
                #expect(bad.status == 2)
                #expect(bad.stderr.contains("-e/--referer cannot hold a line break"), "\(bad.stderr)")
            }
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func maxRedirsLimitsRedirectsAsCurlsDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/redirect/3?to=/bytes/100")
            let statuses = try await shell(
                """
                "$FERRY" get -q --max-redirs 2 '\(url)' -o a; echo "ferry $?"; "$CURL" -sL --max-redirs 2 '\(url)' -o b; echo "curl $?"
                "$FERRY" get -q --max-redirs 3 '\(url)' -o c; echo "ferry $?"; "$CURL" -sL --max-redirs 3 '\(url)' -o d; echo "curl $?"
                """,
                in: directory
            )
            // Two redirects allowed, three needed: both fail (curl's 47 is "too many redirects"); three: both save.
            #expect(statuses.stdout == "ferry 1\ncurl 47\nferry 0\ncurl 0\n", "\(statuses.stderr)")
            #expect(statuses.stderr.contains("redirect"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/c")) == Data(contentsOf: URL(fileURLWithPath: directory + "/d")))
            #expect(!FileManager.default.fileExists(atPath: directory + "/a"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func filenameEffectiveIsTheNameAsGivenAsCurlsIs() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory + "/f", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory + "/c", withIntermediateDirectories: true)
            let url = server.url("/bytes/10")
            // -o NAME, -O, and -O within a directory (ferry's --dir, curl's --output-dir).
            let run = try await shell(
                """
                "$FERRY" get -s -o out.bin -w '%{filename_effective}\\n' '\(url)'; "$CURL" -s -o out2.bin -w '%{filename_effective}\\n' '\(url)'
                cd f && "$FERRY" get -s -O -w '%{filename_effective}\\n' '\(url)'; cd ../c && "$CURL" -s -O -w '%{filename_effective}\\n' '\(url)'; cd ..
                "$FERRY" get -s --dir f -o g -w '%{filename_effective}\\n' '\(url)'; "$CURL" -s --output-dir c -o g -w '%{filename_effective}\\n' '\(url)'
                """,
                in: directory
            )
            #expect(run.stdout == "out.bin\nout2.bin\n10\n10\nf/g\nc/g\n", "\(run.stdout)\(run.stderr)")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func verboseWritesTheStatusLineAsCurlDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/bytes/100")
            let ferry = try await shell("\"$FERRY\" get -q -v '\(url)' -o f", in: directory)
            let curl = try await shell("\"$CURL\" -s -v '\(url)' -o c", in: directory)
            func statusLine(_ text: String) -> String? {
                text.split(whereSeparator: \.isNewline).first { $0.hasPrefix("< HTTP/") }.map { $0.trimmingCharacters(in: .whitespaces) }
            }
            // `< HTTP/1.1 200 OK`, with the reason phrase (issue 41: ferry's had none).
            #expect(statusLine(ferry.stderr) == "< HTTP/1.1 200 OK", "\(ferry.stderr)")
            #expect(statusLine(ferry.stderr) == statusLine(curl.stderr), "ferry: \(ferry.stderr)\ncurl: \(curl.stderr)")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func maxTimeEndsASlowTransferAsCurlsDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // 5 MB at 500 KB/s would take 10 s; one second is allowed.
            let url = server.url("/bytes/5000000?throttle=500000")
            let run = try await shell(
                "\"$FERRY\" get -q --max-time 1 '\(url)' -o slow.bin; echo \"ferry $?\"; \"$CURL\" -s --max-time 1 '\(url)' -o curl.bin; echo \"curl $?\"",
                in: directory
            )
            #expect(run.stdout == "ferry 1\ncurl 28\n", "\(run.stderr)")
            // The limit is named as the user gave it (issue 41), not in the library's words.
            #expect(run.stderr.contains("took longer than --max-time 1 (seconds) allows"), "\(run.stderr)")
            #expect(!run.stderr.contains("resource timeout"), "\(run.stderr)")
            // What came is kept for -C, and it is a part: the transfer was cut, not finished late (a
            // count of bytes rather than a wall-clock bound, which a loaded machine breaks).
            let kept = try FileManager.default.attributesOfItem(atPath: directory + "/slow.bin.ferry-part")[.size] as? Int
            #expect((kept ?? 0) < 5_000_000, "ferry kept \(kept ?? -1) bytes of 5000000")
            let curlGot = (try? FileManager.default.attributesOfItem(atPath: directory + "/curl.bin")[.size] as? Int) ?? 0
            #expect(curlGot < 5_000_000, "curl saved \(curlGot) bytes of 5000000")
            let zero = try await CLIRunner(directory: directory).run(["get", "--max-time", "0", url, "-o", "z"])
            #expect(zero.status == 2)
        }
    }

    @Test func jsonReportsEveryURLWithItsFailure() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let closed = try LocalPorts.free()
            let run = try await CLIRunner(directory: directory).run([
                "get", "--json", server.url("/bytes/1000"), server.url("/status/404"), "http://127.0.0.1:\(closed)/x",
            ])
            #expect(run.status == 1)
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
            #expect(entries.count == 3)
            #expect(entries[0]["bytes"] as? Int == 1000 && entries[0]["error"] == nil)
            let notFound = entries[1]["error"] as? [String: Any]
            #expect(entries[1]["url"] as? String == server.url("/status/404"))
            #expect(notFound?["kind"] as? String == "httpError")
            #expect(notFound?["httpStatus"] as? Int == 404)
            #expect(notFound?["exitStatus"] as? Int == 1)
            let refused = entries[2]["error"] as? [String: Any]
            #expect(refused?["kind"] as? String == "cannotConnectToHost")
            #expect((refused?["message"] as? String)?.isEmpty == false)

            // A lone failure is a one-entry array, not [].
            let lone = try await CLIRunner(directory: directory).run(["get", "--json", server.url("/status/404"), "-o", "x"])
            let one = try #require(try JSONSerialization.jsonObject(with: Data(lone.stdout.utf8)) as? [[String: Any]])
            #expect(one.count == 1 && (one[0]["error"] as? [String: Any])?["httpStatus"] as? Int == 404)
        }
    }

    @Test func anUnknownOptionIsNamedNotTakenForAURL() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLIRunner(directory: directory).run(["get", "-Y", "ua", "http://127.0.0.1:9/x", "-o", "x"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("Unknown option '-Y'"), "\(run.stderr)")
    }

    @Test func statusesUnitsAndWordsAreConsistent() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(environment: ["FERRY_HOME": directory + "/home"], directory: directory)
            // A port out of range is a usage error, found before anything is sent.
            let port = try await cli.run(["get", "http://127.0.0.1:99999/x"])
            #expect(port.status == 2)
            #expect(port.stderr.contains("99999"))
            // A background download into a missing directory is a local file problem (4), said without
            // asking (or starting) ferryd.
            let missing = try await cli.run(["get", "--background", server.url("/bytes/10"), "-o", "no/such/dir/x"])
            #expect(missing.status == 4, "\(missing.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/home/ferryd.lock"))
            // An error status draws no progress for its error page.
            let notFound = try await cli.run(["get", server.url("/status/404"), "-o", "x"])
            #expect(notFound.status == 1)
            #expect(notFound.errorLines.count == 1, "\(notFound.stderr)")
            // Sizes in IEC units, as --limit-rate reads them.
            let saved = try await cli.run(["get", server.url("/bytes/3145728"), "-o", "three"])
            #expect(saved.stderr.contains("(3.0 MiB, "), "\(saved.stderr)")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func putDashSendsStdinChunkedAsCurlsDashT() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try Data(DeterministicBytes(seed: 8).bytes(offset: 0, count: 200_000)).write(to: URL(fileURLWithPath: directory + "/in.bin"))
            let url = server.url("/echo")
            let run = try await shell(
                """
                cat in.bin | "$FERRY" put -q - '\(url)' > ferry-pipe.json && "$FERRY" put -q - '\(url)' < in.bin > ferry-file.json \
                  && cat in.bin | "$CURL" -s -T - '\(url)' > curl-pipe.json
                """,
                in: directory
            )
            #expect(run.status == 0, "\(run.stderr)")
            func echo(_ name: String) throws -> [String: Any] {
                try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) as? [String: Any])
            }
            func header(_ echo: [String: Any], _ name: String) -> String? {
                ((echo["headers"] as? [[String]]) ?? []).first { $0[0].lowercased() == name }?[1]
            }
            let (pipe, file, curl) = (try echo("ferry-pipe.json"), try echo("ferry-file.json"), try echo("curl-pipe.json"))
            #expect(pipe["bodyLength"] as? Int == 200_000)
            #expect(pipe["bodySHA256"] as? String == curl["bodySHA256"] as? String)
            #expect(file["bodySHA256"] as? String == curl["bodySHA256"] as? String)
            #expect(pipe["method"] as? String == "PUT" && curl["method"] as? String == "PUT")
            // From a pipe the length is unknown: chunked, as curl's -T -; from a file it is known.
            #expect(header(pipe, "transfer-encoding") == "chunked" && header(curl, "transfer-encoding") == "chunked")
            #expect(header(file, "content-length") == "200000")
            // What needs a file it can read again is refused with stdin.
            let refused = try await CLIRunner(directory: directory).run(["put", "--resumable", "-", url])
            #expect(refused.status == 2)
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func writeOutPrintsCurlsVariablesAsCurlDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let format = "%{http_code} %{response_code} %{http_version} %{num_redirects} %{size_download} %{url_effective} %{remote_ip} %{remote_port}\\n"
            for url in [server.url("/redirect/2?to=/bytes/5000"), server.url("/bytes/7000", on: .tls)] {
                let run = try await shell(
                    """
                    "$FERRY" get -q --cacert ca.pem -w '\(format)' '\(url)' -o f; "$CURL" -sL --cacert ca.pem -w '\(format)' '\(url)' -o c
                    """,
                    in: directory
                )
                #expect(run.status == 0, "\(run.stderr)")
                let lines = run.stdout.split(separator: "\n")
                #expect(lines.count == 2 && lines[0] == lines[1], "ferry and curl differ: \(run.stdout)")
            }
            // The times run from the start, in the order of the phases; %{json} holds them all.
            let timed = try await CLIRunner(directory: directory).run([
                "get", "-q", "--cacert", "ca.pem", "-w",
                "%{time_namelookup} %{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}\\n%{json}",
                server.url("/bytes/7000", on: .tls), "-o", "t",
            ])
            #expect(timed.status == 0, "\(timed.stderr)")
            let parts = timed.stdout.split(separator: "\n", maxSplits: 1)
            let times = parts[0].split(separator: " ").compactMap { Double($0) }
            #expect(times.count == 5 && times == times.sorted() && times[2] > 0, "\(parts[0])")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: Any])
            #expect(json["http_version"] as? String == "2")
            #expect(json["size_download"] as? Int == 7000)
            // A variable ferry does not know is a usage error, before anything is sent.
            let unknown = try await CLIRunner(directory: directory).run(["get", "-w", "%{nonsense}", server.url("/bytes/1"), "-o", "u"])
            #expect(unknown.status == 2)
            #expect(unknown.stderr.contains("unknown variable 'nonsense'"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func writeOutIsPrintedForAFailedTransferAsCurlDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // The exit statuses differ by design (ferry's are documented in docs/CLI.md): not compared.
            let format = "%{http_code} %{http_version} %{num_redirects} %{size_download} %{url_effective}\\n"
            let refused = try LocalPorts.free()
            for url in [
                server.url("/status/404"), server.url("/redirect/2?to=/status/500"), "http://127.0.0.1:\(refused)/x",
                server.url("/bytes/100000?close_after=1000"),
            ] {
                let run = try await shell(
                    """
                    "$FERRY" get -s -w '\(format)' '\(url)' -o f; "$CURL" -sfL -w '\(format)' '\(url)' -o c
                    """,
                    in: directory
                )
                let lines = run.stdout.split(separator: "\n")
                #expect(lines.count == 2 && lines[0] == lines[1], "ferry and curl differ for \(url): \(run.stdout)")
            }
            // %{exitcode} and %{errormsg} say how it ended; %{json} holds them too.
            let failed = try await CLIRunner(directory: directory).run([
                "get", "-s", "-w", "%{exitcode} %{errormsg}\\n%{json}", server.url("/status/404"), "-o", "g",
            ])
            #expect(failed.status == 1)
            let parts = failed.stdout.split(separator: "\n", maxSplits: 1)
            #expect(parts.first == "1 \(server.url("/status/404")): the server answered 404; nothing was saved", "\(failed.stdout)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: Any])
            #expect(json["exitcode"] as? Int == 1)
            #expect(json["http_code"] as? Int == 404)
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func headPrintsTheHeadsAsCurlDashIL() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/redirect/2?to=/bytes/100")
            let run = try await shell("\"$FERRY\" get -I '\(url)' > ferry.txt && \"$CURL\" -sIL '\(url)' > curl.txt", in: directory)
            #expect(run.status == 0, "\(run.stderr)")
            // The same heads, byte for byte, but for the Date fields (the clock may tick in between).
            func heads(_ name: String) throws -> [Substring] {
                try String(contentsOfFile: directory + "/" + name, encoding: .utf8).split(separator: "\r\n", omittingEmptySubsequences: false)
                    .filter { !$0.hasPrefix("Date:") }
            }
            let ferry = try heads("ferry.txt")
            #expect(ferry == (try heads("curl.txt")))
            #expect(ferry.filter { $0.hasPrefix("HTTP/1.1 ") }.count == 3)
            // Nothing was saved.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["curl.txt", "ferry.txt"])
            // An error status: the head is printed, and the status says it failed.
            let missing = try await CLIRunner(directory: directory).run(["get", "-I", server.url("/status/404")])
            #expect(missing.status == 1)
            #expect(missing.stdout.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func includeWritesTheHeadsBeforeTheBodyAsCurlDashIL() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/redirect/1?to=/bytes/5000%3Fseed%3D3")
            let run = try await shell("\"$FERRY\" get -q -i '\(url)' -o ferry.out && \"$CURL\" -sL -i '\(url)' -o curl.out", in: directory)
            #expect(run.status == 0, "\(run.stderr)")
            // The same file, byte for byte, but for the Date fields (the clock may tick in between): the
            // redirect's head, the answer's head, then the body.
            func file(_ name: String) throws -> Data {
                let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
                let text = String(decoding: data, as: UTF8.self)
                let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("Date:") }
                return Data(lines.joined(separator: "\r\n").utf8)
            }
            let ferry = try file("ferry.out")
            #expect(ferry == (try file("curl.out")))
            #expect(String(decoding: ferry.prefix(20), as: UTF8.self).hasPrefix("HTTP/1.1 302 Found"))
            // The body after the heads, exactly (the comparison above went through text).
            let raw = try Data(contentsOf: URL(fileURLWithPath: directory + "/ferry.out"))
            #expect(Array(raw.suffix(5000)) == DeterministicBytes(seed: 3).bytes(offset: 0, count: 5000))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func dataAndRequestSendTheBodyAsCurlsDo() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try "line one\r\nline two\n".write(toFile: directory + "/form.txt", atomically: true, encoding: .utf8)
            try Data(DeterministicBytes(seed: 2).bytes(offset: 0, count: 50_000)).write(to: URL(fileURLWithPath: directory + "/blob.bin"))
            let echo = server.url("/echo")
            let through307 = server.url("/redirect/1?code=307&to=/echo")
            let cases: [(String, String)] = [
                ("-d a=1 -d 'b=2 3' '\(echo)'", "joined with & and POSTed"),
                ("-d @form.txt '\(echo)'", "a file without its line breaks"),
                ("-X PUT --data-binary @blob.bin '\(through307)'", "a file as it is, again after a 307"),
            ]
            for (index, (arguments, what)) in cases.enumerated() {
                let run = try await shell(
                    "\"$FERRY\" get -q \(arguments) -o ferry\(index).json && \"$CURL\" -sL \(arguments) -o curl\(index).json",
                    in: directory
                )
                #expect(run.status == 0, "\(what): \(run.stderr)")
                func echoed(_ name: String) throws -> [String: Any] {
                    try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) as? [String: Any])
                }
                let (ferry, curl) = (try echoed("ferry\(index).json"), try echoed("curl\(index).json"))
                #expect(ferry["method"] as? String == curl["method"] as? String, "\(what)")
                #expect(ferry["bodyLength"] as? Int == curl["bodyLength"] as? Int, "\(what)")
                #expect(ferry["bodySHA256"] as? String == curl["bodySHA256"] as? String, "\(what)")
                func contentType(_ echo: [String: Any]) -> String? {
                    ((echo["headers"] as? [[String]]) ?? []).first { $0[0].lowercased() == "content-type" }?[1]
                }
                #expect(contentType(ferry) == contentType(curl), "\(what)")
            }
            // A body cannot be continued by range: -C is refused with it.
            let refused = try await CLIRunner(directory: directory).run(["get", "-d", "x=1", "-C", echo, "-o", "r"])
            #expect(refused.status == 2)
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func rangeSavesThePartCurlSaves() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/bytes/1000?seed=6")
            for (index, range) in ["100-199", "900-", "-300", "0-0,5-9"].enumerated() {
                let run = try await shell(
                    "\"$FERRY\" get -q -r '\(range)' '\(url)' -o f\(index) && \"$CURL\" -s -r '\(range)' '\(url)' -o c\(index)",
                    in: directory
                )
                #expect(run.status == 0, "\(range): \(run.stderr)")
                let ferry = try Data(contentsOf: URL(fileURLWithPath: directory + "/f\(index)"))
                #expect(!ferry.isEmpty)
                #expect(ferry == (try Data(contentsOf: URL(fileURLWithPath: directory + "/c\(index)"))), "\(range)")
            }
            // The part leaves no record that -C could take for the start of the whole file.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.hasSuffix(".ferry-resume") })
            let bad = try await CLIRunner(directory: directory).run(["get", "-r", "9-1", url, "-o", "b"])
            #expect(bad.status == 2)
        }
    }

    @Test func triesCountsEveryTryAsWgets() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // The first request of each key gets a 503: one try fails, two succeed.
            let once = try await cli.run(["get", "-q", "--tries", "1", server.url("/bytes/100?fail=1&key=a&retry_after=-1"), "-o", "a"])
            #expect(once.status == 1)
            let twice = try await cli.run(["get", "-q", "--tries", "2", server.url("/bytes/100?fail=1&key=b&retry_after=-1"), "-o", "b"])
            #expect(twice.status == 0, "\(twice.stderr)")
            #expect(server.counters.requests(path: "/bytes/100") == 3)
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func ipv4AndIPv6OnlyAsCurls() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // The test server listens on 127.0.0.1 only: over IPv4 localhost answers, over IPv6 it cannot.
            let url = "http://localhost:\(server.port)/bytes/10"
            let run = try await shell(
                """
                "$FERRY" get -q -4 '\(url)' -o f4; echo "ferry $?"; "$CURL" -s -4 '\(url)' -o c4; echo "curl $?"
                "$FERRY" get -q -6 '\(url)' -o f6; echo "ferry $?"; "$CURL" -s -6 '\(url)' -o c6; echo "curl $?"
                """,
                in: directory
            )
            let statuses = run.stdout.split(separator: "\n")
            #expect(statuses.count == 4)
            #expect(statuses.first == "ferry 0" && statuses.dropFirst().first == "curl 0", "\(run.stdout)\(run.stderr)")
            #expect(statuses.dropFirst(2).first == "ferry 1" && statuses.last != "curl 0", "\(run.stdout)\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/f6"))
            // An IPv4 literal is not IPv6, and -4 with -6 is a contradiction.
            let literal = try await CLIRunner(directory: directory).run(["get", "-6", server.url("/bytes/10"), "-o", "l"])
            #expect(literal.status == 1 && literal.stderr.contains("not an IPv6 address"))
            let both = try await CLIRunner(directory: directory).run(["get", "-4", "-6", url, "-o", "b"])
            #expect(both.status == 2)
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func formPartsCarryTheirTypesAndNamesAsCurlsDashF() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try "hello\n".write(toFile: directory + "/note.txt", atomically: true, encoding: .utf8)
            try "PNGDATA".write(toFile: directory + "/pic.png", atomically: true, encoding: .utf8)
            try "raw".write(toFile: directory + "/blob.bin", atomically: true, encoding: .utf8)
            let fields = [
                "a=1", "t=@note.txt", "p=@pic.png;type=image/x-custom;filename=renamed.png", "v=text;type=text/markdown",
                "b=@blob.bin",
            ]
            let ferryFields = fields.map { "--form '\($0)'" }.joined(separator: " ")
            let curlFields = fields.map { "-F '\($0)'" }.joined(separator: " ")
            let url = server.url("/multipart")
            let run = try await shell(
                "\"$FERRY\" put -q \(ferryFields) '\(url)' > ferry.json && \"$CURL\" -s \(curlFields) '\(url)' > curl.json",
                in: directory
            )
            #expect(run.status == 0, "\(run.stderr)")
            func parts(_ name: String) throws -> [[String: Any]] {
                let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
                return try #require((object as? [String: Any])?["parts"] as? [[String: Any]])
            }
            let (ferry, curl) = (try parts("ferry.json"), try parts("curl.json"))
            #expect(ferry.count == 5 && curl.count == 5)
            for (mine, theirs) in zip(ferry, curl) {
                for key in ["name", "filename", "contentType", "sha256"] {
                    #expect(mine[key] as? String == theirs[key] as? String, "\(key) of \(mine["name"] ?? "?")")
                }
            }
            // curl's guesses by extension: text/plain for .txt, octet-stream for what it does not know.
            #expect(ferry.map { $0["contentType"] as? String } == [nil, "text/plain", "image/x-custom", "text/markdown", "application/octet-stream"])
        }
    }

    @Test func parallelDownloadsRunAtOnceFromAnInputFile() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // Three bodies held by gates until all three requests are in: only downloads that run at once
            // get there (one by one, the first would wait for ever).
            let held = (1...3).map { server.url("/bytes/\(1000 * $0)?seed=\($0)&stall_after=0&gate=g\($0)") }
            try """
                # nightly set
                \(held[0])
                  out=first.bin
                \(held[1])

                \(held[2])
                \tout=third.bin
                """.write(toFile: directory + "/list.txt", atomically: true, encoding: .utf8)
            let cli = CLIRunner(directory: directory)
            let (process, out, err) = try cli.start(["get", "-Z", "--input-file", "list.txt", "--dir", "saved", "--json"])
            try FileManager.default.createDirectory(atPath: directory + "/saved", withIntermediateDirectories: true)
            let end = Date().addingTimeInterval(30)
            while (1...3).map({ server.counters.requests(path: "/bytes/\(1000 * $0)") }).contains(0), Date() < end {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(!(1...3).map({ server.counters.requests(path: "/bytes/\(1000 * $0)") }).contains(0), "the downloads did not run at once")
            for gate in ["g1", "g2", "g3"] { server.openGate(gate) }
            let run = try await cli.finish(process, out, err)
            #expect(run.status == 0, "\(run.stderr)")
            let saved = try FileManager.default.contentsOfDirectory(atPath: directory + "/saved").sorted()
            #expect(saved == ["2000", "first.bin", "third.bin"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/saved/third.bin")) == Data(DeterministicBytes(seed: 3).bytes(offset: 0, count: 3000)))
            // --json lists them in the file's order.
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
            #expect(entries.map { ($0["path"] as? String).map { ($0 as NSString).lastPathComponent } } == ["first.bin", "2000", "third.bin"])
            // The progress ends with the total.
            #expect(run.errorLines.contains { $0.hasPrefix("total: 3 of 3 done") } || run.stderr.isEmpty)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script (util-linux) gives the terminal"))
    func onATerminalAFailureIsPrintedAboveTheBarsNotIntoThem() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory + "/saved", withIntermediateDirectories: true)
            // Two slow downloads draw their bars on a terminal (script's pty) while a 404 fails.
            let command = [
                CLIRunner.binary, "get", "-Z", server.url("/bytes/1500000?throttle=1500000"), server.url("/status/404"),
                server.url("/bytes/1000000?throttle=1500000"), "--dir", "saved",
            ].map { "'\($0)'" }.joined(separator: " ")
            let process = try ChildProcess.spawn(
                "/usr/bin/script",
                arguments: ["-qfec", command, "/dev/null"],
                environment: CLIRunner.isolated(directory),
                directory: directory
            )
            let run = try await CLIRunner(directory: directory).finish(process, process.standardOutput!, process.standardError!)
            let screen = run.stdout
            let failure = "ferry: \(server.url("/status/404")): the server answered 404; nothing was saved"
            // The line starts a line of its own (the drawing cleared below the cursor first), once.
            #expect(screen.components(separatedBy: failure).count == 2, "\(screen.debugDescription)")
            #expect(screen.contains("\r\u{1B}[J" + failure), "\(screen.debugDescription)")
            #expect(!screen.contains("\u{1B}[K" + failure), "\(screen.debugDescription)")
            // The bars went on after it, and the last total counts the two saved as done and the 404 as
            // failed (issue 41: it once said "3 of 3 done").
            #expect(screen.contains("total: 2 of 3 done, 1 failed, "), "\(screen.debugDescription)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/saved").sorted() == ["1000000", "1500000"])
        }
    }

    @Test func aMissingDirectoryForSeveralDownloadsIsSaidOnce() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run([
                "get", "-Z", server.url("/bytes/10"), server.url("/bytes/20"), server.url("/bytes/30"), "--dir", "nowhere",
            ])
            #expect(run.status == 4)
            #expect(run.errorLines == ["ferry: cannot save into \(directory)/nowhere: it does not exist (--create-dirs makes it)"], "\(run.stderr)")
            #expect(server.counters.requests(path: "/bytes/10") == 0)
        }
    }

    @Test func inputFilesParseAsAria2Writes() throws {
        let entries = try InputFile.parse("# list\nhttp://a/x\n  out=one\r\n\nhttp://b/y \n")
        #expect(entries == [.init(url: "http://a/x", name: "one"), .init(url: "http://b/y", name: nil)])
        for bad in ["  out=x\nhttp://a/", "http://a/\n  dir=/tmp", "http://a/\n  out=../up", "http://a/\thttp://b/"] {
            #expect(throws: CLIFailure.self, "\(bad)") { try InputFile.parse(bad) }
        }
    }

    @Test func aBodyThatCannotFitIsRefusedBeforeAndNothingUnresumableIsLeft() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // A debug build's disk with 3 MB free (DiskSpace), then one full after 1000 bytes (FileSink).
            let small = CLIRunner(environment: ["FERRY_DEBUG_DISK_FREE": "3000000"], directory: directory)
            let plain = try await small.run(["get", "-q", server.url("/bytes/5000000"), "-o", "a.bin"])
            #expect(plain.status == 4)
            #expect(plain.stderr.contains("announces 5000000 bytes") && plain.stderr.contains("nothing was written"), "\(plain.stderr)")
            let segmented = try await small.run(["get", "-q", "-x", "4", server.url("/bytes/5000000"), "-o", "b.bin"])
            #expect(segmented.status == 4, "\(segmented.stderr)")
            // Decoded, it cannot be continued: the part goes when the disk fills.
            let full = CLIRunner(environment: ["FERRY_DEBUG_DISK_LIMIT": "1000"], directory: directory)
            let decoded = try await full.run(["get", "-q", "--compressed", server.url("/bytes/50000?gzip=1"), "-o", "c.bin"])
            #expect(decoded.status == 4)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") } == [])
            // What fits goes through.
            let fits = try await small.run(["get", "-q", server.url("/bytes/2000000"), "-o", "d.bin"])
            #expect(fits.status == 0, "\(fits.stderr)")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func speedLimitEndsATransferUnderTheFloorAsCurlsDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // 20 KB/s against a floor of 100 KiB/s for 2 s; the same floor lets a fast one through.
            let slow = server.url("/bytes/1000000?throttle=20000")
            let run = try await shell(
                """
                "$FERRY" get -q --speed-limit 100K --speed-time 2 '\(slow)' -o s; echo "ferry $?"
                "$CURL" -s --speed-limit 102400 --speed-time 2 '\(slow)' -o c; echo "curl $?"
                "$FERRY" get -q --speed-limit 100K --speed-time 2 '\(server.url("/bytes/200000"))' -o f; echo "ferry $?"
                """,
                in: directory
            )
            #expect(run.stdout == "ferry 1\ncurl 28\nferry 0\n", "\(run.stderr)")
            #expect(run.stderr.contains("slower than 100 KiB/s for 2 s"))
            #expect(run.stderr.contains("continue with -C"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func failWithBodySavesTheErrorPageAsCurlsDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/status/503")
            let run = try await shell(
                "\"$FERRY\" get -q --fail-with-body '\(url)' -o f; echo \"ferry $?\"; \"$CURL\" -s --fail-with-body '\(url)' -o c; echo \"curl $?\"",
                in: directory
            )
            #expect(run.stdout == "ferry 1\ncurl 22\n", "\(run.stderr)")
            let page = try Data(contentsOf: URL(fileURLWithPath: directory + "/f"))
            let curls = try Data(contentsOf: URL(fileURLWithPath: directory + "/c"))
            #expect(!page.isEmpty && page == curls)
            #expect(run.stderr.contains("its error page went to \(directory)/f"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func fsSLOutputAndCreateDirsAsCurlTakesThem() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = server.url("/bytes/5000?seed=12")
            let missing = server.url("/status/404")
            let run = try await shell(
                """
                umask 022
                "$FERRY" get -fsSL --create-dirs '\(url)' --output f/a/b.bin; echo "ferry $?"
                "$CURL" -fsSL --create-dirs '\(url)' --output c/a/b.bin; echo "curl $?"
                "$FERRY" get -fsSL '\(missing)' --output f404; echo "ferry $?"
                "$CURL" -fsSL '\(missing)' --output c404; echo "curl $?"
                "$FERRY" get -fsSL '\(url)' --output nowhere/b.bin; echo "ferry $?"
                cd f && "$FERRY" get -s -# --remote-name '\(url)'; echo "ferry $?"
                """,
                in: directory
            )
            // The exit statuses differ by design (ferry's 1 for a failed transfer, 4 for a local file).
            #expect(run.stdout == "ferry 0\ncurl 0\nferry 1\ncurl 22\nferry 4\nferry 0\n", "\(run.stderr)")
            let ours = try Data(contentsOf: URL(fileURLWithPath: directory + "/f/a/b.bin"))
            let curls = try Data(contentsOf: URL(fileURLWithPath: directory + "/c/a/b.bin"))
            #expect(ours.count == 5000 && ours == curls)
            #expect(FileManager.default.fileExists(atPath: directory + "/f/5000"))
            // The directories made have curl's mode (0750 less the umask).
            for made in ["f", "f/a"] {
                let mode = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: directory + "/" + path)[.posixPermissions] as? Int) ?? -1 }
                #expect(mode(made) == 0o750 && mode(made) == mode("c" + made.dropFirst()), "\(made)")
            }
            // -S shows the error with -s, as curl's: both say 404; nothing saved.
            #expect(run.stderr.components(separatedBy: "404").count - 1 >= 2, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/f404"))
            // Without --create-dirs a missing directory is said, not made.
            #expect(run.stderr.contains("nowhere: it does not exist"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/nowhere"))
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func remoteTimeAndRemoteHeaderNameAsCurlDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // The test server's Last-Modified is Mon, 01 Jan 2024 00:00:00 GMT.
            let url = server.url("/bytes/3000?seed=13")
            let named = server.url("/bytes/700?seed=14&disposition=attachment%3B%20filename%3D%22report.bin%22")
            let run = try await shell(
                """
                "$FERRY" get -sR '\(url)' -o f.bin; echo "ferry $?"
                "$CURL" -sR '\(url)' -o c.bin; echo "curl $?"
                "$FERRY" get -s '\(url)' -o now.bin; echo "ferry $?"
                mkdir f c
                (cd f && "$FERRY" get -s -OJ '\(named)'); echo "ferry $?"
                (cd c && "$CURL" -s -OJ '\(named)'); echo "curl $?"
                "$FERRY" get -s -J '\(named)' -o x; echo "ferry $?"
                """,
                in: directory
            )
            #expect(run.stdout == "ferry 0\ncurl 0\nferry 0\nferry 0\ncurl 0\nferry 2\n", "\(run.stderr)")
            let time = { (path: String) in
                (try? FileManager.default.attributesOfItem(atPath: directory + "/" + path)[.modificationDate] as? Date) ?? nil
            }
            let lastModified = Date(timeIntervalSince1970: 1_704_067_200)
            #expect(time("f.bin") == lastModified && time("c.bin") == lastModified)
            #expect(time("now.bin").map { $0.timeIntervalSince(lastModified) > 86_400 } == true, "without -R the file is new")
            // -OJ: the name the server gave, the same bytes as curl's.
            let ours = try Data(contentsOf: URL(fileURLWithPath: directory + "/f/report.bin"))
            let curls = try Data(contentsOf: URL(fileURLWithPath: directory + "/c/report.bin"))
            #expect(ours.count == 700 && ours == curls)
            #expect(run.stderr.contains("-J names the file"), "\(run.stderr)")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed (.ci/run installs it)"))
    func retryDelayWaitsAsCurlsDoes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await shell(
                """
                "$FERRY" get --retry 1 --retry-delay 2 '\(server.url("/status/503?key=f"))' -o f; echo "ferry $?"
                "$CURL" -sf --retry 1 --retry-delay 2 '\(server.url("/status/503?key=c"))' -o c; echo "curl $?"
                "$FERRY" get --background --retry 1 --retry-delay 2 '\(server.url("/status/503"))' -o b; echo "ferry $?"
                "$FERRY" get --retry-delay -1 '\(server.url("/status/503"))' -o b; echo "ferry $?"
                """,
                in: directory
            )
            #expect(run.stdout == "ferry 1\ncurl 22\nferry 2\nferry 2\n", "\(run.stderr)")
            // Two requests each: the first and one try again, after the delay asked for (the backoff's
            // first would be 1 s).
            #expect(server.counters.requests(path: "/status/503") == 4)
            #expect(run.stderr.contains("try 2 in 2 s"), "\(run.stderr)")
            #expect(run.stderr.contains("ferryd waits by its own backoff"), "\(run.stderr)")
        }
    }

    @Test func continueTakesCurlsDashAndRefusesAnOffset() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // A download cut after its first 300,000 bytes (held at a gate; --max-time ends it) keeps them.
            let url = server.url("/bytes/1000000?seed=15&stall_after=300000&gate=cut&only_first=1&key=cut")
            let cut = try await cli.run(["get", "-s", "--max-time", "2", url, "-o", "big.bin"])
            #expect(cut.status == 1, "\(cut.stderr)")
            server.openGate("cut")
            let part = (try? FileManager.default.attributesOfItem(atPath: directory + "/big.bin.ferry-part")[.size] as? Int) ?? 0
            #expect(part >= 300_000, "the part holds \(part) bytes")
            // curl's `-C -` spelling continues it: only the rest is asked for.
            server.resetCounters()
            let continued = try await cli.run(["get", "-s", "-C", "-", url, "-o", "big.bin"])
            #expect(continued.status == 0, "\(continued.stderr)")
            var expected = [UInt8](repeating: 0, count: 1_000_000)
            expected.withUnsafeMutableBytes { DeterministicBytes(seed: 15).fill($0, offset: 0) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/big.bin")) == Data(expected))
            #expect(server.counters.bodyBytesSent(path: "/bytes/1000000") <= 1_000_000 - 300_000)
            // curl's `-C OFFSET` has no equal in ferry: refused, pointing at -r.
            let offset = try await cli.run(["get", "-C", "500", url, "-o", "other.bin"])
            #expect(offset.status == 2)
            #expect(offset.stderr.contains("-C takes no offset (500)") && offset.stderr.contains("-r 500-"), "\(offset.stderr)")
        }
    }

    @Test(.enabled(if: wget != nil && aria2c != nil, "wget or aria2c is not installed (.ci/run installs them)"))
    func wgetsAndAria2sDirectoryAndNameFlagsSaveWhatTheySave() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // No query: wget keeps one in the file's name, ferry does not.
            let url = server.url("/bytes/4000")
            let secure = server.url("/bytes/4000", on: .tls)
            let run = try await shell(
                """
                "$FERRY" get -q -P fp '\(url)'; echo "ferry $?"
                "$WGET" -q -P wp '\(url)'; echo "wget $?"
                "$FERRY" get -q --directory-prefix fq --no-check-certificate '\(secure)'; echo "ferry $?"
                "$WGET" -q --directory-prefix wq --no-check-certificate '\(secure)'; echo "wget $?"
                "$FERRY" get -q --create-dirs --dir fa --out named.bin '\(url)'; echo "ferry $?"
                "$ARIA2C" -q --dir aa --out named.bin '\(url)'; echo "aria2c $?"
                "$FERRY" get -q '\(secure)' -o untrusted; echo "ferry $?"
                "$FERRY" get -q --dir fa -o /tmp/elsewhere '\(url)'; echo "ferry $?"
                "$FERRY" get -q --dir fa -P fb '\(url)'; echo "ferry $?"
                """,
                in: directory
            )
            // -P makes its directory, as wget's; ferry's --dir does not unless --create-dirs says so
            // (aria2c's does); an untrusted certificate fails without -k or --no-check-certificate.
            #expect(run.stdout == "ferry 0\nwget 0\nferry 0\nwget 0\nferry 0\naria2c 0\nferry 1\nferry 2\nferry 2\n", "\(run.stderr)")
            #expect(run.stderr.contains("-o /tmp/elsewhere does not go with it") && run.stderr.contains("not both"), "\(run.stderr)")
            let read = { (path: String) in try Data(contentsOf: URL(fileURLWithPath: directory + "/" + path)) }
            #expect(try read("fp/4000").count == 4000)
            #expect(try read("fp/4000") == read("wp/4000"))
            #expect(try read("fq/4000") == read("wq/4000"))
            #expect(try read("fa/named.bin") == read("aa/named.bin"))
        }
    }
}
