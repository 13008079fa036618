import Synchronization

/// A running transfer's byte count and when progress was last sent, shared between the transfer (which
/// adds) and the scheduler (which reads it for the throughput floor). Lock-free counter; the rate limit
/// of progress events is a compare-and-swap on the time of the last one.
final class ProgressMeter: Sendable {
    private let bytes = Atomic<Int64>(0)
    private let lastEmit = Atomic<Int64>(0)
    private let minimumInterval: Int64

    /// A meter that lets through at most `rate` progress events a second.
    init(rate: Double) {
        minimumInterval = rate > 0 ? Int64(1e9 / rate) : 0
    }

    /// Bytes moved so far by this run of the transfer.
    var total: Int64 { bytes.load(ordering: .relaxed) }

    /// Adds moved bytes.
    func add(_ count: Int64) {
        bytes.add(count, ordering: .relaxed)
    }

    /// Whether a progress event may be sent at `now` (nanoseconds on a monotonic clock).
    func shouldEmit(now: Int64) -> Bool {
        let last = lastEmit.load(ordering: .relaxed)
        guard now - last >= minimumInterval else { return false }
        return lastEmit.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
    }
}
