import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Testing
import Synchronization

@Suite struct DownloaderTests {
    @Test func aDownloadIsExact() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let log = EventLog()
            let result = try await Downloader(transport: transport).download(
                request(server.url("/bytes/3000000?seed=1")),
                to: path,
                deadline: testDeadline,
                events: log.events
            )
            #expect(result.status == 200)
            #expect(result.length == 3_000_000)
            #expect(log.lastTotalWritten == 3_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(3_000_000, seed: 1))
        }
    }

    @Test func anInterruptedDownloadContinuesToTheExactBytes() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/4000000?seed=2&close_after=1500000&only_first=1&key=resume1")
            let downloader = Downloader(transport: transport)
            let error = try await failingDownload(downloader, url, to: path)
            #expect(error.code == .networkConnectionLost)
            let resumeData = try #require(error.resumeData)
            #expect(resumeData.bytesReceived > 0)
            #expect(resumeData.bytesReceived <= 1_500_000)
            #expect(resumeData.entityTag == "\"bytes-4000000-2-v0\"")

            let (result, resumedAt) = try await resumeDownload(downloader, resumeData, to: path)
            #expect(resumedAt == [resumeData.bytesReceived])
            #expect(result.status == 206)
            #expect(result.length == 4_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(4_000_000, seed: 2))
        }
    }

    @Test func resumeDataWorksFromDiskInAnotherDownloader() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/2000000?seed=3&close_after=700000&only_first=1&key=disk1")
            let error = try await failingDownload(Downloader(transport: transport), url, to: path)
            let stored = URL(fileURLWithPath: path + ".resume")
            try #require(error.resumeData).encoded().write(to: stored)

            // A new transport and downloader, as after a restart, reading the resume data from disk.
            let reread = try ResumeData(encoded: Data(contentsOf: stored))
            let fresh = try StandardTransport()
            defer { Task { try await fresh.shutdown() } }
            let newPath = try temporaryPath()
            let result = try await Downloader(transport: fresh).download(
                request(url),
                resumingFrom: reread,
                to: newPath,
                deadline: testDeadline
            )
            #expect(result.length == 2_000_000)
            #expect(try sha256(ofFile: newPath) == expectedSHA256(2_000_000, seed: 3))
            #expect(!FileManager.default.fileExists(atPath: path), "the partial file moved to the new place")
        }
    }

    @Test func aNewVersionStartsOverFromZero() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/1000000?seed=4&change_after=1&close_after=300000&only_first=1&key=v1")
            let downloader = Downloader(transport: transport)
            let error = try await failingDownload(downloader, url, to: path)
            let resumeData = try #require(error.resumeData)
            let (result, resumedAt) = try await resumeDownload(downloader, resumeData, to: path)
            #expect(resumedAt == [0])
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(1_000_000, seed: 4, version: 1))
        }
    }

    @Test func aServerIgnoringRangeRestartsCleanly() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/1000000?seed=5&ignore_range=1&close_after=400000&only_first=1&key=ir1")
            let downloader = Downloader(transport: transport)
            let error = try await failingDownload(downloader, url, to: path)
            // The cut is over; from now on the server answers every Range with the whole body.
            let ignoring = server.url("/bytes/1000000?seed=5&ignore_range=1&key=ir1")
            var resumeData = try #require(error.resumeData)
            resumeData.currentRequest = request(ignoring)
            let (result, resumedAt) = try await resumeDownload(downloader, resumeData, to: path)
            #expect(resumedAt == [0])
            #expect(result.length == 1_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(1_000_000, seed: 5))
        }
    }

    @Test func aLyingContentRangeIsNeverAppended() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/1000000?seed=6&bad_content_range=5&close_after=400000&only_first=1&key=cr1")
            let downloader = Downloader(transport: transport)
            let error = try await failingDownload(downloader, url, to: path)
            var resumeData = try #require(error.resumeData)
            // Every 206 of this URL claims other bytes than it sends.
            resumeData.currentRequest = request(server.url("/bytes/1000000?seed=6&bad_content_range=5"))
            let (result, resumedAt) = try await resumeDownload(downloader, resumeData, to: path)
            #expect(resumedAt == [0], "discarded and fetched again from the start")
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(1_000_000, seed: 6))
        }
    }

    @Test func aShortBodyIsAnErrorNeverASuccess() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let error = try await #require(throws: FerryError.self) {
                try await Downloader(transport: transport).download(
                    request(server.url("/bytes/500000?seed=7&short_by=1000")),
                    to: path,
                    deadline: testDeadline
                )
            }
            #expect(error.code == .networkConnectionLost)
            #expect(error.resumeData != nil)
        }
    }

    @Test func anErrorAnswerToAContinuationKeepsThePartialData() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/1000000?seed=8&close_after=200000&only_first=1&key=e1")
            let downloader = Downloader(transport: transport)
            let first = try await failingDownload(downloader, url, to: path)
            var resumeData = try #require(first.resumeData)
            resumeData.currentRequest = request(server.url("/bytes/1000000?seed=8&fail=1&fail_status=503&key=e2"))
            let second = try await #require(throws: FerryError.self) {
                try await downloader.download(
                    resumeData.currentRequest,
                    resumingFrom: resumeData,
                    to: path,
                    deadline: testDeadline
                )
            }
            #expect(second.code == .badServerResponse)
            #expect(second.resumeData == resumeData)
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
            #expect(size.map(Int64.init) == resumeData.bytesReceived, "no error page appended")
        }
    }

    @Test func aMissingPartialFileStartsOver() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/300000?seed=9")
            let resumeData = ResumeData(
                originalRequest: request(url),
                currentRequest: request(url),
                bytesReceived: 1000,
                expectedLength: 300_000,
                entityTag: "\"bytes-300000-9-v0\"",
                lastModified: nil,
                partialFilePath: path + ".gone"
            )
            let (result, resumedAt) = try await resumeDownload(Downloader(transport: transport), resumeData, to: path)
            #expect(resumedAt == [0])
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(300_000, seed: 9))
        }
    }

    @Test func redirectsAreFollowedOrRefused() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/redirect/3?mode=cross&to=/bytes/1000%3Fseed%3D1")
            let result = try await Downloader(transport: transport).download(
                request(url),
                to: path,
                deadline: testDeadline
            )
            #expect(result.redirectCount == 3)
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(1000, seed: 1))

            var refuse = Downloader.Events()
            refuse.willRedirect = { _, _, _ in nil }
            let refused = try await Downloader(transport: transport).download(
                request(url),
                to: path,
                deadline: testDeadline,
                events: refuse
            )
            #expect(refused.status == 302)
            #expect(refused.redirectCount == 0)

            var loop = Downloader(transport: transport)
            loop.maximumRedirects = 5
            let error = try await #require(throws: FerryError.self) {
                try await loop.download(request(server.url("/redirect-loop")), to: path, deadline: testDeadline)
            }
            #expect(error.code == .httpTooManyRedirects)
        }
    }

    @Test func cancellationLeavesResumeData() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            // The first answer is held at 300,000 bytes until the gate opens: the download is known to be
            // in progress when it is cancelled, however slow the machine (a throttled body once finished
            // before a loaded test got round to cancelling it).
            let url = server.url("/bytes/2000000?seed=10&stall_after=300000&gate=c1&only_first=1&key=c1")
            let downloader = Downloader(transport: transport)
            let log = EventLog()
            let task = Task {
                try await downloader.download(request(url), to: path, deadline: testDeadline, events: log.events)
            }
            let waitStart = ContinuousClock.now
            while log.lastTotalWritten < 100_000, ContinuousClock.now - waitStart < .seconds(60) {
                try await Task.sleep(for: .milliseconds(20))
            }
            task.cancel()
            defer { server.openGate("c1") }
            let error = try await #require(throws: FerryError.self) { try await task.value }
            #expect(error.code == .cancelled)
            let resumeData = try #require(error.resumeData)
            #expect(resumeData.bytesReceived > 0)
            let result = try await downloader.download(
                request(url),
                resumingFrom: resumeData,
                to: path,
                deadline: testDeadline
            )
            #expect(result.length == 2_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(2_000_000, seed: 10))
        }
    }

    @Test func aStalledServerTimesOutWithResumeData() async throws {
        try await TestServer.withServer { server in
            var options = StandardTransport.Options()
            // Short, but not so short that a loaded machine trips it on the healthy second attempt.
            options.idleTimeout = 3
            let transport = try StandardTransport(options: options)
            defer { Task { try await transport.shutdown() } }
            let path = try temporaryPath()
            // Held at a gate that never opens (a 9 s stall once ended first: a loaded run's starved reader
            // counts as paused, and a paused transfer's quiet is not idle).
            let url = server.url("/bytes/1000000?seed=11&stall_after=300000&gate=t1&only_first=1&key=t1")
            let error = try await failingDownload(Downloader(transport: transport), url, to: path)
            server.openGate("t1")
            #expect(error.code == .timedOut)
            let resumeData = try #require(error.resumeData)
            // The resume runs on a transport with the default idle timeout: the 3 s one is for the stall
            // above, and a loaded full run once starved the healthy second attempt past it.
            let healthy = try StandardTransport()
            defer { Task { try await healthy.shutdown() } }
            let result = try await Downloader(transport: healthy).download(
                request(url),
                resumingFrom: resumeData,
                to: path,
                deadline: testDeadline
            )
            #expect(result.length == 1_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(1_000_000, seed: 11))
        }
    }

    @Test func theResourceTimeoutEndsASlowDownload() async throws {
        try await withServerAndTransport { server, transport in
            let error = try await #require(throws: FerryError.self) {
                try await Downloader(transport: transport).download(
                    request(server.url("/bytes/1000000?throttle=100000")),
                    to: try temporaryPath(),
                    deadline: NIODeadline.now() + TimeAmount.milliseconds(700)
                )
            }
            #expect(error.code == .timedOut)
        }
    }

    @Test func errorsSayWhatHappened() async throws {
        let transport = try StandardTransport()
        defer { Task { try await transport.shutdown() } }
        // Port 1: nothing listens there (a freshly closed test server's port could be taken by another
        // test's server running in parallel, which made this test pass a download once).
        let port = 1
        let error = try await #require(throws: FerryError.self) {
            try await Downloader(transport: transport).download(
                request("http://127.0.0.1:\(port)/bytes/1"),
                to: try temporaryPath(),
                deadline: testDeadline
            )
        }
        #expect(error.code == .cannotConnectToHost)
        let bad = try await #require(throws: FerryError.self) {
            var injected = request("http://127.0.0.1:\(port)/")
            injected.headers["X-Evil"] = "a\r\nb: c"
            _ = try await Downloader(transport: transport).download(
                injected,
                to: try temporaryPath(),
                deadline: testDeadline
            )
        }
        #expect(bad.code == .invalidHeader)
    }
}

