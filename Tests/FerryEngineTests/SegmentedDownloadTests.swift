import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization
import Testing

/// A transport that records the Range header and status of every exchange.
final class RecordingTransport: HTTPTransport {
    struct Exchange: Sendable {
        var range: String?
        var status: Int
    }

    private let base: any HTTPTransport
    private let log = Mutex<[Exchange]>([])

    init(_ base: any HTTPTransport) { self.base = base }

    var exchanges: [Exchange] { log.withLock { $0 } }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let response = try await base.send(request, deadline: deadline)
        log.withLock { $0.append(Exchange(range: request.headers["range"], status: response.status)) }
        return response
    }

    func shutdown() async throws {}

    var enforcesDeadlineOverBody: Bool { base.enforcesDeadlineOverBody }
}

/// A request for several connections.
func segmented(_ url: String, connections: Int, minimumSegmentSize: Int64 = 64 << 10) -> Request {
    var request = request(url)
    request.connections = connections
    request.minimumSegmentSize = minimumSegmentSize
    return request
}

@Suite struct SegmentedDownloadTests {
    @Test func eightConnectionsFetchTheExactBytes() async throws {
        try await withServerAndTransport { server, base in
            let transport = RecordingTransport(base)
            let path = try temporaryPath()
            let log = EventLog()
            let result = try await Downloader(transport: transport).download(
                segmented(server.url("/bytes/3000000?seed=41"), connections: 8),
                to: path,
                deadline: testDeadline,
                events: log.events
            )
            #expect(result.status == 200)
            #expect(result.headers.contentLength == 3_000_000)
            #expect(result.headers["content-range"] == nil)
            #expect(result.length == 3_000_000)
            #expect(log.lastTotalWritten == 3_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(3_000_000, seed: 41))
            let exchanges = transport.exchanges
            #expect(exchanges.first?.range == "bytes=0-")
            #expect(exchanges.count >= 8)
            #expect(exchanges.allSatisfy { $0.status == 206 })
            #expect(Set(exchanges.compactMap(\.range)).count == exchanges.count)
        }
    }

