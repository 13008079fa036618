import Foundation
import Synchronization

/// curl's `--speed-limit B --speed-time S`: a transfer that stays under B bytes a second for S seconds
/// fails. Pure: ``observe(time:bytes:)`` takes a sample (about one a second) and says when it is over.
public struct SpeedFloor: Sendable, Equatable {
    /// The lowest rate, in bytes a second.
    public let bytesPerSecond: Int64
    /// How long the rate may stay under it, in seconds.
    public let seconds: Double
    private var last: (time: Double, bytes: Int64)?
    /// When the rate went under the floor, if it is under it now.
    private var slowSince: Double?

    public init(bytesPerSecond: Int64, seconds: Double) {
        self.bytesPerSecond = bytesPerSecond
        self.seconds = seconds
    }

    public static func == (lhs: SpeedFloor, rhs: SpeedFloor) -> Bool {
        lhs.bytesPerSecond == rhs.bytesPerSecond && lhs.seconds == rhs.seconds
    }

    /// Takes the transfer's byte count at `time` (seconds, any origin); true when it has been under the
    /// floor for ``seconds``.
    public mutating func observe(time: Double, bytes: Int64) -> Bool {
        defer { last = (time, bytes) }
        guard let last, time > last.time else { return false }
        let rate = Double(bytes - last.bytes) / (time - last.time)
        guard rate < Double(bytesPerSecond) else {
            slowSince = nil
            return false
        }
        let since = slowSince ?? last.time
        slowSince = since
        return time - since >= seconds
    }

    /// What ends a transfer under the floor.
    struct TooSlow: Error {}

    /// Runs `body`, failing it with ``TooSlow`` once the bytes `counter` holds have moved too slowly.
    static func enforce<T: Sendable>(
        _ floor: SpeedFloor?,
        counter: ByteCounter,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let floor else { return try await body() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                var floor = floor
                while true {
                    try await Task.sleep(for: .seconds(1))
                    if floor.observe(time: ProgressDisplay.now(), bytes: counter.value) { throw TooSlow() }
                }
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let result = next { return result }
            }
            throw CancellationError()
        }
    }
}

/// The bytes a transfer has moved, shared with its ``SpeedFloor`` watch.
final class ByteCounter: Sendable {
    private let count = Atomic<Int64>(0)

    var value: Int64 { count.load(ordering: .relaxed) }

    func set(_ value: Int64) { count.store(value, ordering: .relaxed) }

    /// Adds `delta`; returns the new count.
    func add(_ delta: Int64) -> Int64 { count.add(delta, ordering: .relaxed).newValue }
}