@Suite struct DownloaderTrustTests {
    @Test func anUntrustedCertificateIsNamedAsSuch() async throws {
        try await TestServer.withServer { server in
            // No extra trust roots: the test CA is unknown to this transport.
            let transport = try StandardTransport()
            defer { Task { try await transport.shutdown() } }
            let path = try temporaryPath()
            let error = try await failingDownload(
                Downloader(transport: transport),
                server.url("/bytes/1000", on: .tls),
                to: path
            )
            #expect(error.code == .serverCertificateUntrusted)
            #expect(error.resumeData == nil)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func aRangePastTheEndIsRefetchedWhole() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/100000?seed=12")
            let downloader = Downloader(transport: transport)
            let first = try await downloader.download(request(url), to: path, deadline: testDeadline)
            // Resume data that claims more than the resource has: the server answers 416.
            try Data(repeating: 0xEE, count: 150_000).write(to: URL(fileURLWithPath: path))
            let claims = ResumeData(
                originalRequest: request(url),
                currentRequest: request(url),
                bytesReceived: 150_000,
                expectedLength: 150_000,
                entityTag: first.headers["etag"],
                lastModified: first.headers["last-modified"],
                partialFilePath: path
            )
            let second = try await downloader.download(
                request(url),
                resumingFrom: claims,
                to: path,
                deadline: testDeadline
            )
            #expect(second.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(100_000, seed: 12))
        }
    }

