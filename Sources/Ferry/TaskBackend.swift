import FerryCore
import FerryEngine
import Foundation

/// Where a session's tasks run: in this process (``InProcessBackend``) or in ferryd (``BackgroundLink``).
/// A task's intents go to its backend, so each kind of task is written once; both keep the task's
/// ``TaskStateMachine`` as the one record of its observable state.
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
    func resume(_ task: SessionTask) {
        // Outside the task's lock: it reads the task's delegate, which takes the lock.
        let cache = task.cacheUse()
        let (action, context): (TaskStateMachine.Action, TransferContext?) = task.locked.withLock { state in
            let action = state.machine.resume()
            guard case .startTransfer = action else { return (action, nil) }
            state.startDate = Date()
            let pool = task.session.bandwidthPool
            let throttle =
                pool == nil && state.bandwidthLimit == nil
                ? nil
                : TaskThrottle(bytesPerSecond: state.bandwidthLimit, pool: pool, weight: Double(state.priority))
            state.throttle = throttle
            let context = TransferContext(
                priority: state.priority,
                handlesCookies: task.originalRequest?.httpShouldHandleCookies ?? true,
                cache: cache,
                throttle: throttle,
                // Metrics go to a delegate only: an async call without one never reads them.
                recordsTransactions: state.delegate != nil || task.route.deliversToDelegates
            )
            return (action, context)
        }
        switch action {
        case .startTransfer:
            guard let context else { return }
            // Started at once on this thread, up to its first wait (outside the lock, which the transfer
            // takes): a task that was only enqueued woke another thread of the pool first, one of the
            // thread switches that made a small request through a session cost 40 µs more than through the
            // engine (20,000 GETs, perf).
            let transfer = Task.immediate {
                await TransferContext.$current.withValue(context) { await task.run(context: context) }
            }
            let cancelled = task.locked.withLock { state in
                state.transfer = transfer
                return state.machine.state == .canceling
            }
            // A cancel that came while the transfer was starting found no handle to cancel.
            if cancelled { transfer.cancel() }
        case .resumeTransfer:
            task.gate.open()
        default:
            break
        }
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
