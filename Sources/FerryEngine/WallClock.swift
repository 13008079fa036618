public import Foundation

/// Waiting for a date on the wall clock: ferryd's held tasks, and tasks with an earliest begin date.
public enum WallClock {
    /// Returns at `date` (at once if it has passed). It sleeps a day at a time: a date centuries away (a
    /// task held until the year 9999) would overflow the nanoseconds, and the wall clock may be set
    /// meanwhile.
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public static func sleep(until date: Date) async throws {
        while true {
            let seconds = date.timeIntervalSinceNow
            guard seconds > 0 else { return }
            try await Task.sleep(for: .nanoseconds(Int64(min(seconds, 86_400) * 1e9)))
        }
    }
}
