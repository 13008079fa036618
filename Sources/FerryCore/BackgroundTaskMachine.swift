public import Foundation

/// The life of one background task in ferryd, as a value: inputs in (a client's intent, the scheduler's
/// decision, the engine's outcome), actions out, no I/O. ferryd's `Scheduler` is its only owner: it feeds
/// every input, applies every action (persisting a state change with its events in one transaction
/// before anyone can observe it, starting and stopping transfers, arming timers), and nothing else
/// changes a task's state.
///
/// ```
///              resume                        start (a slot is free)
/// suspended ◄──────────► pending ─────────────────────────────────► running
///     ▲      suspend        ▲  ▲                                     │ │ │
///     │                     │  └─ daemon stopping, network not allowed ┘ │ │
///     │                     │ retry time reached                        │ │
///     │                  waiting ◄──── failed, a retry left ────────────┘ │
///     └──────────────────── suspend (at a checkpoint) ────────────────────┤
///                                                                         ▼
///   cancel, force quit, invalidate (from any state) ───────────────► completed
///                      finished, failed with no retry left, too slow ──┘
/// ```
///
/// A running task is stopped by an intent in two steps: the intent asks for ``Action/stopTransfer``, and
/// the transfer's end (``transferFailed(_:retryAfter:now:)`` or ``transferFinished(_:)``) then completes
/// the intent. A transfer that finishes whole before it stops wins over the intent.
public struct BackgroundTaskMachine: Sendable, Hashable {
    /// Where the task is.
    public enum Phase: Sendable, Hashable {
        /// Waits for a transfer slot.
        case pending
        /// Waits until `until` before it may take a slot again (a retry's backoff or the server's
        /// Retry-After). Persisted as pending: after a restart it is tried at once.
        case waiting(until: Date)
        /// Transferring; `stopping` says which intent stops it, once asked.
        case running(stopping: Stop?)
        /// Paused by a client.
        case suspended
        /// Finished for good.
        case completed
    }

    /// Why a running transfer is being stopped.
    public enum Stop: Sendable, Hashable {
        /// A client's suspend: the task keeps its partial data and waits for a resume.
        case suspend
        /// A cancel (a client's, a force quit's or an invalidation's).
        case cancel(produceResumeData: Bool, reason: String?)
        /// The transfer stayed under the throughput floor; `message` says by how much.
        case tooSlow(String)
        /// The daemon is stopping: the task is pending again and resumes when it starts.
        case daemonStopping
        /// The task may not use the network as it is now (its policy or the network changed): it is
        /// pending again and starts, with Range, when it may.
        case waitForNetwork
    }

    /// How a completed task ends.
    public enum Completion: Sendable, Hashable {
        /// A download is whole at `location`.
        case downloaded(location: String)
        /// An upload's response arrived.
        case uploaded
        /// Failed with `error` (no try left, or not worth another).
        case failed(FerryError)
        /// The task's resource deadline passed.
        case resourceTimedOut
        /// Stopped under the throughput floor; the partial data is kept as resume data.
        case tooSlow(String)
        /// Cancelled: with `produceResumeData` the partial data is kept and described, otherwise it goes.
        case cancelled(produceResumeData: Bool, reason: String?)
    }

    /// What the owner must do after an input.
    public enum Action: Sendable, Hashable {
        /// Nothing changes.
        case none
        /// Persist the task as pending (it waits for a slot).
        case persistPending
        /// Persist the task as suspended.
        case persistSuspended
        /// Persist the task as running and start its transfer.
        case startTransfer
        /// Stop the running transfer; its end comes back as an input.
        case stopTransfer
        /// Persist the task as pending and try it again at `at`.
        case retry(at: Date)
        /// Persist the completion with its events, in one transaction.
        case complete(Completion)
    }

    /// An input the phase cannot take: a bug in the owner, never a client's mistake (clients' intents
    /// are always taken, at worst as no-ops).
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The input refused.
        public var input: String
        /// The phase it came in.
        public var phase: Phase

