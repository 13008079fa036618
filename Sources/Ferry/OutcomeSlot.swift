package import Synchronization

/// One value handed from one side to one waiter: the outcome of a task an async method runs. The value
/// may come before the wait (a transfer run in the waiting task itself) or after it.
package final class OutcomeSlot<Value: Sendable>: Sendable {
    // Inlinable, with its storage usable from inlined code, for FerryFoundationNetworking's `bytes`
    // calls. Its async calls, one for every request, have their own slot that is not generic
    // (`AsyncTaskCall`): from there these methods still ran unspecialised (perf).
    @usableFromInline let state = Mutex<(value: Value?, waiter: UnsafeContinuation<Value, Never>?)>((nil, nil))

    /// An empty slot.
    @inlinable package init() {}

    /// Sets the value and wakes the waiter, if any. Only the first value counts: a later one is dropped.
    @inlinable package func set(_ value: Value) {
        let waiter = state.withLock { state -> UnsafeContinuation<Value, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// The value, once set.
    @inlinable package func value() async -> Value {
        // Set already (an async call whose transfer ran in the calling task): no continuation at all.
        if let ready = state.withLock({ $0.value }) { return ready }
        // Unsafe, not checked: resumed exactly once, by whichever of set and this finds the other (the
        // checked one allocated a canary for every call).
        return await withUnsafeContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
