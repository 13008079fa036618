import FerryCore
import FerryEngine
import Foundation

/// Where a session's tasks run: in this process (`InProcessBackend`) or in ferryd (`BackgroundLink`).
/// A task's intents go to its backend, so each kind of task is written once; both keep the task's
/// `TaskStateMachine` as the one record of its observable state.
protocol TaskBackend: Sendable {
    /// Starts the task, or continues it after a suspend.
    func resume(_ task: SessionTask)
    /// Pauses the task.
    func suspend(_ task: SessionTask)
    /// Cancels the task; with `produceResumeData`, its partial data is kept and described.
    func cancel(_ task: SessionTask, produceResumeData: Bool)
}

/// Runs tasks in this process, on the session's transport.
struct InProcessBackend: TaskBackend {
    /// What resuming a task calls for.
    private enum Start {
        /// Start its transfer, in this context, at `wait` (its earliest begin date) when that is later.
        case transfer(TransferContext, wait: Date? = nil)
        /// Let its paused transfer go on.
        case resumed
        case nothing
    }

    /// Resumes the task's state machine; a transfer to start gets its context (with a cancellation of
    /// its own when it runs in its caller's task).
    private func start(_ task: SessionTask, inline: Bool) -> Start {
        // Outside the task's lock: it reads the task's delegate, which takes the lock.
        let cache = task.cacheUse()
        let informational = task.informationalResponses()
        return task.locked.withLock { state in
            switch state.machine.resume() {
            case .startTransfer:
                break
            case .resumeTransfer:
                return .resumed
            default:
                return .nothing
            }
            let now = Date()
            state.startDate = now
            let wait = state.earliestBeginDate.flatMap { $0 > now ? $0 : nil }
            let pool = task.session.bandwidthPool
            let throttle =
                pool == nil && state.bandwidthLimit == nil
                ? nil
                : TaskThrottle(bytesPerSecond: state.bandwidthLimit, pool: pool, weight: Double(state.priority))
            state.throttle = throttle
            let cancellation = inline ? TransferCancellation() : nil
            state.inlineCancellation = cancellation
            return .transfer(
                TransferContext(
                    priority: state.priority,
                    handlesCookies: task.originalRequest?.httpShouldHandleCookies ?? true,
                    cache: cache,
                    throttle: throttle,
                    // Metrics go to a delegate only: an async call without one never reads them.
                    recordsTransactions: state.delegate != nil || task.route.deliversToDelegates,
                    cancellation: cancellation,
                    informationalResponses: informational
                ),
                wait: wait
            )
        }
    }

    func resume(_ task: SessionTask) {
        switch start(task, inline: false) {
        case .transfer(let context, let wait):
            // Started at once on this thread, up to its first wait (outside the lock, which the transfer
            // takes): a task that was only enqueued woke another thread of the pool first.
            let transfer = Task.immediate {
                if let wait {
                    // Not before its earliest begin date; a cancel ends the wait, and the task completes
                    // cancelled without having touched the network.
                    try? await WallClock.sleep(until: wait)
                    if Task.isCancelled {
                        await task.transferEnded(
                            result: nil,
                            failure: FerryError(.cancelled, "cancelled before its earliest begin date"),
                            context: context
                        )
                        return
                    }
                }
                await TransferContext.$current.withValue(context) { await task.run(context: context) }
            }
            let cancelled = task.locked.withLock { state in
                state.transfer = transfer
                return state.machine.state == .canceling
            }
            // A cancel that came while the transfer was starting found no handle to cancel.
            if cancelled { transfer.cancel() }
        case .resumed:
            task.gate.open()
        case .nothing:
            break
        }
    }

    /// Runs the task's transfer in the calling task, for an async call of the session, and returns once
    /// the task has completed; false when it did not start here (cancelled before it began).
    ///
    /// Why: in a task of its own, the transfer was woken on one thread of the pool when the answer came
    /// and woke the caller on another when it ended; run in the caller's task there is one wake-up fewer
    /// (20,000 sequential GETs: 3.57 → 3.19 s in an experiment). A cancel from elsewhere reaches the
    /// transfer through its own `TransferCancellation`, not by cancelling the caller's task.
    func runInline(_ task: SessionTask) async -> Bool {
        guard case .transfer(let context, let wait) = start(task, inline: true) else { return false }
        if let wait {
            // An async call's task given a date by didCreateTask: it waits here, as ``resume(_:)``'s do.
            try? await WallClock.sleep(until: wait)
        }
        await TransferContext.$current.withValue(context) { await task.run(context: context) }
        return true
    }

    func suspend(_ task: SessionTask) {
        let action = task.locked.withLock { $0.machine.suspend() }
        if case .pauseTransfer = action { task.gate.close() }
    }

    func cancel(_ task: SessionTask, produceResumeData: Bool) {
        let (action, transfer) = task.locked.withLock { state in
            (state.machine.cancel(produceResumeData: produceResumeData), state.transfer)
        }
        switch action {
        case .cancelTransfer:
            transfer?.cancel()
            task.locked.withLock { $0.inlineCancellation }?.cancel()
            task.gate.open()
        case .complete(let error):
            // Never started: complete at once, without a transfer.
            Task { await task.complete(error: error, result: nil, metrics: nil) }
        default:
            break
        }
    }
}

extension BackgroundLink: TaskBackend {
    func resume(_ task: SessionTask) {
        let resumed = task.locked.withLock { state -> Bool in
            guard state.machine.state == .suspended else { return false }
            _ = state.machine.resume()
            state.startDate = state.startDate ?? Date()
            return true
        }
        if resumed { sendResume(task) }
    }

    func suspend(_ task: SessionTask) {
        let action = task.locked.withLock { $0.machine.suspend() }
        if case .pauseTransfer = action { sendSuspend(task) }
    }

    func cancel(_ task: SessionTask, produceResumeData: Bool) {
        let action = task.locked.withLock { state -> TaskStateMachine.Action in
            guard !state.ended else { return .none }
            return state.machine.cancel(produceResumeData: produceResumeData)
        }
        if case .none = action { return }
        // The daemon journals the completion; it arrives as an event. The error is known once the daemon
        // has answered (with the resume data, when asked for).
        sendCancel(task, produceResumeData: produceResumeData) { resumeData in
            // The completion event may have come first; it carries the same error.
            guard !task.locked.withLock({ $0.ended }) else { return }
            task.markEnded(error: FerryError(.cancelled, "the task was cancelled", resumeData: resumeData))
        }
    }
}
