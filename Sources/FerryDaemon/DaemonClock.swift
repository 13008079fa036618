import FerryEngine
public import Foundation

/// The daemon's time: the wall clock (times in the store, resource deadlines, Retry-After dates) and
/// waiting on it (retry backoff). Injected so that tests move time instead of sleeping.
public protocol DaemonClock: Sendable {
    /// Now.
    func now() -> Date
    /// Returns at `deadline` (at once if it has passed); throws when the waiting task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The machine's clock.
public struct SystemDaemonClock: DaemonClock {
    /// The system clock.
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(until deadline: Date) async throws {
        try await WallClock.sleep(until: deadline)
    }
}
