import Synchronization

/// One value handed from one side to one waiter: the outcome of a task an async method runs. The value
/// may come before the wait (a transfer run in the waiting task itself) or after it.
package final class OutcomeSlot<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiter: CheckedContinuation<Value, Never>?)>((nil, nil))

    /// An empty slot.
    package init() {}

    /// Sets the value and wakes the waiter, if any. Only the first value counts: a later one is dropped.
    package func set(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// The value, once set.
    package func value() async -> Value {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
