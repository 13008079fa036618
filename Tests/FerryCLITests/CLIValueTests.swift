import FerryCLI
import FerryCore
import Foundation
import Testing

@Suite struct ByteFormatTests {
    @Test func bytesUseDecimalUnits() {
        #expect(ByteFormat.bytes(0) == "0 B")
        #expect(ByteFormat.bytes(999) == "999 B")
        #expect(ByteFormat.bytes(1_023) == "1023 B")
        #expect(ByteFormat.bytes(1_536) == "1.5 KiB")
        #expect(ByteFormat.bytes(1_073_741_824) == "1.0 GiB")
        #expect(ByteFormat.bytes(250 << 20) == "250 MiB")
    }

    @Test func durations() {
        #expect(ByteFormat.duration(nil) == "-")
        #expect(ByteFormat.duration(45) == "45s")
        #expect(ByteFormat.duration(185) == "3m05s")
        #expect(ByteFormat.duration(7260) == "2h01m")
    }

    @Test func ratesParseAsCurlDoes() {
        #expect(ByteFormat.parseRate("500") == 500)
        #expect(ByteFormat.parseRate("500K") == 512_000)
        #expect(ByteFormat.parseRate("2m") == Int64(2_097_152))
        #expect(ByteFormat.parseRate("1.5MB/s") == 1_572_864)
        // What ferry prints reads back as the same rate.
        #expect(ByteFormat.parseRate("1.5 MiB/s") == 1_572_864)
        #expect(ByteFormat.parseRate("500KiB") == 512_000)
        let five: Int64 = 5 << 20
        #expect(ByteFormat.rate(Double(five)) == "5.0 MiB/s")
        #expect(ByteFormat.parseRate(ByteFormat.rate(Double(five))) == five)
        #expect(ByteFormat.parseRate("0") == nil)
        #expect(ByteFormat.parseRate("-3K") == nil)
        #expect(ByteFormat.parseRate("fast") == nil)
        #expect(ByteFormat.parseRate("1e30G") == nil)
    }
}

@Suite struct ProgressLineTests {
    @Test func plainLinesSayBytesPercentRateAndETA() {
        let line = ProgressLine(name: "a.iso", done: 4_404_020, total: 10_485_760, rate: 1_048_576)
        #expect(line.plain == "a.iso: 4.2 MiB of 10.0 MiB (42%) at 1.0 MiB/s, ETA 6s")
        let unknown = ProgressLine(name: "x", done: 2_048, total: nil, rate: 0)
        #expect(unknown.plain == "x: 2.0 KiB at 0 B/s")
    }

    @Test func barsFitTheirWidth() {
        let line = ProgressLine(name: String(repeating: "n", count: 200), done: 50, total: 100, rate: 10)
        for width in [40, 80, 132] {
            let bar = line.bar(width: width)
            #expect(bar.count <= width)
            #expect(bar.contains("50%"))
            // Room for a bar from 80 columns on; narrower terminals keep the figures.
            #expect(bar.contains(" 50% [") == (width >= 80))
        }
    }
}

@Suite struct RemoteNameTests {
    @Test func namesComeFromTheURLsLastComponent() throws {
        #expect(
            RemoteName.fromURL(try #require(URL(string: "http://h/a/b/file%20one.tar.gz?x=1"))) == "file one.tar.gz"
        )
        #expect(RemoteName.fromURL(try #require(URL(string: "http://h/"))) == "index.html")
        #expect(RemoteName.fromURL(try #require(URL(string: "http://h/a/..%2F..%2Fetc%2Fpasswd"))) == "passwd")
    }

    @Test func contentDispositionNamesAreMadeSafe() throws {
        let names = [
            "attachment; filename=\"../../.bashrc\"", "attachment; filename=\"/etc/passwd\"",
            "attachment; filename=\"..\"", "attachment; filename=\"a\\\\..\\\\b.txt\"",
            "attachment; filename=\"x.iso.ferry-part\"", "attachment", "inline; filename=\"report.pdf\"",
        ].map { RemoteName.fromContentDisposition(["Content-Disposition": $0]) }
        #expect(names == ["bashrc", "passwd", nil, "b.txt", nil, nil, "report.pdf"])
    }
}

