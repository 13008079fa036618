import FerryQUIC
import Testing

@testable import FerryEngine

/// How ``HTTP3Connection`` hands datagrams to the socket.
@Suite struct HTTP3ConnectionTests {
    static func datagrams(_ sizes: [Int]) -> [[UInt8]] { sizes.map { [UInt8](repeating: 0, count: $0) } }

    /// With GSO, full-sized datagrams go together, a shorter one ending its run (the kernel cuts a
    /// write into full segments and a shorter last one), at most 48 a write; without, one a write.
    @Test func fullDatagramsAreWrittenTogetherWithSegmentationOffload() {
        let full = QUICClientConnection.packetSize
        let sizes = [full, full, full, 300, 60, full, full] + Array(repeating: full, count: 100) + [full - 1]
        let runs = HTTP3Connection.segmentRuns(Self.datagrams(sizes), offload: true)
        #expect(runs.prefix(3) == [0..<4, 4..<5, 5..<53])
        #expect(runs.flatMap { Array($0) } == Array(sizes.indices))
        for run in runs {
            #expect(run.count <= HTTP3Connection.segmentsPerWrite)
            // Every datagram but a run's last is full-sized.
            #expect(run.dropLast().allSatisfy { sizes[$0] == full }, "\(run)")
        }
        #expect(HTTP3Connection.segmentRuns(Self.datagrams(sizes), offload: false).allSatisfy { $0.count == 1 })
    }
}
