/// The life of one task loaded by a `URLProtocol`, as a value: which of the protocol's reports count and
/// what each makes the loader do. No I/O; ``URLProtocolLoader`` owns one and applies its actions.
///
/// A protocol may report late (after a cancel), twice (two finishes), or out of order (data before a
/// response): Apple's loader tolerates these, so this one does too. Reports from a protocol object
/// that a redirect replaced are dropped by their generation.
struct URLProtocolLoadState: Equatable {
    enum Phase: Equatable {
        /// Made, not yet resumed.
        case suspended
        /// A protocol object is loading (generation `n`).
        case loading
        /// The loader waits for the delegate (a response disposition, a redirect, a challenge).
        case asking
        /// The load ended (finished, failed or cancelled); its completion is being delivered.
        case finishing
        /// Completed: nothing more is delivered.
        case completed
    }

    /// What a report or a call on the task is.
    enum Input: Equatable {
        case resume
        case cancel
        /// A protocol report, from the protocol object of `generation`.
        case report(generation: Int, Report)
        /// The delegate answered (the loader's own question).
        case answered
        /// The completion was delivered.
        case delivered
    }

    enum Report: Equatable {
        case redirect, response, data, finished, failed, challenge
    }

    /// What the loader does.
    enum Action: Equatable {
        /// Make a protocol object of generation `n` for the current request and call startLoading.
        case start(generation: Int)
        /// Stop the current protocol object and complete with cancelled.
        case stopAndCancel
        /// Handle the report (ask, deliver, write).
        case handle
        /// Drop it: stale, late or repeated.
        case ignore
    }

    private(set) var phase: Phase = .suspended
    /// The generation of the protocol object now loading (a redirect makes a new one).
    private(set) var generation = 0
    /// Whether a response head was reported (data before it is delivered anyway, as Apple's loader does).
    private(set) var responded = false
    /// Whether the task was cancelled (its completion is then cancelled, whatever the protocol reports).
    private(set) var cancelled = false

    /// Apple's task state for this phase.
    var taskState: Int {
        switch phase {
        case .suspended: 1
        case .loading, .asking: 0
        case .finishing: cancelled ? 2 : 0
        case .completed: 3
        }
    }

    mutating func apply(_ input: Input) -> Action {
        switch (phase, input) {
        case (.suspended, .resume):
            phase = .loading
            generation += 1
            return .start(generation: generation)
        case (_, .resume):
            return .ignore
        case (.completed, .cancel), (.finishing, .cancel):
            return .ignore
        case (_, .cancel):
            phase = .finishing
            cancelled = true
            return .stopAndCancel
        case (.loading, .report(let from, let report)):
            guard from == generation else { return .ignore }
            switch report {
            case .response:
                responded = true
                phase = .asking
            case .redirect, .challenge:
                phase = .asking
            case .data:
                break
            case .finished, .failed:
                phase = .finishing
            }
            return .handle
        case (_, .report):
            return .ignore
        case (.asking, .answered):
            phase = .loading
            return .handle
        case (_, .answered):
            return .ignore
        case (.finishing, .delivered):
            phase = .completed
            return .handle
        case (_, .delivered):
            return .ignore
        }
    }

    /// A redirect the delegate allowed: the next protocol object's generation.
    mutating func redirected() -> Int {
        generation += 1
        responded = false
        return generation
    }
}
