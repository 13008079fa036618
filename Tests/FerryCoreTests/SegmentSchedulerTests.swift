import FerryCore
import Foundation
import Testing

@Suite struct SegmentSchedulerTests {
    @Test func aPlanSplitsEvenlyAndNeverBelowTheMinimum() {
        let plan = SegmentPlan(total: 10_000, connections: 4, minimumSegmentSize: 1000)
        #expect(plan.segments.map(\.start) == [0, 2500, 5000, 7500])
        #expect(plan.segments.map(\.end) == [2500, 5000, 7500, 10_000])
        #expect(plan.isConsistent)
        #expect(SegmentPlan(total: 2500, connections: 8, minimumSegmentSize: 1000).segments.count == 2)
        #expect(SegmentPlan(total: 10, connections: 8, minimumSegmentSize: 1000).segments.count == 1)
        #expect(SegmentPlan(total: 0, connections: 8, minimumSegmentSize: 1000).segments.map(\.end) == [0])
        let uneven = SegmentPlan(total: 10_001, connections: 3, minimumSegmentSize: 1)
        #expect(uneven.segments.last?.end == 10_001)
        #expect(uneven.isConsistent)
    }

    @Test func connectionsClaimUnstartedSegmentsFirst() {
        var scheduler = SegmentScheduler(
            plan: SegmentPlan(total: 4000, connections: 2, minimumSegmentSize: 1000),
            minimumSegmentSize: 1000
        )
        #expect(scheduler.claim() == .init(index: 0, start: 0, end: 2000))
        #expect(scheduler.claim() == .init(index: 1, start: 2000, end: 4000))
        #expect(scheduler.activeCount == 2)
        // Two segments of 2000 and a minimum of 1000: once a byte of each has arrived, no split leaves
        // both halves 1000.
        #expect(scheduler.accept(0, count: 1) == 1)
        #expect(scheduler.accept(1, count: 1) == 1)
        #expect(scheduler.claim() == nil)
    }

    @Test func anIdleConnectionTakesOverHalfOfTheBusiestSegment() throws {
        var scheduler = SegmentScheduler(
            plan: SegmentPlan(total: 1_000_000, connections: 2, minimumSegmentSize: 10_000),
            minimumSegmentSize: 10_000,
            alignment: 1000
        )
        let slow = try claimOrFail(&scheduler)
        let fast = try claimOrFail(&scheduler)
        #expect(scheduler.accept(fast.index, count: 500_000) == 500_000)
        scheduler.release(fast.index)
        #expect(scheduler.accept(slow.index, count: 100_000) == 100_000)
        // Segment 0 has 400,000 left from 100,000: the second half, from 300,000, goes to the idle one.
        let stolen = try claimOrFail(&scheduler)
        #expect(stolen == .init(index: 2, start: 300_000, end: 500_000))
        #expect(scheduler.end(of: slow.index) == 300_000)
        // The slow connection's bytes past its new end are not its own any more.
        #expect(scheduler.accept(slow.index, count: 250_000) == 200_000)
        #expect(scheduler.plan.segments[slow.index].isComplete)
        #expect(scheduler.plan.isConsistent)
        #expect(scheduler.plan.bytesReceived == 800_000)
    }

    @Test func splitsAreAlignedWhenBothHalvesStayLargeEnough() throws {
        var scheduler = SegmentScheduler(
            plan: SegmentPlan(total: 100_001, connections: 1, minimumSegmentSize: 1000),
            minimumSegmentSize: 1000
        )
        let only = try claimOrFail(&scheduler)
        _ = scheduler.accept(only.index, count: 3)
        let stolen = try claimOrFail(&scheduler)
        #expect(stolen.start % 4096 == 0)
        #expect(stolen.start > 3 + 1000)
        #expect(stolen.end == 100_001)
    }

    @Test func aReleasedUnfinishedSegmentIsClaimedAgainWhereItStopped() throws {
        var scheduler = SegmentScheduler(
            plan: SegmentPlan(total: 3000, connections: 3, minimumSegmentSize: 1000),
            minimumSegmentSize: 1000
        )
        let first = try claimOrFail(&scheduler)
        _ = scheduler.accept(first.index, count: 400)
        scheduler.release(first.index)
        let again = try claimOrFail(&scheduler)
        #expect(again == .init(index: 0, start: 400, end: 1000))
    }