    @Test func aRequestForARangeOrWithABodyIsNeverContinuedByRange() async throws {
        try await withServerAndTransport { server, transport in
            let whole = DeterministicBytes(seed: 13).bytes(offset: 0, count: 10_000)
            // Resume data of an earlier try that got 50 bytes: a continuation would ask for bytes=50-,
            // which contradicts the request's own range (and a body would not be sent again; the test
            // server's /bytes takes GET only, so the body goes with a GET here).
            for body in [nil, ByteBuffer(string: "q=1")] {
                let path = try temporaryPath()
                var ranged = request(server.url("/bytes/10000?seed=13"))
                ranged.headers["Range"] = "bytes=100-199"
                try Data(repeating: 0xEE, count: 50).write(to: URL(fileURLWithPath: path))
                let earlier = ResumeData(
                    originalRequest: ranged,
                    currentRequest: ranged,
                    bytesReceived: 50,
                    expectedLength: 100,
                    entityTag: "\"x\"",
                    lastModified: nil,
                    partialFilePath: path
                )
                var downloader = Downloader(transport: transport)
                downloader.requestBody = body
                let result = try await downloader.download(ranged, resumingFrom: earlier, to: path, deadline: testDeadline)
                #expect(result.status == 206)
                #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == Array(whole[100..<200]))
            }
        }
    }
}

/// D1 when the disk is slower than the network: a checkpoint that falls due while the previous one's
/// sync runs is made durable after it, not dropped; a body that then pauses has its bytes recorded.
@Suite struct DownloaderCheckpointTests {
    @Test func aCheckpointDueDuringASlowSyncIsRecordedWhenTheBodyPauses() async throws {
        try await withServerAndTransport { server, transport in
            let recorded = Mutex<Int64>(0)
            var events = Downloader.Events()
            // Each record takes 200 ms (a slow disk): the first 1 MB arrives long before the first is done.
            events.checkpoint = Downloader.Checkpoint(everyBytes: 64 * 1024, everySeconds: 1000) { data in
                usleep(200_000)
                recorded.withLock { $0 = max($0, data.bytesReceived) }
            }
            let path = try temporaryPath()
            let download = Task {
                try await Downloader(transport: transport).download(
                    request(server.url("/bytes/3000000?seed=9&stall_after=1000000&gate=pause")),
                    to: path,
                    deadline: testDeadline,
                    events: events
                )
            }
            // The body pauses at 1 MB: the checkpoint that fell due last still lands, within an interval.
            let end = Date().addingTimeInterval(60)
            while recorded.withLock({ $0 }) < 1_000_000 - 64 * 1024, Date() < end {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(recorded.withLock { $0 } >= 1_000_000 - 64 * 1024)
            server.openGate("pause")
            let result = try await download.value
            #expect(result.length == 3_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(3_000_000, seed: 9))
        }
    }
}