    @Test func aServerWithoutRangesIsReadOverOneConnection() async throws {
        try await withServerAndTransport { server, base in
            let transport = RecordingTransport(base)
            let path = try temporaryPath()
            let result = try await Downloader(transport: transport).download(
                segmented(server.url("/bytes/1000000?seed=42&ignore_range=1"), connections: 4),
                to: path,
                deadline: testDeadline
            )
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(1_000_000, seed: 42))
            #expect(transport.exchanges.count == 1)
        }
    }

    @Test func aSmallOrEmptyResourceNeedsNoSecondConnection() async throws {
        try await withServerAndTransport { server, base in
            let transport = RecordingTransport(base)
            let downloader = Downloader(transport: transport)
            let small = try temporaryPath()
            let result = try await downloader.download(
                segmented(server.url("/bytes/100000?seed=43"), connections: 4),
                to: small,
                deadline: testDeadline
            )
            #expect(result.status == 200)
            #expect(result.headers.contentLength == 100_000)
            #expect(try sha256(ofFile: small) == expectedSHA256(100_000, seed: 43))
            #expect(transport.exchanges.count == 1)

            let empty = try temporaryPath()
            let nothing = try await downloader.download(
                segmented(server.url("/bytes/0"), connections: 4),
                to: empty,
                deadline: testDeadline
            )
            #expect(nothing.status == 200)
            #expect(nothing.length == 0)
        }
    }

    @Test func anIdleConnectionTakesOverTheSlowSegmentsTail() async throws {
        try await withServerAndTransport { server, base in
            let transport = RecordingTransport(base)
            let path = try temporaryPath()
            // Only the first request (the first segment's) is held, after 100 kB, until a takeover of its
            // tail has started: no clock decides, however loaded the machine.
            let url = server.url("/bytes/2000000?seed=44&stall_after=100000&gate=steal1&only_first=1&key=steal1")
            let takeover = Task {
                let end = Date().addingTimeInterval(60)
                while Date() < end {
                    if transport.exchanges.compactMap({ $0.range.flatMap(Self.start) }).contains(where: { $0 > 0 && $0 < 500_000 }) {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                server.openGate("steal1")
            }
            defer { takeover.cancel() }
            let result = try await Downloader(transport: transport).download(
                segmented(url, connections: 4, minimumSegmentSize: 16 << 10),
                to: path,
                deadline: testDeadline
            )
            try await takeover.value
            #expect(result.length == 2_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(2_000_000, seed: 44))
            let starts = transport.exchanges.compactMap { $0.range.flatMap(Self.start) }
            // The first segment is bytes 0..<500,000: a range starting inside it is a takeover.
            #expect(starts.contains { $0 > 0 && $0 < 500_000 })
        }
    }

    @Test func aCutConnectionIsRetriedAndTheFileIsExact() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/2000000?seed=45&close_after=100000&only_first=3&key=cut1")
            let result = try await Downloader(transport: transport).download(
                segmented(url, connections: 4),
                to: path,
                deadline: testDeadline
            )
            #expect(result.length == 2_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(2_000_000, seed: 45))
        }
    }

    @Test func aCancelledDownloadContinuesFromItsSegments() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/2000000?seed=46&throttle=400000&only_first=4&key=cancel1")
            let downloader = Downloader(transport: transport)
            let written = Mutex<Int64>(0)
            var events = Downloader.Events()
            // Past 300 kB the gate closes (as a suspend does), so the cancel below lands mid-download
            // however late it comes on a loaded machine.
            let gate = TransferGate()
            events.gate = gate
            events.didWrite = { _, total, _ in
                written.withLock { $0 = total }
                if total >= 300_000 { gate.close() }
            }
            let download = Task {
                try await downloader.download(
                    segmented(url, connections: 4),
                    to: path,
                    deadline: testDeadline,
                    events: events
                )
            }
            while written.withLock({ $0 }) < 300_000 { try await Task.sleep(for: .milliseconds(20)) }
            download.cancel()
            let error = try await #require(throws: FerryError.self) { try await download.value }
            let resumeData = try #require(error.resumeData)
            let plan = try #require(resumeData.segments)
            #expect(plan.segments.count >= 4)
            #expect(plan.bytesReceived == resumeData.bytesReceived)
            #expect(resumeData.bytesReceived >= 300_000)
            #expect(!plan.isComplete)

            // From disk, in a new downloader: each segment continues where it stopped.
            let reread = try ResumeData(encoded: resumeData.encoded())
            let (result, resumedAt) = try await resumeDownload(Downloader(transport: transport), reread, to: path)
            #expect(resumedAt == [resumeData.bytesReceived])
            #expect(result.status == 200)
            #expect(try sha256(ofFile: path) == expectedSHA256(2_000_000, seed: 46))
        }
    }

    @Test func aSingleConnectionPartialContinuesOverSeveral() async throws {
        try await withServerAndTransport { server, base in
            let path = try temporaryPath()
            let url = server.url("/bytes/2000000?seed=47&close_after=600000&only_first=1&key=single1")
            let error = try await failingDownload(Downloader(transport: base), url, to: path)
            var resumeData = try #require(error.resumeData)
            #expect(resumeData.segments == nil)
            resumeData.originalRequest.connections = 4
            resumeData.originalRequest.minimumSegmentSize = 64 << 10
            let transport = RecordingTransport(base)
            let (result, resumedAt) = try await resumeDownload(Downloader(transport: transport), resumeData, to: path)
            #expect(resumedAt == [resumeData.bytesReceived])
            #expect(try sha256(ofFile: path) == expectedSHA256(2_000_000, seed: 47))
            #expect(result.length == 2_000_000)
            #expect(transport.exchanges.count >= 2)
            #expect(transport.exchanges.contains { $0.range?.hasPrefix("bytes=\(resumeData.bytesReceived)-") == true })
        }
    }

    @Test func aResourceThatChangesStartsOverCleanly() async throws {
        try await withServerAndTransport { server, base in
            // Version 0 for requests 1–8 of this key, version 1 for 9–16: the resumed download sees one
            // change however many requests it makes. (With versions of three requests, a loaded run made a
            // seventh request, met version 2 and failed as "changed twice".)
            let url = server.url("/bytes/262144?seed=48&change_after=8&key=change1")
            let warmUp = try temporaryPath()
            for _ in 0..<8 {
                _ = try await Downloader(transport: base).download(request(url), to: warmUp, deadline: testDeadline)
            }
            // Resume data of version 0: the first segment complete, the second barely started.
            let path = try temporaryPath()
            let old = DeterministicBytes(seed: 48, version: 0).bytes(offset: 0, count: 262_144)
            try Data(old).write(to: URL(fileURLWithPath: path))
            var original = segmented(url, connections: 2, minimumSegmentSize: 131_072)
            original.headers["X-Test"] = "1"
            let plan = try #require(
                SegmentPlan(
                    total: 262_144,
                    segments: [
                        .init(start: 0, end: 131_072, received: 131_072),
                        .init(start: 131_072, end: 262_144, received: 1000),
                    ]
                )
            )
            let resumeData = ResumeData(
                originalRequest: original,
                currentRequest: original,
                bytesReceived: plan.bytesReceived,
                expectedLength: 262_144,
                entityTag: "\"bytes-262144-48-v0\"",
                lastModified: nil,
                partialFilePath: path,
                segments: plan
            )
            let (result, resumedAt) = try await resumeDownload(Downloader(transport: base), resumeData, to: path)
            #expect(resumedAt == [plan.bytesReceived, 0])
            #expect(result.headers["etag"] == "\"bytes-262144-48-v1\"")
            #expect(try sha256(ofFile: path) == expectedSHA256(262_144, seed: 48, version: 1))
        }
    }

    @Test func aResourceThatKeepsChangingFailsWithoutClaimingSuccess() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let url = server.url("/bytes/1000000?seed=49&change_after=1&key=change2")
            let error = try await #require(throws: FerryError.self) {
                try await Downloader(transport: transport).download(
                    segmented(url, connections: 4),
                    to: path,
                    deadline: testDeadline
                )
            }
            #expect(error.code == .badServerResponse)
            #expect(error.message.contains("changed"))
        }
    }

    @Test func anExpectedDigestIsVerified() async throws {
        try await withServerAndTransport { server, transport in
            let downloader = Downloader(transport: transport)
            for connections in [1, 4] {
                var good = segmented(server.url("/bytes/1000000?seed=50"), connections: connections)
                good.expectedDigest = ContentDigest("sha256=" + expectedSHA256(1_000_000, seed: 50))
                let path = try temporaryPath()
                _ = try await downloader.download(good, to: path, deadline: testDeadline)

                var bad = good
                bad.expectedDigest = ContentDigest("sha256=" + expectedSHA256(1_000_000, seed: 51))
                let kept = try temporaryPath()
                let error = try await #require(throws: FerryError.self) {
                    try await downloader.download(bad, to: kept, deadline: testDeadline)
                }
                #expect(error.code == .checksumMismatch)
                #expect(error.message.contains(kept))
                #expect(try sha256(ofFile: kept) == expectedSHA256(1_000_000, seed: 50))
            }
            // Other algorithms, computed the same way.
            let path = try temporaryPath()
            try Data("abc".utf8).write(to: URL(fileURLWithPath: path))
            #expect(
                try await DigestVerifier.digest(ofFile: path, algorithm: .md5) == "900150983cd24fb0d6963f7d28e17f72"
            )
            #expect(
                try await DigestVerifier.digest(ofFile: path, algorithm: .sha1)
                    == "a9993e364706816aba3e25717850c26c9cd0d89d"
            )
        }
    }

    @Test func aCheckpointRecordsEverySegmentsProgress() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let records = Mutex<[ResumeData]>([])
            var events = Downloader.Events()
            events.checkpoint = Downloader.Checkpoint(everyBytes: 200_000, everySeconds: 0.05) { data in
                records.withLock { $0.append(data) }
            }
            // Two seconds at 250 kB/s a connection: time for several checkpoints even when syncs are slow.
            let url = server.url("/bytes/2000000?seed=52&throttle=250000")
            _ = try await Downloader(transport: transport).download(
                segmented(url, connections: 4),
                to: path,
                deadline: testDeadline,
                events: events
            )
            let recorded = records.withLock { $0 }
            #expect(recorded.count >= 2)
            #expect(recorded.allSatisfy { $0.segments != nil && $0.segments!.bytesReceived == $0.bytesReceived })
            #expect(zip(recorded, recorded.dropFirst()).allSatisfy { $0.bytesReceived <= $1.bytesReceived })
        }
    }

    private static func start(_ range: String) -> Int64? {
        guard range.hasPrefix("bytes=") else { return nil }
        return Int64(range.dropFirst(6).prefix { $0 != "-" })
    }
}
