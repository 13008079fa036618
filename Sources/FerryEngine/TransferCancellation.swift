import FerryCore
import Synchronization

/// A transfer's own cancellation, for a transfer that runs in its caller's task (an async call of a
/// session): cancelling the task object from elsewhere (`invalidateAndCancel()`, a delegate) must stop
/// the transfer without cancelling the caller's task. The engine's waits register what ends them
/// (``TransferContext/withCancellationHandler(operation:onCancel:isolation:)``), as they do for Swift
/// task cancellation.
public final class TransferCancellation: Sendable {
    private struct State {
        var cancelled = false
        var nextKey = 0
        /// The handler registered when none other was: a transfer's waits come one at a time, so this
        /// is almost always the only one, kept without a dictionary (whose storage each request's
        /// waits allocated and freed again).
        var only: (key: Int, handler: @Sendable () -> Void)?
        /// Handlers registered while `only` was taken.
        var others: [Int: @Sendable () -> Void] = [:]

        mutating func takeAll() -> [@Sendable () -> Void] {
            var all = Array(others.values)
            if let only { all.append(only.handler) }
            only = nil
            others = [:]
            return all
        }
    }

    private let state = Mutex(State())

    /// A cancellation not yet cancelled.
    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels: runs every handler registered now, once; handlers registered later run at once.
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            return state.takeAll()
        }
        for handler in handlers { handler() }
    }

    /// Returns once ``cancel()`` has been called, or when the calling task is cancelled.
    public func waitUntilCancelled() async {
        // Resumed once: by the cancellation or by the task's, whichever comes first.
        let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let key = Mutex<Int?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.withLock { $0 = continuation }
                let added = add { waiter.withLock { $0.take() }?.resume() }
                key.withLock { $0 = added }
                if Task.isCancelled { waiter.withLock { $0.take() }?.resume() }
            }
        } onCancel: {
            waiter.withLock { $0.take() }?.resume()
        }
        if let added = key.withLock({ $0 }) { remove(added) }
    }

    /// Registers `handler`; returns its key, or nil when already cancelled (the handler has run then).
    func add(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let key = state.withLock { state -> Int? in
            guard !state.cancelled else { return nil }
            state.nextKey += 1
            if state.only == nil {
                state.only = (state.nextKey, handler)
            } else {
                state.others[state.nextKey] = handler
            }
            return state.nextKey
        }
        if key == nil { handler() }
        return key
    }

    func remove(_ key: Int) {
        state.withLock { state in
            if state.only?.key == key {
                state.only = nil
            } else {
                state.others.removeValue(forKey: key)
            }
        }
    }
}

extension TransferContext {
    /// Runs `operation`; `handler` runs when the task is cancelled, or the current transfer's own
    /// ``TransferContext/cancellation`` is (whichever comes first; either may run it).
    static func withCancellationHandler<T>(
        operation: () async throws -> T,
        onCancel handler: @escaping @Sendable () -> Void,
        isolation: isolated (any Actor)? = #isolation
    ) async rethrows -> T {
        guard let cancellation = TransferContext.current?.cancellation else {
            return try await withTaskCancellationHandler(operation: operation, onCancel: handler, isolation: isolation)
        }
        let key = cancellation.add(handler)
        defer { if let key { cancellation.remove(key) } }
        return try await withTaskCancellationHandler(operation: operation, onCancel: handler, isolation: isolation)
    }

    /// Throws ``FerryError/Code/cancelled`` when the current transfer's own cancellation was cancelled.
    static func checkCancellation() throws {
        if TransferContext.current?.cancellation?.isCancelled == true {
            throw FerryError(.cancelled, "the transfer was cancelled")
        }
    }
}
