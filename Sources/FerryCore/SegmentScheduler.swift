/// Who fetches which bytes of a segmented download: the state machine of its connections, without I/O.
///
/// A connection ``claim()``s work: a segment no connection holds, or, when none is left, the second half
/// of the busiest segment (work stealing, so the tail of a download does not run on one slow
/// connection). It reports bytes with ``accept(_:count:)``, which says how many of them still belong to
/// the segment (its end moves when another connection takes over part of it), and ``release(_:)``s the
/// segment when it stops, finished or not. No segment is split below ``minimumSegmentSize``.
public struct SegmentScheduler: Sendable {
    /// What a connection is to fetch.
    public struct Claim: Sendable, Hashable {
        /// The segment's index in ``SegmentPlan/segments``.
        public var index: Int
        /// The first byte to ask for.
        public var start: Int64
        /// One past the last byte to ask for (the segment's end when claimed; it may move down later).
        public var end: Int64

        /// A claim of bytes `start..<end` of segment `index`.
        public init(index: Int, start: Int64, end: Int64) {
            self.index = index
            self.start = start
            self.end = end
        }
    }

    /// The plan and its progress.
    public private(set) var plan: SegmentPlan
    /// No split makes a segment with fewer bytes left than this.
    public let minimumSegmentSize: Int64
    /// Split points are rounded down to a multiple of this, when that keeps both halves large enough.
    public let alignment: Int64
    private var active: Set<Int> = []

    /// A scheduler over `plan`, no segment claimed.
    public init(plan: SegmentPlan, minimumSegmentSize: Int64, alignment: Int64 = 4096) {
        self.plan = plan
        self.minimumSegmentSize = max(1, minimumSegmentSize)
        self.alignment = max(1, alignment)
    }

    /// Segments held by a connection.
    public var activeCount: Int { active.count }

    /// Whether every byte is on disk.
    public var isComplete: Bool { plan.isComplete }

    /// The current end of a segment (it moves down when part of it is taken over).
    public func end(of index: Int) -> Int64 { plan.segments[index].end }

    /// Work for an idle connection: the unclaimed unfinished segment that starts first; else the second
    /// half of the claimed segment with the most bytes left, if both halves keep at least
    /// ``minimumSegmentSize``; else nil (the connection is done).
    public mutating func claim() -> Claim? {
        let waiting = plan.segments.indices.filter { !active.contains($0) && !plan.segments[$0].isComplete }
        if let index = waiting.min(by: { plan.segments[$0].start < plan.segments[$1].start }) {
            return claim(index)
        }
        guard
            let busiest = active.max(by: { plan.segments[$0].remaining < plan.segments[$1].remaining }),
            plan.segments[busiest].remaining >= 2 * minimumSegmentSize
        else { return nil }
        let victim = plan.segments[busiest]
        var split = victim.next + victim.remaining / 2
        let aligned = split / alignment * alignment
        if aligned - victim.next >= minimumSegmentSize { split = aligned }
        plan.segments[busiest].end = split
        plan.segments.append(SegmentPlan.Segment(start: split, end: victim.end))
        return claim(plan.segments.count - 1)
    }

    /// Claims a given segment (the first connection's, whose response is already arriving).
    /// - Precondition: the segment is not claimed.
    public mutating func claim(_ index: Int) -> Claim {
        precondition(!active.contains(index), "segment \(index) is already claimed")
        active.insert(index)
        let segment = plan.segments[index]
        return Claim(index: index, start: segment.next, end: segment.end)
    }

    /// Records that `count` bytes arrived for segment `index` at its next byte; returns how many of them
    /// are within the segment (the rest belong to a segment another connection took over, and are
    /// dropped).
    public mutating func accept(_ index: Int, count: Int64) -> Int64 {
        let taken = max(0, min(count, plan.segments[index].remaining))
        plan.segments[index].received += taken
        return taken
    }

    /// The connection stopped working on segment `index` (finished, failed or cancelled); an unfinished
    /// segment can be claimed again.
    public mutating func release(_ index: Int) {
        active.remove(index)
    }
}
