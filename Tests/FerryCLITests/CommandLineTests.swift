import Crypto
import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built `ferry` run as a user runs it, against ferry-testserver on 127.0.0.1 (and, for
/// --background, a ferryd of the test's own under FERRY_HOME).
@Suite struct CommandLineTests {
    /// Not a terminal, and done within a second: the "saved" line alone, no "12 B of 12 B (100%) at 0 B/s,
    /// ETA -" before it (issue 41).
    @Test func aQuickDownloadInALogGetsItsSavedLineOnly() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run(["get", server.url("/bytes/12"), "-o", "small.bin"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.errorLines.filter { $0.hasPrefix("small.bin: ") }.isEmpty, "\(run.stderr)")
            #expect(run.errorLines.contains { $0.contains("saved") && $0.contains("(12 B, ") }, "\(run.stderr)")
        }
    }

    /// `-Z`'s total counts a failed download as failed, not done (issue 41).
    @Test func theParallelTotalCountsAFailureAsFailed() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let urls = (1...4).map { server.url("/bytes/\($0 * 1000)") } + [server.url("/status/404")]
            let run = try await CLIRunner(directory: directory).run(["get", "-Z", "--dir", "."] + urls)
            #expect(run.status == 1, "\(run.stderr)")
            let total = run.errorLines.last { $0.hasPrefix("total: ") }
            #expect(total?.hasPrefix("total: 4 of 5 done, 1 failed, ") == true, "\(run.stderr)")
        }
    }

    @Test func getSavesTheExactBytesAndWritesOneLinePerFileWhenNotATerminal() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // 3 s at 1 MB/s: a line a second once (issue 41); now the "saved" line alone, with the rate
            // over the whole transfer (about 1 MB/s, not the last sample's).
            let run = try await cli.run(["get", server.url("/bytes/3000000?throttle=1000000"), "-o", "out.bin"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try fileSHA256(directory + "/out.bin") == bytesSHA256(3_000_000))
            #expect(!run.stderr.contains("\r"))
            #expect(run.errorLines.count == 1, "\(run.stderr)")
            let saved = try #require(run.errorLines.first)
            #expect(saved.hasPrefix("ferry: saved \(directory)/out.bin (2.9 MiB, "), "\(saved)")
            let rate = saved.split(separator: " ").suffix(2).first.flatMap { Double($0) } ?? 0
            #expect(saved.hasSuffix(" KiB/s)") && rate > 300 && rate < 1000, "\(saved)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(leftovers == ["out.bin"])
        }
    }

    @Test func getUnderTheRemoteNameWithJSON() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try await CLIRunner(directory: directory).run(["get", server.url("/bytes/1000"), "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let reports = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]]
            #expect(reports?.first?["path"] as? String == directory + "/1000")
            #expect(reports?.first?["bytes"] as? Int == 1000)
            #expect(run.stderr.isEmpty)
        }
    }

    @Test func getSaysWhoItIsAndCurlsEmptyHeaderRemovesIt() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            func sent(_ extra: [String]) async throws -> [String: String] {
                let run = try await cli.run(["get", server.url("/echo"), "-o", "echo.json"] + extra)
                #expect(run.status == 0, "\(run.stderr)")
                let echo = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/echo.json")))
                let fields = ((echo as? [String: Any])?["headers"] as? [[String]]) ?? []
                return Dictionary(fields.map { ($0[0].lowercased(), $0[1]) }, uniquingKeysWith: { first, _ in first })
            }
            let plain = try await sent([])
            #expect(plain["user-agent"] == "ferry/\(FerryVersion.current)")
            #expect(plain["accept"] == "*/*")
            let own = try await sent(["-H", "User-Agent: script/1"])
            #expect(own["user-agent"] == "script/1")
            let none = try await sent(["-H", "User-Agent:"])
            #expect(none["user-agent"] == nil)
            // -A, as curl's: replaces the default; -H wins over it; -A '' sends none.
            #expect(try await sent(["-A", "agent/2"])["user-agent"] == "agent/2")
            #expect(try await sent(["-A", "agent/2", "-H", "User-Agent: script/1"])["user-agent"] == "script/1")
            #expect(try await sent(["-A", ""])["user-agent"] == nil)
            // -D has nothing to show from ferryd, and says so.
            let dumped = try await cli.run(["get", "--background", "-D", "h.txt", server.url("/echo")])
            #expect(dumped.status == 2 && dumped.stderr.contains("-D is for foreground downloads"))
        }
    }

    @Test func putSendsTheFile() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let body = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try body.write(to: URL(fileURLWithPath: directory + "/up.bin"))
            let cli = CLIRunner(directory: directory)
            let put = try await cli.run(["put", "up.bin", server.url("/upload?keep=cli-put"), "--json"])
            #expect(put.status == 0, "\(put.stderr)")
            #expect(put.stdout.contains("\"status\" : 201"))
            let get = try await cli.run(["get", server.url("/uploads/cli-put"), "-o", "back.bin", "-q"])
            #expect(get.status == 0, "\(get.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/back.bin")) == body)
        }
    }

    @Test func putSendsResumablyOrInParallelChunks() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let body = Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            try body.write(to: URL(fileURLWithPath: directory + "/up.bin"))
            let cli = CLIRunner(directory: directory)
            let resumable = try await cli.run([
                "put", "-X", "POST", "--resumable", "up.bin", server.url("/upload?keep=cli-r", on: .resumable), "-q",
            ])
            #expect(resumable.status == 0, "\(resumable.stderr)")
            #expect(server.storedUpload(key: "cli-r")?.body == Array(body))
            #expect(server.counters.wireRequestsByMethod["PATCH"] == 1)

            let chunked = try await cli.run([
                "put", "--chunks", "4", "up.bin", server.url("/tus/?keep=cli-c"), "--json",
            ])
            #expect(chunked.status == 0, "\(chunked.stderr)")
            #expect(server.storedUpload(key: "cli-c")?.body == Array(body))
            let report = try JSONSerialization.jsonObject(with: Data(chunked.stdout.utf8)) as? [String: Any]
            #expect(report?["status"] as? Int == 201)

            let refused = try await cli.run(["put", "--chunks", "4", "up.bin", server.url("/upload"), "-q"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("tus"))
        }
    }

    @Test func anInterruptedDownloadContinuesWithC() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let size = 8_000_000
            // The first try stalls after 6 MB (a loaded machine must not finish it before the SIGINT); the
            // continuation runs clean.
            let url = server.url("/bytes/\(size)?throttle=3000000&stall_after=6000000&stall_ms=60000&only_first=1&key=int")
            let (process, out, err) = try cli.start(["get", url, "-o", "big.bin"])
            let record = directory + "/big.bin.ferry-resume"
            try await waitUntil("a resume record is written or ferry ends") {
                FileManager.default.fileExists(atPath: record) || !process.isRunning
            }
            kill(process.processIdentifier, SIGINT)
            let first = try await cli.finish(process, out, err)
            #expect(first.status == 130, "\(first.stderr)")
            #expect(first.errorLines.last?.contains("continue with -C") == true)
            #expect(!FileManager.default.fileExists(atPath: directory + "/big.bin"))

            let second = try await cli.run(["get", "-C", url, "-o", "big.bin", "--json"])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(try fileSHA256(directory + "/big.bin") == bytesSHA256(size))
            let reports = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]]
            let resumedFrom = reports?.first?["resumedFrom"] as? Int ?? 0
            #expect(resumedFrom > 0)
            // Only the rest was fetched again.
            let served = server.counters.bodyBytesSent(path: "/bytes/\(size)")
            #expect(served < Int64(size) + Int64(size) / 2)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["big.bin"])
        }
    }

    @Test func aCutDownloadKeepsItsDataForCOrRetriesItself() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let size = 2_000_000
            // The first request of each key is cut after 600,000 bytes; the next is whole.
            let cut = server.url("/bytes/\(size)?close_after=600000&only_first=1&key=cli-cut")
            let first = try await cli.run(["get", cut, "-o", "cut.bin", "-q"])
            #expect(first.status == 1)
            #expect(first.errorLines.count == 1)
            #expect(first.stderr.contains("continue with -C"))
            let second = try await cli.run(["get", "-C", cut, "-o", "cut.bin", "--json"])
            #expect(second.status == 0, "\(second.stderr)")
            let reports = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]]
            #expect((reports?.first?["resumedFrom"] as? Int ?? 0) > 0)
            #expect(try fileSHA256(directory + "/cut.bin") == bytesSHA256(size))

            let retried = server.url("/bytes/\(size)?close_after=600000&only_first=1&key=cli-retry")
            let again = try await cli.run(["get", "--retry", "2", retried, "-o", "retried.bin"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stderr.contains("try 2 in 1 s"))
            #expect(try fileSHA256(directory + "/retried.bin") == bytesSHA256(size))
        }
    }

    @Test func aFullDiskIsExitStatus4AndKeepsWhatWasWritten() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let size = 3_000_000
            let url = server.url("/bytes/\(size)")
            // A debug build's disk that is full after 1,000,000 bytes of a file (FileSink).
            let full = CLIRunner(environment: ["FERRY_DEBUG_DISK_LIMIT": "1000000"], directory: directory)
            let first = try await full.run(["get", url, "-o", "f.bin", "-q"])
            #expect(first.status == 4)
            #expect(first.errorLines.count == 1)
            #expect(first.stderr.contains("No space left on device"))
            #expect(first.stderr.contains("continue with -C"))
            let kept = try FileManager.default.attributesOfItem(atPath: directory + "/f.bin.ferry-part")[.size] as? Int
            #expect(kept == 1_000_000)
            // Space freed: -C continues from the bytes kept.
            let second = try await CLIRunner(directory: directory).run(["get", "-C", url, "-o", "f.bin", "--json"])
            #expect(second.status == 0, "\(second.stderr)")
            let reports = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]]
            #expect(reports?.first?["resumedFrom"] as? Int == 1_000_000)
            #expect(try fileSHA256(directory + "/f.bin") == bytesSHA256(size))
        }
    }

    @Test func aChecksumMismatchIsExitStatus3AndKeepsTheBytesAside() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let wrong = "sha256=" + String(repeating: "0", count: 64)
            let run = try await CLIRunner(directory: directory).run([
                "get", server.url("/bytes/5000"), "-o", "f", "--checksum", wrong, "-q",
            ])
            #expect(run.status == 3)
            #expect(run.errorLines.count == 1)
            #expect(run.errorLines.first?.hasPrefix("ferry: checksum mismatch for \(directory)/f") == true)
            #expect(run.errorLines.first?.contains("got \(bytesSHA256(5000))") == true)
            // Not under the name asked for, and not where -C would continue it: beside it, for inspection.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["f.ferry-mismatch"])
            #expect(try fileSHA256(directory + "/f.ferry-mismatch") == bytesSHA256(5000))
            let right = try await CLIRunner(directory: directory).run([
                "get", server.url("/bytes/5000"), "-o", "f", "--checksum", "sha256=\(bytesSHA256(5000))", "-q",
            ])
            #expect(right.status == 0)
            let md5 = try await CLIRunner(directory: directory).run([
                "get", server.url("/bytes/5000"), "-o", "g", "--checksum", "md5=" + String(repeating: "0", count: 32),
                "-q",
            ])
            #expect(md5.status == 3)
            #expect(md5.errorLines.first?.contains("expected md5") == true)
        }
    }

    @Test func severalConnectionsFetchOneFileAndAnInterruptionContinuesItsSegments() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let size = 12_000_000
            // The first four responses (one per segment) are held 1 MB in (a gate never opened), so the
            // interruption lands mid-download however loaded the machine; the continuation runs through.
            let url = server.url("/bytes/\(size)?stall_after=1000000&gate=never&only_first=4")
            let (process, out, err) = try cli.start(["get", url, "-o", "seg.bin", "-x", "4"])
            let record = directory + "/seg.bin.ferry-resume"
            try await waitUntil("a resume record is written or ferry ends") {
                FileManager.default.fileExists(atPath: record) || !process.isRunning
            }
            kill(process.processIdentifier, SIGINT)
            let first = try await cli.finish(process, out, err)
            #expect(first.status == 130, "\(first.stderr)")
            let saved = try #require(FileManager.default.contents(atPath: record))
            let json = try JSONSerialization.jsonObject(with: saved) as? [String: Any]
            let resumeData = json?["resumeData"] as? [String: Any]
            let segments = (resumeData?["segments"] as? [String: Any])?["segments"] as? [[String: Any]]
            #expect((segments?.count ?? 0) >= 4)

            let checksum = "sha256=\(bytesSHA256(size))"
            let second = try await cli.run([
                "get", "-C", url, "-o", "seg.bin", "-x", "4", "--checksum", checksum, "--json",
            ])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(try fileSHA256(directory + "/seg.bin") == bytesSHA256(size))
            let reports = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]]
            #expect((reports?.first?["resumedFrom"] as? Int ?? 0) > 0)
            #expect(reports?.first?["connections"] as? Int == 4)
            #expect(reports?.first?["checksum"] as? String == checksum)
            // Each segment went on where it stopped: not much more than the file was served.
            let served = server.counters.bodyBytesSent(path: "/bytes/\(size)")
            #expect(served < Int64(size) + Int64(size) / 4)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["seg.bin"])
        }
    }

    @Test func badInputGetsOneClearLineAndItsExitStatus() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let cases: [(arguments: [String], status: Int32, says: String)] = [
                (["get", "ftp://example.invalid/x"], 2, "not an http or https URL"),
                (["get", "http://127.0.0.1:1/x", "-o", "x"], 1, "127.0.0.1:1"),
                (["get", server.url("/bytes/10"), "-o", "/proc/ferry-nowhere/x"], 4, "does not exist"),
                (["get", server.url("/status/404"), "-o", "x", "-q"], 1, "answered 404"),
                (["get", server.url("/bytes/10"), "-H", "X-Bad: a\rb"], 2, "header"),
                (["get", server.url("/bytes/10"), "--no-such-option"], 2, "no-such-option"),
                (["put", "missing.bin", server.url("/upload")], 4, "missing.bin"),
            ]
            for item in cases {
                let run = try await cli.run(item.arguments)
                #expect(run.status == item.status, "\(item.arguments): \(run.stderr)")
                #expect(run.errorLines.count == 1, "\(item.arguments): \(run.stderr)")
                #expect(run.errorLines.first?.hasPrefix("ferry: ") == true)
                #expect(run.stderr.contains(item.says), "\(item.arguments): \(run.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func backgroundDownloadsOutliveTheCommand() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            let home = "/tmp/ferry-c-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let cli = CLIRunner(environment: ["FERRY_HOME": home], directory: directory)
            defer {
                try? FileManager.default.removeItem(atPath: directory)
                try? FileManager.default.removeItem(atPath: home)
            }
            let noDaemon = try await cli.run(["daemon", "status"])
            #expect(noDaemon.status == 5)

            let size = 2_000_000
            let launched = directory + "/launched"
            let submit = try await cli.run([
                "get", "--background", server.url("/bytes/\(size)?throttle=4000000"), "-o", "bg.bin",
                "--on-complete", "echo $FERRY_SESSION >> \(launched)",
            ])
            #expect(submit.status == 0, "\(submit.stderr)")
            let identifier = submit.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(Int(identifier) != nil)
            do {
                let list = try await cli.run(["ls", "--json"])
                #expect(list.status == 0)
                let tasks = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
                #expect(tasks.map(\.taskIdentifier) == [Int(identifier)!])
                #expect(tasks.first?.destination == directory + "/bg.bin")

                let wait = try await cli.run(["wait", identifier])
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(try fileSHA256(directory + "/bg.bin") == bytesSHA256(size))
                // No client attaches to the CLI's session: its launch command runs for the finished batch.
                try await waitUntil("the launch command runs") { FileManager.default.fileExists(atPath: launched) }
                #expect(try String(contentsOfFile: launched, encoding: .utf8) == "ferry-cli\n")

                // A failed task makes wait fail, and writes nothing.
                let bad = try await cli.run(["get", "--background", server.url("/status/500"), "-o", "bad.bin"])
                let failed = try await cli.run(["wait", bad.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(failed.status == 1)
                #expect(failed.stderr.contains("500"))
                #expect(!FileManager.default.fileExists(atPath: directory + "/bad.bin"))

                // An upload handed over the same way.
                try Data(repeating: 7, count: 200_000).write(to: URL(fileURLWithPath: directory + "/up.bin"))
                let put = try await cli.run(["put", "--background", "up.bin", server.url("/upload?keep=cli-bg")])
                let putWait = try await cli.run(["wait", put.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(putWait.status == 0, "\(putWait.stderr)")
                let back = try await cli.run(["get", server.url("/uploads/cli-bg"), "-o", "back.bin", "-q"])
                #expect(back.status == 0)
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: directory + "/back.bin"))
                        == Data(repeating: 7, count: 200_000)
                )

                let events = try await cli.run(["events"])
                let kinds = events.stdout.split(separator: "\n").compactMap {
                    try? JSONDecoder().decode(BackgroundEvent.self, from: Data($0.utf8)).kind
                }
                #expect(kinds == [.didFinishDownloading, .didComplete, .didComplete, .didComplete])
                #expect(try await cli.run(["events"]).stdout.isEmpty)
                // The delivered file is the user's: acknowledging its event leaves it.
                #expect(FileManager.default.fileExists(atPath: directory + "/bg.bin"))
            } catch {
                _ = try? await cli.run(["daemon", "stop"])
                throw error
            }
            let stop = try await cli.run(["daemon", "stop"])
            #expect(stop.status == 0, "\(stop.stderr)")
            #expect(try await cli.run(["daemon", "status"]).status == 5)
        }
    }
}

