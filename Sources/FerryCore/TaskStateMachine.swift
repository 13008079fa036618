/// The lifecycle of one task, as a value: events in, actions out, no I/O.
///
/// The owner (a session, in-process or in the daemon) calls one event method under its lock, stores
/// the machine back, and then carries out the returned ``Action`` outside the lock.
///
/// ```
/// created ──resume──► running ◄──resume── suspended
///    │                  │  └────suspend────►  │
///    │                cancel                 cancel
///    │                  ▼                     │
///    │               canceling ◄──────────────┘
///    │                  │ transferFinished
///    └────cancel──────► completed ◄── transferFinished (from running or suspended)
/// ```
public struct TaskStateMachine: Sendable, Hashable {
    /// The state a client can observe (URLSessionTask.State).
    public enum State: String, Sendable, Hashable, Codable {
        /// Created and not resumed, or paused by `suspend()`.
        case suspended
        /// Transferring.
        case running
        /// Cancelled; the transfer is winding down and completion follows.
        case canceling
        /// Finished: successfully, with an error, or cancelled.
        case completed
    }

    /// What the owner must do after an event.
    public enum Action: Sendable, Hashable {
        /// Nothing (the event did not apply in this state, as with URLSession).
        case none
        /// Begin the transfer.
        case startTransfer
        /// Stop reading from the network but keep the connection and data (suspend).
        case pauseTransfer
        /// Continue a paused transfer.
        case resumeTransfer
        /// Stop the transfer; when it has stopped, report ``TaskStateMachine/transferFinished(error:)``.
        /// With `produceResumeData`, keep the partial data and describe it in the error's resume data.
        case cancelTransfer(produceResumeData: Bool)
        /// Report completion now: `nil` is success. The task is completed.
        case complete(FerryError?)
    }

    private enum Phase: Sendable, Hashable {
        /// Created, never resumed. Valid: resume → running; cancel → completed.
        case created
        /// Transferring. Valid: suspend → paused; cancel → canceling; transferFinished → completed.
        case running
        /// Started, then suspended. Valid: resume → running; cancel → canceling; transferFinished → completed.
        case paused
        /// Cancel asked for. Valid: transferFinished → completed.
        case canceling(produceResumeData: Bool)
        /// Finished. No event changes it.
        case completed
    }

    private var phase: Phase = .created

    /// A task that has just been created (suspended, never started).
    public init() {}

    /// Whether a cancel without resume data is under way: what the transfer holds (a partial file, an
    /// upload resource on the server) can be thrown away.
    public var isDiscarding: Bool {
        if case .canceling(produceResumeData: false) = phase { return true }
        return false
    }

    /// The observable state.
    public var state: State {
        switch phase {
        case .created, .paused: .suspended
        case .running: .running
        case .canceling: .canceling
        case .completed: .completed
        }
    }

    /// Whether the transfer was ever started.
    public var hasStarted: Bool { phase != .created }

    /// `resume()`: start or continue.
    public mutating func resume() -> Action {
        switch phase {
        case .created:
            phase = .running
            return .startTransfer
        case .paused:
            phase = .running
            return .resumeTransfer
        case .running, .canceling, .completed:
            return .none
        }
    }

    /// `suspend()`: pause a running transfer.
    public mutating func suspend() -> Action {
        switch phase {
        case .running:
            phase = .paused
            return .pauseTransfer
        case .created, .paused, .canceling, .completed:
            return .none
        }
    }

    /// `cancel()` or `cancel(byProducingResumeData:)`.
    public mutating func cancel(produceResumeData: Bool = false) -> Action {
        switch phase {
        case .created:
            phase = .completed
            return .complete(Self.cancelledError(resumeData: nil))
        case .running, .paused:
            phase = .canceling(produceResumeData: produceResumeData)
            return .cancelTransfer(produceResumeData: produceResumeData)
        case .canceling, .completed:
            return .none
        }
    }

    /// The transfer stopped: finished (`nil`), failed, or wound down after a cancel.
    /// - Parameter error: the transfer's error, carrying resume data where it could produce some.
    public mutating func transferFinished(error: FerryError?) -> Action {
        switch phase {
        case .running, .paused:
            phase = .completed
            return .complete(error)
        case .canceling(let produceResumeData):
            phase = .completed
            // Whatever the transfer ended with, the task reports a cancellation; resume data only
            // when it was asked for.
            return .complete(Self.cancelledError(resumeData: produceResumeData ? error?.resumeData : nil))
        case .created:
            preconditionFailure("a transfer finished for a task that never started")
        case .completed:
            return .none
        }
    }

    /// The transfer ran elsewhere (in ferryd, for a background session) and has completed there: the
    /// task is completed, whatever it was here. Returns whether it was not completed before.
    @discardableResult
    public mutating func finishedElsewhere() -> Bool {
        if case .completed = phase { return false }
        phase = .completed
        return true
    }

    private static func cancelledError(resumeData: ResumeData?) -> FerryError {
        FerryError(.cancelled, "the task was cancelled", resumeData: resumeData)
    }
}
