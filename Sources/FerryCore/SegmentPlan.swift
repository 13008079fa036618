/// How one download is split into byte ranges fetched over several connections (SPEC S10.2), and how much
/// of each range is on disk. A plain value: it travels in ``ResumeData`` and in ferryd's database, so each
/// segment resumes on its own after a failure, a cancellation or a restart.
///
/// The segments tile the resource: sorted by ``Segment/start`` they cover `0..<total` with no gap and no
/// overlap. Each has its first ``Segment/received`` bytes in the file.
public struct SegmentPlan: Sendable, Hashable, Codable {
    /// One byte range and its progress.
    public struct Segment: Sendable, Hashable, Codable {
        /// The first byte.
        public var start: Int64
        /// One past the last byte.
        public var end: Int64
        /// Bytes of the range already in the file, from ``start``.
        public var received: Int64

        /// A segment of `start..<end` with `received` bytes on disk.
        public init(start: Int64, end: Int64, received: Int64 = 0) {
            self.start = start
            self.end = end
            self.received = received
        }

        /// The next byte to fetch.
        public var next: Int64 { start + received }
        /// Bytes still to fetch.
        public var remaining: Int64 { end - next }
        /// Whether every byte of the range is on disk.
        public var isComplete: Bool { next >= end }
    }

    /// The resource's length in bytes.
    public private(set) var total: Int64
    /// The segments, in the order they were made (not necessarily sorted).
    public internal(set) var segments: [Segment]

    /// Splits `total` bytes into `connections` equal segments, fewer when a segment would be smaller than
    /// `minimumSegmentSize` (at least one).
    public init(total: Int64, connections: Int, minimumSegmentSize: Int64) {
        precondition(total >= 0, "a resource cannot have a negative length")
        let count = Int64(max(1, min(Int64(max(connections, 1)), total / max(minimumSegmentSize, 1))))
        let size = total / count
        var segments: [Segment] = []
        var start: Int64 = 0
        for index in 0..<count {
            let end = index == count - 1 ? total : start + size
            segments.append(Segment(start: start, end: end))
            start = end
        }
        self.total = total
        self.segments = segments
    }

    /// A plan of given segments, checked: nil unless they tile `0..<total` and each has received no more
    /// than its length (damaged resume data, or a database from elsewhere).
    public init?(total: Int64, segments: [Segment]) {
        self.total = total
        self.segments = segments
        guard isConsistent else { return nil }
    }

    /// Bytes on disk, all segments together.
    public var bytesReceived: Int64 { segments.reduce(0) { $0 + $1.received } }

    /// Whether every byte of the resource is on disk.
    public var isComplete: Bool { segments.allSatisfy(\.isComplete) }

    /// Whether the segments tile `0..<total` and their progress is within their bounds.
    public var isConsistent: Bool {
        guard total >= 0, !segments.isEmpty else { return false }
        var position: Int64 = 0
        for segment in segments.sorted(by: { $0.start < $1.start }) {
            guard segment.start == position, segment.end >= segment.start, segment.received >= 0,
                segment.received <= segment.end - segment.start
            else { return false }
            position = segment.end
        }
        return position == total
    }

    private enum CodingKeys: String, CodingKey { case total, segments }

    /// Decodes a plan, refusing one whose segments do not tile the resource.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.total = try container.decode(Int64.self, forKey: .total)
        self.segments = try container.decode([Segment].self, forKey: .segments)
        guard isConsistent else {
            throw DecodingError.dataCorruptedError(
                forKey: .segments,
                in: container,
                debugDescription: "the segments do not cover 0..<\(total) exactly once"
            )
        }
    }
}
