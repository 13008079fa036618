import FerryCore
import FerryTestServer
import Foundation
import Testing

/// What the foreground takes, `--background` takes too: `put --form` and `--chunks` (ferryd sends the
/// form and the tus chunks itself; the restart behaviour is tested against ferryd in
/// BackgroundChunkedUploadTests), and `get`'s `--max-redirs`, `--retry`/`--tries` and
/// `--speed-limit`/`--speed-time` as the task's own limits.
@Suite struct BackgroundParityTests {
    @Test func formsAndChunksAreHandedToFerryd() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, directory in
                let photo = DeterministicBytes(seed: 31).bytes(offset: 0, count: 300_000)
                try Data(photo).write(to: URL(fileURLWithPath: directory + "/photo.png"))
                let big = DeterministicBytes(seed: 32).bytes(offset: 0, count: 3_000_000)
                try Data(big).write(to: URL(fileURLWithPath: directory + "/big.bin"))

                // Refused before ferryd is asked (or started): a missing form file, a form field of stdin.
                let missing = try await cli.run(["put", "--background", "--form", "f=@nothing.bin", server.url("/multipart")])
                #expect(missing.status == 4, "\(missing.stderr)")
                #expect(missing.stderr.contains("nothing.bin"), "\(missing.stderr)")
                let stdin = try await cli.run(["put", "--background", "--form", "f=@-", server.url("/multipart")])
                #expect(stdin.status == 2, "\(stdin.stderr)")
                #expect(try await cli.run(["daemon", "status"]).status == 5)

