/// The relaunch rate limiter of S6.6 as a pure value: each launch doubles the delay before the next
/// may happen; the delay resets when the client attaches by itself, or when a whole delay passes with
/// no launch.
public struct LaunchLimiter: Sendable, Hashable {
    /// The first delay, in seconds.
    public let baseDelay: Double
    /// The longest delay, in seconds.
    public let maximumDelay: Double
    /// The delay the next launch must wait after the last one; 0 before any launch.
    public private(set) var delay: Double
    /// When the last launch happened (seconds on the caller's clock).
    public private(set) var lastLaunch: Double?

    /// A limiter in its initial state, or restored from `delay` and `lastLaunch`.
    public init(baseDelay: Double, maximumDelay: Double, delay: Double = 0, lastLaunch: Double? = nil) {
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.delay = delay
        self.lastLaunch = lastLaunch
    }

    /// When the next launch may happen, at or after `now`.
    public func earliestLaunch(now: Double) -> Double {
        guard let lastLaunch else { return now }
        return max(now, lastLaunch + delay)
    }

    /// A launch happens at `now` (call only at or after ``earliestLaunch(now:)``).
    public mutating func launched(at now: Double) {
        if let lastLaunch, now - lastLaunch >= 2 * delay, delay > 0 {
            // A whole delay passed after the last one could have happened, with no launch: start over.
            delay = 0
        }
        delay = delay == 0 ? baseDelay : min(maximumDelay, delay * 2)
        lastLaunch = now
    }

    /// The client attached by itself: the next launch is not held back.
    public mutating func clientAttachedByItself() {
        delay = 0
        lastLaunch = nil
    }
}