/// `--retry` covers curl's transient statuses and honours Retry-After.
@Suite struct RetryCommandTests {
    @Test func transientStatusesAreRetriedAfterRetryAfter() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // Two 503s with Retry-After: 1, then the file.
            let busy = server.url("/bytes/50000?fail=2&key=busy")
            let retried = try await cli.run(["get", busy, "-o", "a.bin", "--retry", "3"])
            #expect(retried.status == 0, "\(retried.stderr)")
            #expect(try fileSHA256(directory + "/a.bin") == bytesSHA256(50_000))
            #expect(retried.stderr.contains("the server answered 503; try 2 in 1 s"), "\(retried.stderr)")
            #expect(retried.stderr.contains("try 3 in 1 s"))
            // A 500 without Retry-After: the backoff's 1 s.
            let broken = server.url("/bytes/50000?fail=1&fail_status=500&retry_after=-1&key=broken")
            let again = try await cli.run(["get", broken, "-o", "b.bin", "--retry", "1"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stderr.contains("the server answered 500; try 2 in 1 s"), "\(again.stderr)")
            // Without --retry, or out of tries: the status, nothing saved.
            let once = try await cli.run(["get", server.url("/bytes/10?fail=5&key=once"), "-o", "c.bin", "--retry", "1"])
            #expect(once.status == 1)
            #expect(once.stderr.contains("answered 503; nothing was saved"), "\(once.stderr)")
            // 404 is not transient: no retry.
            let missing = try await cli.run(["get", server.url("/status/404"), "-o", "d.bin", "--retry", "3"])
            #expect(missing.status == 1)
            #expect(!missing.stderr.contains("try 2"))
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["a.bin", "b.bin"])
        }
    }
}

