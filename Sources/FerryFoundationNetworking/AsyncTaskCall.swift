import Synchronization

/// One async call of a ``URLSession`` (`data(for:)`, `upload`, `download`): the task it made, for the
/// caller's cancellation, and the task's result, for the caller's wait. Either may come first: a cancel
/// before the task exists cancels it when it is set; a result before the wait is returned without one.
///
/// Not generic, unlike Ferry's `TaskBox` and `OutcomeSlot`, which `Session`'s async calls use: from this
/// module their methods ran unspecialised, looking their generic metadata up on every call (4–7 % of a
/// small request in memory, in `perf`), and one object instead of two is one allocation fewer.
final class AsyncTaskCall: Sendable {
    typealias Result = Swift.Result<DelegateBridge.Delivered, any Error>

    private struct State {
        var task: URLSessionTask?
        var cancelled = false
        var result: Result?
        var waiter: UnsafeContinuation<Result, Never>?
    }

    private let state = Mutex(State())

    /// The task made for the call; cancelled at once if the caller was cancelled before.
    func set(_ task: URLSessionTask) {
        let cancelled = state.withLock { state in
            if state.result == nil { state.task = task }
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// The caller was cancelled: its task is cancelled, now or when it is set (unless it has finished).
    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    /// The task's result; only the first counts. The task is let go: it holds its completion, which
    /// holds this call (a cycle that kept every finished task).
    func finish(_ result: Result) {
        let waiter = state.withLock { state -> UnsafeContinuation<Result, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            state.task = nil
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    /// The task's result, once it has one.
    func result() async -> Result {
        // There already when the transfer ran in the calling task: no continuation at all.
        if let ready = state.withLock({ $0.result }) { return ready }
        // Resumed exactly once: by whichever of finish and this finds the other.
        return await withUnsafeContinuation { continuation in
            let ready = state.withLock { state -> Result? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
