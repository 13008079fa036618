import Synchronization

/// A running transfer's byte count and when progress was last sent, shared between the transfer (which
/// adds) and the scheduler (which reads it for the throughput floor and the live listing). Lock-free
/// counters; the rate limit of progress events is a compare-and-swap on the time of the last one.
final class ProgressMeter: Sendable {
    private let bytes = Atomic<Int64>(0)
    private let lastEmit = Atomic<Int64>(0)
    private let position = Atomic<Int64>(-1)
    private let expected = Atomic<Int64>(-1)
    private let minimumInterval: Int64
    /// Recent (time, bytes) samples, newest last, for the rate.
    private let samples = Mutex<[(time: Int64, bytes: Int64)]>([])

    /// A meter that lets through at most `rate` progress events a second.
    init(rate: Double) {
        minimumInterval = rate > 0 ? Int64(1e9 / rate) : 0
    }

    /// Bytes moved so far by this run of the transfer.
    var total: Int64 { bytes.load(ordering: .relaxed) }

    /// The transfer's position in its body (received or sent in all, resumed bytes included), once known.
    var latestPosition: Int64? {
        let value = position.load(ordering: .relaxed)
        return value < 0 ? nil : value
    }

    /// The body's whole length as the response announced it, once known (the store has it only from
    /// the first checkpoint on: a listing before that showed "4.1 MiB" with no total).
    var latestExpected: Int64? {
        let value = expected.load(ordering: .relaxed)
        return value < 0 ? nil : value
    }

    /// Adds moved bytes.
    func add(_ count: Int64) {
        bytes.add(count, ordering: .relaxed)
    }

    /// Records where the transfer is in its body, and the body's whole length when known.
    func setPosition(_ value: Int64, of total: Int64? = nil) {
        position.store(value, ordering: .relaxed)
        if let total { expected.store(total, ordering: .relaxed) }
    }

    /// Whether a progress event may be sent at `now` (nanoseconds on a monotonic clock); when it may, a
    /// rate sample is taken too.
    func shouldEmit(now: Int64) -> Bool {
        let last = lastEmit.load(ordering: .relaxed)
        guard now - last >= minimumInterval else { return false }
        guard lastEmit.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else { return false }
        let moved = total
        samples.withLock { samples in
            samples.append((now, moved))
            // Keep about three seconds.
            while let first = samples.first, now - first.time > 3_000_000_000, samples.count > 2 {
                samples.removeFirst()
            }
        }
        return true
    }

    /// Bytes a second over the last seconds at `now`; 0 when nothing moved for two seconds.
    func rate(now: Int64) -> Double {
        samples.withLock { samples in
            guard let first = samples.first, let last = samples.last, now - last.time < 2_000_000_000,
                last.time > first.time
            else { return 0 }
            return Double(last.bytes - first.bytes) / (Double(last.time - first.time) / 1e9)
        }
    }
}
