public import FerryCore

extension SpeedFloor {
    /// What ends a transfer under the floor.
    public struct TooSlow: Error {}

    /// Runs `body`, failing it with ``TooSlow`` once the count `bytes` reads has moved too slowly: a
    /// sample a second, timed by `now` (seconds, any origin).
    public static func enforce<T: Sendable>(
        _ floor: SpeedFloor?,
        bytes: @escaping @Sendable () -> Int64,
        now: @escaping @Sendable () -> Double,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let floor else { return try await body() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                var floor = floor
                while true {
                    try await Task.sleep(for: .seconds(1))
                    if floor.observe(time: now(), bytes: bytes()) { throw TooSlow() }
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