                let form = try await cli.run([
                    "put", "--background", "--form", "title=Holiday", "--form", "photo=@photo.png",
                    "--form", "raw=@photo.png;type=application/x-raw;filename=raw.dat",
                    server.url("/multipart?keep=cli-bgform"),
                ])
                #expect(form.status == 0, "\(form.stderr)")
                let formTask = form.output
                let chunked = try await cli.run([
                    "put", "--background", "--chunks", "3", "big.bin", server.url("/tus/?keep=cli-bgchunks"), "--json",
                ])
                #expect(chunked.status == 0, "\(chunked.stderr)")
                let info = try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(chunked.stdout.utf8))
                let waited = try await cli.run(["wait", formTask, String(info.taskIdentifier)])
                #expect(waited.status == 0, "\(waited.stderr)")

                let kept = try #require(server.storedUpload(key: "cli-bgform"))
                let report = try #require(try JSONSerialization.jsonObject(with: Data(kept.body)) as? [String: Any])
                let parts = try #require(report["parts"] as? [[String: Any]])
                #expect(parts.map { $0["name"] as? String } == ["title", "photo", "raw"])
                #expect(parts[0]["text"] as? String == "Holiday")
                #expect(parts[1]["filename"] as? String == "photo.png")
                #expect(parts[1]["contentType"] as? String == "image/png")  // guessed as curl does
                #expect(parts[1]["sha256"] as? String == bytesSHA256(300_000, seed: 31))
                #expect(parts[2]["filename"] as? String == "raw.dat")
                #expect(parts[2]["contentType"] as? String == "application/x-raw")
                #expect(server.storedUpload(key: "cli-bgchunks")?.body == big)

                let list = try await cli.run(["ls", "--json"])
                let tasks = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
                #expect(tasks.map(\.taskDescription).contains("form: title, photo, raw"))
            }
        }
    }

    /// `ferry ls` shows a running download's total from its first bytes, not from its first checkpoint
    /// (it showed "97.7 KiB" with no total while the transfer had not reached one; issue 41), and a
    /// cancelled one as cancelled, not failed.
    @Test func aRunningDownloadShowsItsTotalFromItsFirstBytesAndCancelledIsNotFailed() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, _ in
                let size = 5_000_000
                // 100,000 bytes, then a minute of nothing: no checkpoint comes while the test looks.
                let url = server.url("/bytes/\(size)?stall_after=100000&stall_ms=60000&key=ls-total")
                let submit = try await cli.run(["get", "--background", url, "-o", "t.bin"])
                #expect(submit.status == 0, "\(submit.stderr)")
                var running: BackgroundTaskInfo?
                let end = Date().addingTimeInterval(60)
                while running == nil, Date() < end {
                    let list = try await cli.run(["ls", "--json"])
                    let tasks = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
                    running = tasks.first { $0.bytesReceived > 0 }
                }
                let seen = try #require(running, "the task never had bytes")
                #expect(seen.bytesReceived < Int64(size))
                #expect(seen.expectedLength == Int64(size))
                let table = try await cli.run(["ls"])
                #expect(table.stdout.contains("/4.8 MiB "), "\(table.stdout)")

                // Cancelled, it is listed as cancelled, not failed.
                let cancel = try await cli.run(["cancel", String(seen.taskIdentifier)])
                #expect(cancel.status == 0, "\(cancel.stderr)")
                _ = try await cli.run(["wait", String(seen.taskIdentifier), "--timeout", "30"])
                let after = try await cli.run(["ls"])
                let row = after.stdout.split(separator: "\n").first { $0.hasPrefix("\(seen.taskIdentifier) ") } ?? ""
                #expect(row.contains(" cancelled ") && !row.contains(" failed "), "\(after.stdout)")
            }
        }
    }

    @Test func curlsLimitsBecomeTheTasksOwn() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, directory in
                let refused = try await cli.run(["get", "--background", "--max-redirs", "5000", server.url("/bytes/10")])
                #expect(refused.status == 2, "\(refused.stderr)")
                #expect(refused.stderr.contains("maximumRedirects takes 0 to 1000"), "\(refused.stderr)")
                func submit(_ arguments: [String]) async throws -> String {
                    let run = try await cli.run(["get", "--background"] + arguments)
                    #expect(run.status == 0, "\(arguments): \(run.stderr)")
                    return run.output
                }
                // Three redirects: one allowed fails the task, three succeed.
                let few = try await submit(["--max-redirs", "1", server.url("/redirect/3"), "-o", "few.json"])
                let enough = try await submit(["--max-redirs", "3", server.url("/redirect/3"), "-o", "enough.json"])
                // Three busy answers (503, Retry-After: 1) before the bytes: one try fails, four succeed.
                let once = try await submit(["--tries", "1", server.url("/bytes/1000?fail=3&key=once"), "-o", "once.bin"])
                let four = try await submit(["--retry", "3", server.url("/bytes/1000?fail=3&key=four"), "-o", "four.bin"])
                // Under 1 MB/s for 2 s (the server sends 50 kB/s), one try: the floor ends it.
                let slow = try await submit([
                    "--speed-limit", "1M", "--speed-time", "2", "--tries", "1",
                    server.url("/bytes/2000000?throttle=50000"), "-o", "slow.bin",
                ])

                let fewWait = try await cli.run(["wait", few])
                #expect(fewWait.status == 1, "\(fewWait.stderr)")
                #expect(fewWait.stderr.contains("more than 1 redirects"), "\(fewWait.stderr)")
                let enoughWait = try await cli.run(["wait", enough])
                #expect(enoughWait.status == 0, "\(enoughWait.stderr)")
                #expect(FileManager.default.fileExists(atPath: directory + "/enough.json"))
                let onceWait = try await cli.run(["wait", once])
                #expect(onceWait.status == 1, "\(onceWait.stderr)")
                #expect(onceWait.stderr.contains("503"), "\(onceWait.stderr)")
                let fourWait = try await cli.run(["wait", four])
                #expect(fourWait.status == 0, "\(fourWait.stderr)")
                #expect(try fileSHA256(directory + "/four.bin") == bytesSHA256(1000))
                let slowWait = try await cli.run(["wait", slow], timeout: 90)
                #expect(slowWait.status == 1, "\(slowWait.stderr)")
                #expect(slowWait.stderr.contains("under 1048576 bytes a second for 2 seconds"), "\(slowWait.stderr)")
                #expect(!FileManager.default.fileExists(atPath: directory + "/slow.bin"))
            }
        }
    }

    @Test func aRequestBodyARangeAndDecodingGoWithABackgroundDownloadAsInTheForeground() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, directory in
                try Data("x=1\r\ny=2".utf8).write(to: URL(fileURLWithPath: directory + "/form.txt"))
                let arguments = ["-d", "a=1", "-d", "@form.txt", "--data-binary", "b=2 3", server.url("/echo")]
                let foreground = try await cli.run(["get", "-q"] + arguments + ["-o", "fg.json"])
                #expect(foreground.status == 0, "\(foreground.stderr)")
                let submit = try await cli.run(["get", "--background"] + arguments + ["-o", "bg.json"])
                #expect(submit.status == 0, "\(submit.stderr)")
                let wait = try await cli.run(["wait", submit.output])
                #expect(wait.status == 0, "\(wait.stderr)")
                // The same request reached the server: method, headers, and the body's bytes.
                let fg = try Data(contentsOf: URL(fileURLWithPath: directory + "/fg.json"))
                let bg = try Data(contentsOf: URL(fileURLWithPath: directory + "/bg.json"))
                #expect(fg == bg, "\(String(decoding: bg, as: UTF8.self))")
                let echo = try #require(try JSONSerialization.jsonObject(with: bg) as? [String: Any])
                #expect(echo["method"] as? String == "POST")
                #expect(echo["bodyLength"] as? Int == "a=1&x=1y=2&b=2 3".utf8.count)
                // -X chooses the method, as in the foreground.
                let put = try await cli.run(["get", "--background", "-X", "PUT", "-d", "k=v", server.url("/echo"), "-o", "put.json"])
                _ = try await cli.run(["wait", put.output])
                let echoed = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/put.json")))
                #expect((echoed as? [String: Any])?["method"] as? String == "PUT")

                // --compressed: ferryd asks for gzip and saves the decoded bytes.
                let gzip = try await cli.run(["get", "--background", "--compressed", server.url("/bytes/300000?seed=4&gzip=1"), "-o", "plain.bin"])
                #expect(gzip.status == 0, "\(gzip.stderr)")
                let gzipWait = try await cli.run(["wait", gzip.output])
                #expect(gzipWait.status == 0, "\(gzipWait.stderr)")
                #expect(try fileSHA256(directory + "/plain.bin") == bytesSHA256(300_000, seed: 4))

                // -r: the same part as the foreground saves, a span and a suffix.
                for (name, range) in [("span", "100-199"), ("tail", "-300")] {
                    let url = server.url("/bytes/1000?seed=9")
                    let fgRun = try await cli.run(["get", "-q", "-r", range, url, "-o", name + ".fg"])
                    #expect(fgRun.status == 0, "\(fgRun.stderr)")
                    let bgRun = try await cli.run(["get", "--background", "-r", range, url, "-o", name + ".bg"])
                    #expect(bgRun.status == 0, "\(bgRun.stderr)")
                    let waited = try await cli.run(["wait", bgRun.output])
                    #expect(waited.status == 0, "\(waited.stderr)")
                    let part = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name + ".bg"))
                    #expect(part == (try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name + ".fg"))))
                    let whole = DeterministicBytes(seed: 9).bytes(offset: 0, count: 1000)
                    #expect(Array(part) == Array(name == "span" ? whole[100..<200] : whole[700..<1000]))
                }
            }
        }
    }

    @Test func aForegroundPartIsContinuedByFerrydWithC() async throws {
        try await TestServer.withServer { server in
            try await withBackgroundCLI { cli, directory in
                let size = 2_000_000
                // The first request is cut after 600,000 bytes: the foreground keeps its part and record.
                let cut = server.url("/bytes/\(size)?close_after=600000&only_first=1&key=bg-c")
                let first = try await cli.run(["get", cut, "-o", "cut.bin", "-q"])
                #expect(first.status == 1)
                #expect(FileManager.default.fileExists(atPath: directory + "/cut.bin.ferry-resume"))
                let kept = try #require(try FileManager.default.attributesOfItem(atPath: directory + "/cut.bin.ferry-part")[.size] as? NSNumber)
                #expect(kept.int64Value > 0)
                let submit = try await cli.run(["get", "--background", "-C", cut, "-o", "cut.bin", "--json"])
                #expect(submit.status == 0, "\(submit.stderr)")
                let info = try #require(try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(submit.stdout.utf8)).first)
                // ferryd owns the part now: the foreground's record is gone.
                #expect(!FileManager.default.fileExists(atPath: directory + "/cut.bin.ferry-resume"))
                let wait = try await cli.run(["wait", String(info.taskIdentifier)])
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(try fileSHA256(directory + "/cut.bin") == bytesSHA256(size))
                #expect(!FileManager.default.fileExists(atPath: directory + "/cut.bin.ferry-part"))
                // Only the rest went: what the server sent in all is the file once (starting over would
                // be the file and the cut 600,000 bytes).
                let served = server.counters.bodyBytesSent(path: "/bytes/\(size)")
                #expect(served == Int64(size) + 600_000 - kept.int64Value, "\(served)")

                // Nothing to continue: said, and ferryd downloads it whole.
                let fresh = try await cli.run(["get", "--background", "-C", server.url("/bytes/1000"), "-o", "fresh.bin"])
                #expect(fresh.status == 0, "\(fresh.stderr)")
                #expect(fresh.stderr.contains("nothing to continue"), "\(fresh.stderr)")
                _ = try await cli.run(["wait", fresh.output])
                #expect(try fileSHA256(directory + "/fresh.bin") == bytesSHA256(1000))
            }
        }
    }
}