/// `-C` across a URL change (a re-signed link, a mirror), guarded by the record's validators.
@Suite struct ContinueAcrossURLsTests {
    private func digest(seed: UInt64, _ count: Int) -> String {
        SHA256.hash(data: DeterministicBytes(seed: seed).bytes(offset: 0, count: count)).map { String(format: "%02x", $0) }
            .joined()
    }

    @Test func aNewURLContinuesTheSameFileAndRestartsAnother() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let size = 3_000_000
            let cut = try await cli.run([
                "get", server.url("/bytes/\(size)?seed=20&close_after=1200000&only_first=1&key=m1&sig=a"), "-o", "f.bin",
            ])
            #expect(cut.status == 1, "\(cut.stderr)")
            // Same resource (same ETag), another URL: continued.
            let same = try await cli.run(["get", server.url("/bytes/\(size)?seed=20&sig=b"), "-o", "f.bin", "-C", "--json"])
            #expect(same.status == 0, "\(same.stderr)")
            let reports = try JSONSerialization.jsonObject(with: Data(same.stdout.utf8)) as? [[String: Any]]
            #expect((reports?.first?["resumedFrom"] as? Int ?? 0) > 0)
            #expect(try fileSHA256(directory + "/f.bin") == digest(seed: 20, size))

            // Another resource behind the new URL: If-Range sends it whole, and ferry says so.
            let cutAgain = try await cli.run([
                "get", server.url("/bytes/\(size)?seed=21&close_after=1200000&only_first=1&key=m2"), "-o", "g.bin",
            ])
            #expect(cutAgain.status == 1)
            let other = try await cli.run(["get", server.url("/bytes/\(size)?seed=22"), "-o", "g.bin", "-C"])
            #expect(other.status == 0, "\(other.stderr)")
            #expect(other.stderr.contains("the server's file changed (ETag"), "\(other.stderr)")
            #expect(other.stderr.contains("downloading from the start"), "\(other.stderr)")
            #expect(try fileSHA256(directory + "/g.bin") == digest(seed: 22, size))

