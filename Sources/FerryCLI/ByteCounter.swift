import FerryCore
import FerryEngine
import Synchronization

/// The bytes a transfer has moved, shared with its ``SpeedFloor`` watch.
final class ByteCounter: Sendable {
    private let count = Atomic<Int64>(0)

    var value: Int64 { count.load(ordering: .relaxed) }

    func set(_ value: Int64) { count.store(value, ordering: .relaxed) }

    /// Adds `delta`; returns the new count.
    func add(_ delta: Int64) -> Int64 { count.add(delta, ordering: .relaxed).newValue }
}

extension SpeedFloor {
    /// Runs `body`, failing it with ``SpeedFloor/TooSlow`` once the bytes `counter` holds have moved
    /// too slowly (on the progress display's clock).
    static func enforce<T: Sendable>(
        _ floor: SpeedFloor?,
        counter: ByteCounter,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await enforce(floor, bytes: { counter.value }, now: ProgressDisplay.now, body)
    }
}