@Suite struct TaskTableTests {
    func task(
        _ identifier: Int,
        _ state: BackgroundTaskInfo.State,
        status: Int? = nil,
        error: FerryError? = nil
    )
        -> BackgroundTaskInfo
    {
        BackgroundTaskInfo(
            session: "s",
            taskIdentifier: identifier,
            kind: .download,
            state: state,
            originalRequest: Request(url: URL(string: "http://h/\(identifier)")!),
            bytesReceived: 500,
            expectedLength: 1000,
            statusCode: status,
            error: error,
            destination: "/tmp/\(identifier)"
        )
    }

    @Test func completedTasksAreDoneOrFailed() {
        #expect(TaskTable.state(task(1, .completed, status: 200)) == "completed")
        #expect(TaskTable.state(task(2, .completed, status: 404)) == "failed")
        #expect(TaskTable.state(task(3, .completed, error: FerryError(.timedOut, "slow"))) == "failed")
        // Cancelled is not failed (issue 41: `ferry ls` called a cancelled task failed).
        #expect(TaskTable.state(task(6, .completed, error: FerryError(.cancelled, "the task was cancelled"))) == "cancelled")
        #expect(TaskTable.state(task(4, .running)) == "running")
        #expect(!TaskTable.succeeded(task(5, .running)))
    }

    @Test func rowsLineUpUnderTheHeader() {
        let lines = TaskTable.render([task(1, .running), task(12, .completed, status: 200)])
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("ID  STATE"))
        #expect(lines[1].contains("500 B/1000 B 50%"))
        let column = lines[0].range(of: "TARGET")!.lowerBound.utf16Offset(in: lines[0])
        #expect(lines[2].dropFirst(column).hasPrefix("/tmp/12"))
    }
}

@Suite struct ExitStatusTests {
    @Test func errorsMapToDocumentedStatuses() {
        #expect(ExitStatus.of(FerryError(.badURL, "")) == .usage)
        #expect(ExitStatus.of(FerryError(.cannotWriteToFile, "")) == .localFile)
        #expect(ExitStatus.of(FerryError(.cannotConnectToHost, "")) == .transferFailed)
        #expect(ExitStatus.of(FerryError(.backgroundSessionWasDisconnected, "")) == .daemon)
        let statuses: [Int32] = ExitStatus.allCases.map(\.rawValue)
        #expect(statuses == [0, 1, 2, 3, 4, 5, 23, 130])
    }
}

@Suite struct ResumeRecordTests {
    func record(boot: String?, written: Int64, durable: Int64) -> ResumeRecordProbe.Record {
        ResumeRecordProbe.make(bootID: boot, written: written, durable: durable)
    }

    @Test func writtenBytesAreTrustedOnTheSameBootOnly() throws {
        let same = try #require(ResumeRecordProbe.currentBootID)
        #expect(record(boot: same, written: 900, durable: 100).trustedBytes == 900)
        // After a restart only what was synced counts; nothing synced: start over.
        #expect(record(boot: "another-boot", written: 900, durable: 100).trustedBytes == 100)
        #expect(record(boot: "another-boot", written: 900, durable: 0).trustedBytes == nil)
        #expect(record(boot: nil, written: 900, durable: 300).trustedBytes == 300)
    }
}

@Suite struct WriteOutTests {
    @Test func formatsParseWithCurlsEscapes() throws {
        let format = try WriteOut("code=%{http_code}\\t100%%\\n%{url_effective}")
        #expect(format.pieces == [.text("code="), .variable("http_code"), .text("\t100%\n"), .variable("url_effective")])
        #expect(throws: CLIFailure.self) { try WriteOut("%{http_code") }
        #expect(throws: CLIFailure.self) { try WriteOut("%{size}") }
        // A lone % or backslash is text.
        #expect(try WriteOut("50% \\q").pieces == [.text("50% \\q")])
    }

    @Test func addressesSplitAsCurlsRemoteIPAndPort() {
        #expect(WriteOut.Values.split("127.0.0.1:8080") == ("127.0.0.1", 8080))
        #expect(WriteOut.Values.split("[::1]:443") == ("::1", 443))
        #expect(WriteOut.Values.split(nil) == ("", 0))
    }
}