            // The same file from a server that ignores Range: not called another file (issue 41).
            let cutThird = try await cli.run([
                "get", server.url("/bytes/\(size)?seed=23&close_after=1200000&only_first=1&key=m3"), "-o", "h.bin",
            ])
            #expect(cutThird.status == 1)
            let whole = try await cli.run(["get", server.url("/bytes/\(size)?seed=23&ignore_range=1"), "-o", "h.bin", "-C"])
            #expect(whole.status == 0, "\(whole.stderr)")
            #expect(
                whole.stderr.contains("the server sent the whole file again, the same version (it does not continue downloads); downloading from the start"),
                "\(whole.stderr)"
            )
            #expect(try fileSHA256(directory + "/h.bin") == digest(seed: 23, size))
        }
    }
}

/// A stopped ferryd (SIGSTOP) never hangs the CLI.
@Suite struct StoppedDaemonTests {
    @Test func lsEndsWithinTenSecondsAndSaysWhy() async throws {
        let directory = try makeDirectory()
        let home = "/tmp/ferry-c-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: home)
        }
        let cli = CLIRunner(environment: ["FERRY_HOME": home], directory: directory)
        #expect(try await cli.run(["daemon", "start"]).status == 0)
        let status = try await cli.run(["daemon", "status", "--json"])
        let pid = try #require(
            (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["pid"] as? Int
        )
        kill(Int32(pid), SIGSTOP)
        let started = Date()
        let listed = try await cli.run(["ls"], timeout: 30)
        let elapsed = Date().timeIntervalSince(started)
        kill(Int32(pid), SIGCONT)
        _ = try? await cli.run(["daemon", "stop"])
        #expect(listed.status == 5, "\(listed.stderr)")
        #expect(listed.stderr.contains("does not answer"), "\(listed.stderr)")
        // Its own 5 s limit and a process start, not the run's 30 s (loose for a loaded machine).
        #expect(elapsed < 25, "ferry ls took \(elapsed) s against a stopped ferryd")
    }
}
