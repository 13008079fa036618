import Synchronization

/// Holds the task of an async call so that cancelling the caller cancels it, also when the cancel comes
/// before the task exists (it is cancelled as soon as it is set). `Session`'s async calls use it;
/// FerryFoundationNetworking's have their own, not generic (`AsyncTaskCall`).
final class TaskBox<Held: Sendable>: Sendable {
    private let state = Mutex<(task: Held?, cancelled: Bool)>((nil, false))
    private let cancelTask: @Sendable (Held) -> Void

    /// A box whose ``cancel()`` calls `cancel` on the task it holds.
    init(cancel: @escaping @Sendable (Held) -> Void) {
        cancelTask = cancel
    }

    /// The task to cancel; cancelled at once when the caller was cancelled already.
    func set(_ newTask: Held) {
        let cancelled = state.withLock { state in
            state.task = newTask
            return state.cancelled
        }
        if cancelled { cancel() }
    }

    /// Cancels the task, now or when it is set.
    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        if let task { cancelTask(task) }
    }
}
