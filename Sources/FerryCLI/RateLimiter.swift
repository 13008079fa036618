import Synchronization

/// How long a transfer must pause to stay at or under a rate (`--limit-rate`). Pure: the caller tells
/// it the bytes moved and the time.
public struct RateLimiter: Sendable {
    /// Bytes a second allowed.
    public let bytesPerSecond: Int64
    private var start: Double?
    private var moved: Int64 = 0

    /// A limiter for `bytesPerSecond` (> 0).
    public init(bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0, "a rate limit must be positive")
        self.bytesPerSecond = bytesPerSecond
    }

    /// Records `count` bytes moved at `now` (seconds on a monotonic clock) and returns the seconds to
    /// wait before the next byte so that the average since the first call stays within the limit.
    public mutating func record(_ count: Int64, now: Double) -> Double {
        let start = self.start ?? now
        self.start = start
        moved += count
        let due = Double(moved) / Double(bytesPerSecond)
        return max(0, due - (now - start))
    }
}

/// A ``RateLimiter`` shared by the callbacks of one transfer.
final class SharedRateLimiter: Sendable {
    private let limiter: Mutex<RateLimiter>

    init(bytesPerSecond: Int64) {
        limiter = Mutex(RateLimiter(bytesPerSecond: bytesPerSecond))
    }

    /// Records `count` bytes now; returns the seconds to pause.
    func record(_ count: Int64, now: Double) -> Double {
        limiter.withLock { $0.record(count, now: now) }
    }
}