        public var description: String { "a background task cannot take \(input) while \(phase)" }
    }

    /// The current phase.
    public private(set) var phase: Phase
    /// Failed tries since the last success or client resume; decides the next backoff.
    public private(set) var failedAttempts: Int
    /// Whether the task is a download (a force quit keeps a suspended download's partial data).
    public let isDownload: Bool
    /// When the task fails with ``Completion/resourceTimedOut`` if not finished; nil: never.
    public let deadline: Date?
    /// How network failures are retried.
    public let retryPolicy: RetryPolicy

    /// A machine in `phase` (a task read back from the store starts in its stored phase).
    public init(
        phase: Phase,
        isDownload: Bool,
        deadline: Date?,
        retryPolicy: RetryPolicy,
        failedAttempts: Int = 0
    ) {
        self.phase = phase
        self.isDownload = isDownload
        self.deadline = deadline
        self.retryPolicy = retryPolicy
        self.failedAttempts = failedAttempts
    }

    /// Whether the task has ended for good.
    public var isCompleted: Bool { phase == .completed }

    /// Whether a transfer is running (or stopping).
    public var isRunning: Bool {
        if case .running = phase { return true }
        return false
    }

    /// Whether the task may take a slot at `now`.
    public func mayStart(at now: Date) -> Bool {
        switch phase {
        case .pending: true
        case .waiting(let until): until <= now
        case .running, .suspended, .completed: false
        }
    }

    // MARK: Client intents (never refused)

    /// A client's resume: a suspended task waits for a slot; elsewhere nothing changes.
    public mutating func resume() -> Action {
        guard phase == .suspended else { return .none }
        phase = .pending
        failedAttempts = 0
        return .persistPending
    }

    /// A client's suspend: a running transfer stops at its last checkpoint, a waiting one stays put.
    public mutating func suspend() -> Action {
        switch phase {
        case .pending, .waiting:
            phase = .suspended
            return .persistSuspended
        case .running(let stopping):
            // A stop already under way (a cancel, the floor, a shutdown) is not turned into a pause.
            guard stopping == nil else { return .none }
            phase = .running(stopping: .suspend)
            return .stopTransfer
        case .suspended, .completed:
            return .none
        }
    }

    /// A client's cancel: a completed task stays as it is.
    public mutating func cancel(produceResumeData: Bool, reason: String?) -> Action {
        cancelling(produceResumeData: produceResumeData, reason: reason)
    }

    /// A force quit of the session's app (seed 000 §7.3.2): as a cancel, except that a suspended
    /// download keeps its partial data and completes with resume data.
    public mutating func forceQuit(reason: String) -> Action {
        let keep = isDownload && phase == .suspended
        return cancelling(produceResumeData: keep, reason: reason)
    }

    /// The session is invalidated and cancelled: as a cancel without resume data.
    public mutating func invalidate(reason: String) -> Action {
        cancelling(produceResumeData: false, reason: reason)
    }

    /// A cancel of any kind: a running transfer is stopped, a task that does not run completes now.
    private mutating func cancelling(produceResumeData: Bool, reason: String?) -> Action {
        let stop = Stop.cancel(produceResumeData: produceResumeData, reason: reason)
        switch phase {
        case .completed:
            return .none
        case .running(.cancel?):
            return .none
        case .running:
            // A cancel wins over a suspend, a shutdown or the floor asked for before.
            phase = .running(stopping: stop)
            return .stopTransfer
        case .pending, .waiting, .suspended:
            phase = .completed
            return .complete(.cancelled(produceResumeData: produceResumeData, reason: reason))
        }
    }

    // MARK: The scheduler's decisions

    /// A slot is free and the scheduler chose this task.
    /// - Throws: ``Refusal`` unless ``mayStart(at:)``.
    public mutating func start(at now: Date) throws(Refusal) -> Action {
        guard mayStart(at: now) else { throw Refusal(input: "start", phase: phase) }
        phase = .running(stopping: nil)
        return .startTransfer
    }

    /// The task's recorded settings cannot be used (no transport can be made for them): it fails at once
    /// with `error`, without a try.
    /// - Throws: ``Refusal`` unless it may start (``mayStart(at:)``).
    public mutating func cannotStart(_ error: FerryError, at now: Date) throws(Refusal) -> Action {
        guard mayStart(at: now) else { throw Refusal(input: "cannot start", phase: phase) }
        phase = .completed
        return .complete(.failed(error))
    }

    /// The transfer stayed under the throughput floor; ignored when it is being stopped already.
    public mutating func tooSlow(_ message: String) -> Action {
        guard case .running(nil) = phase else { return .none }
        phase = .running(stopping: .tooSlow(message))
        return .stopTransfer
    }

    /// The daemon is stopping: a running transfer stops at a checkpoint and the task stays pending (one
    /// being stopped already ends as its intent says).
    public mutating func daemonStopping() -> Action {
        guard case .running(nil) = phase else { return .none }
        phase = .running(stopping: .daemonStopping)
        return .stopTransfer
    }

    /// The task may no longer use the network as it is now: a running transfer stops at a checkpoint and
    /// the task waits, pending, until it may (one being stopped already ends as its intent says).
    public mutating func mayNotUseNetwork() -> Action {
        guard case .running(nil) = phase else { return .none }
        phase = .running(stopping: .waitForNetwork)
        return .stopTransfer
    }

    // MARK: The engine's outcomes

    /// The transfer ended with the whole download or the upload's response: success, whatever intent
    /// came too late to stop it.
    /// - Throws: ``Refusal`` unless running.
    public mutating func transferFinished(_ completion: Completion) throws(Refusal) -> Action {
        guard isRunning else { throw Refusal(input: "a finished transfer", phase: phase) }
        phase = .completed
        failedAttempts = 0
        return .complete(completion)
    }

    /// The transfer ended without finishing: stopped by an intent, or failed with `error`.
    /// - Parameters:
    ///   - retryAfter: the wait the server asked for (503 or 429 with Retry-After), if any.
    ///   - now: the wall clock, for the deadline and the next try.
    /// - Throws: ``Refusal`` unless running.
    public mutating func transferFailed(_ error: FerryError, retryAfter: Double?, now: Date) throws(Refusal) -> Action {
        guard case .running(let stopping) = phase else { throw Refusal(input: "a failed transfer", phase: phase) }
        switch stopping {
        case .suspend?:
            phase = .suspended
            return .persistSuspended
        case .daemonStopping?, .waitForNetwork?:
            phase = .pending
            return .persistPending
        case .cancel(let produceResumeData, let reason)?:
            phase = .completed
            return .complete(.cancelled(produceResumeData: produceResumeData, reason: reason))
        case .tooSlow(let message)?:
            phase = .completed
            return .complete(.tooSlow(message))
        case nil:
            break
        }
        if let deadline, deadline <= now {
            phase = .completed
            return .complete(.resourceTimedOut)
        }
        let attempts = failedAttempts + 1
        let delay: Double?
        if let retryAfter {
            delay = attempts < retryPolicy.maximumAttempts ? retryAfter : nil
        } else if RetryPolicy.isRetryable(error.code) {
            delay = retryPolicy.delay(afterFailedAttempts: attempts)
        } else {
            delay = nil
        }
        guard let delay else {
            phase = .completed
            failedAttempts = 0
            return .complete(.failed(error))
        }
        failedAttempts = attempts
        let at = now.addingTimeInterval(delay)
        phase = .waiting(until: at)
        return .retry(at: at)
    }
}