    @Test func aPlanRoundTripsAndDamagedPlansAreRefused() throws {
        var scheduler = SegmentScheduler(
            plan: SegmentPlan(total: 9000, connections: 3, minimumSegmentSize: 1000),
            minimumSegmentSize: 1000
        )
        _ = scheduler.claim()
        _ = scheduler.accept(0, count: 123)
        let data = try JSONEncoder().encode(scheduler.plan)
        #expect(try JSONDecoder().decode(SegmentPlan.self, from: data) == scheduler.plan)

        let gap =
            #"{"total":9000,"segments":[{"start":0,"end":3000,"received":0},{"start":4000,"end":9000,"received":0}]}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(SegmentPlan.self, from: Data(gap.utf8)) }
        let overfull = #"{"total":10,"segments":[{"start":0,"end":10,"received":11}]}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(SegmentPlan.self, from: Data(overfull.utf8)) }
        #expect(SegmentPlan(total: 10, segments: [.init(start: 0, end: 5), .init(start: 4, end: 10)]) == nil)
    }

    @Test func resumeDataWithSegmentsIsVersionTwoAndChecked() throws {
        let plan = SegmentPlan(
            total: 5000,
            segments: [.init(start: 0, end: 2000, received: 2000), .init(start: 2000, end: 5000, received: 10)]
        )!
        let request = Request(url: URL(string: "http://127.0.0.1/file")!)
        let data = ResumeData(
            originalRequest: request,
            currentRequest: request,
            bytesReceived: 2010,
            expectedLength: 5000,
            entityTag: "\"v1\"",
            lastModified: nil,
            partialFilePath: "/tmp/x",
            segments: plan
        )
        #expect(data.version == 2)
        #expect(try ResumeData(encoded: data.encoded()) == data)
        var plain = data
        plain.segments = nil
        #expect(plain.version == 1)
        var lying = data
        lying.bytesReceived = 4000
        #expect(throws: FerryError.self) { try ResumeData(encoded: lying.encoded()) }
    }

    @Test func digestsParseAndRefuseBadValues() throws {
        let hex = String(repeating: "ab", count: 32)
        #expect(ContentDigest("sha256=\(hex.uppercased())")?.hex == hex)
        #expect(ContentDigest("SHA-256=\(hex)")?.algorithm == .sha256)
        #expect(ContentDigest("md5=\(String(repeating: "0", count: 32))")?.algorithm == .md5)
        #expect(ContentDigest("sha256=abc") == nil)
        #expect(ContentDigest("crc32=12345678") == nil)
        #expect(ContentDigest("sha256") == nil)
        #expect(ContentDigest("sha1=\(String(repeating: "g", count: 40))") == nil)
        let digest = try #require(ContentDigest(.sha512, hex: String(repeating: "1", count: 128)))
        #expect(try JSONDecoder().decode(ContentDigest.self, from: JSONEncoder().encode(digest)) == digest)
        let bad = #"{"algorithm":"sha256","hex":"zz"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ContentDigest.self, from: Data(bad.utf8)) }
    }

    @Test func requestsCarryDownloadOptionsAndValidateThem() throws {
        var request = Request(url: URL(string: "http://127.0.0.1/file")!)
        let plain = try JSONEncoder().encode(request)
        #expect(!String(decoding: plain, as: UTF8.self).contains("connections"))
        request.connections = 8
        request.minimumSegmentSize = 65536
        request.expectedDigest = ContentDigest("sha256=" + String(repeating: "0", count: 64))
        #expect(try JSONDecoder().decode(Request.self, from: JSONEncoder().encode(request)) == request)
        try request.validate()
        request.connections = 0
        #expect(throws: FerryError.self) { try request.validate() }
        request.connections = Request.maximumConnections + 1
        #expect(throws: FerryError.self) { try request.validate() }
        request.connections = 2
        request.minimumSegmentSize = 10
        #expect(throws: FerryError.self) { try request.validate() }
    }
}

/// The scheduler's next claim; a test failure when there is none.
private func claimOrFail(_ scheduler: inout SegmentScheduler) throws -> SegmentScheduler.Claim {
    let claim = scheduler.claim()
    return try #require(claim)
}
