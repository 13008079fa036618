import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging
import NIOCore

/// Runs background tasks: starts pending ones up to the daemon-wide limit (S6.10), carries out suspend,
/// resume and cancel, retries network errors with backoff, stops transfers under the throughput floor,
/// and turns each outcome into a state change journaled with its events (D2) before any client hears
/// of it.
actor Scheduler {
    /// Why a running transfer is being stopped.
    enum Intent: Sendable {
        case suspend
        case cancel(produceResumeData: Bool, reason: String?)
        case tooSlow(String)
        /// The daemon is stopping: the task resumes when it starts again.
        case stop
    }

    private struct Running {
        let handle: Task<Void, Never>
        let meter: ProgressMeter
        var intent: Intent?
        var floorSample: Int64?
    }

    let store: FerryStore
    let hub: EventHub
    let configuration: DaemonConfiguration
    let transports: TransportCache
    let logger: Logger
    /// Told when a session may have events and no client (launches, S6.5).
    private let onEventsJournaled: @Sendable (String) async -> Void

    private var running: [TaskKey: Running] = [:]
    private var failedAttempts: [TaskKey: Int] = [:]
    private var notBefore: [TaskKey: ContinuousClock.Instant] = [:]
    private var endWaiters: [TaskKey: [CheckedContinuation<Void, Never>]] = [:]
    private var stopping = false

    init(
        store: FerryStore,
        hub: EventHub,
        configuration: DaemonConfiguration,
        transports: TransportCache,
        logger: Logger,
        onEventsJournaled: @escaping @Sendable (String) async -> Void
    ) {
        self.store = store
        self.hub = hub
        self.configuration = configuration
        self.transports = transports
        self.logger = logger
        self.onEventsJournaled = onEventsJournaled
    }

    /// Transfers running now.
    var runningCount: Int { running.count }

    /// `tasks` with the live position and rate of those running now (the store has the last
    /// checkpoint only).
    func withLiveProgress(_ tasks: [BackgroundTaskInfo]) -> [BackgroundTaskInfo] {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        return tasks.map { info in
            guard let entry = running[TaskKey(session: info.session, identifier: info.taskIdentifier)] else {
                return info
            }
            var live = info
            live.state = .running
            if let position = entry.meter.latestPosition {
                switch info.kind {
                case .download: live.bytesReceived = max(info.bytesReceived, position)
                case .upload: live.bytesSent = position
                }
            }
            live.bytesPerSecond = entry.meter.rate(now: now)
            return live
        }
    }

    /// Starts what may start.
    /// - Returns: how many transfers it started.
    @discardableResult
    func poke() -> Int {
        guard !stopping, running.count < configuration.maximumConcurrentTransfers else { return 0 }
        let pending: [StoredTask]
        do {
            // Enough to fill the free slots past those waiting for a retry's backoff.
            let free = configuration.maximumConcurrentTransfers - running.count
            pending = try store.tasks(in: .pending, limit: free + notBefore.count)
        } catch {
            logger.error("cannot read pending tasks: \(error)")
            return 0
        }
        let before = running.count
        let now = ContinuousClock.now
        var wake: ContinuousClock.Instant?
        for task in pending {
            guard running.count < configuration.maximumConcurrentTransfers else { break }
            if let time = notBefore[task.key], time > now {
                wake = min(wake ?? time, time)
                continue
            }
            start(task)
        }
        if let wake {
            Task {
                try? await Task.sleep(until: wake, clock: .continuous)
                self.poke()
            }
        }
        return running.count - before
    }

    private func start(_ task: StoredTask) {
        let key = task.key
        guard running[key] == nil else { return }
        notBefore[key] = nil
        if let file = TransferRunner.finishedFile(of: task, configuration) {
            // Finished before the daemon died, not yet recorded as such: hand it over now.
            do {
                try complete(key, error: nil, events: [(.didFinishDownloading, Self.encode(file))])
                logger.info("\(key) had finished before the restart: \(file)")
            } catch {
                logger.error("cannot complete \(key): \(error)")
            }
            Task { await onEventsJournaled(key.session) }
            return
        }
        let transport: any HTTPTransport
        do {
            transport = try transports.transport(for: task.connection)
        } catch {
            // Settings that cannot be used (refused at creation; a store from another version): the task
            // fails and says why.
            logger.error("cannot make a transport for \(key): \(error)")
            let failure = error as? FerryError ?? FerryError(.secureConnectionFailed, "\(error)")
            try? complete(key, error: failure, events: [])
            return
        }
        do {
            try store.transition(session: key.session, identifier: key.identifier, to: .running)
        } catch {
            logger.error("cannot start \(key): \(error)")
            return
        }
        var current = task
        current.state = .running
        let meter = ProgressMeter(rate: configuration.progressRate)
        let runner = TransferRunner(
            task: current,
            store: store,
            hub: hub,
            configuration: configuration,
            transport: transport,
            meter: meter
        )
        logger.debug("starting \(key) \(task.originalRequest.url.absoluteString)")
        let handle = Task {
            let outcome = await runner.run()
            await self.ended(key, outcome)
        }
        running[key] = Running(handle: handle, meter: meter)
    }

    private func ended(_ key: TaskKey, _ outcome: TransferRunner.Outcome) async {
        let intent = running.removeValue(forKey: key)?.intent
        do {
            try settle(key, outcome, intent: intent)
        } catch {
            logger.error("cannot record the end of \(key): \(error)")
        }
        for waiter in endWaiters.removeValue(forKey: key) ?? [] { waiter.resume() }
        poke()
        await onEventsJournaled(key.session)
    }

    /// Records how a run ended: the state change and its events in one transaction.
    private func settle(_ key: TaskKey, _ outcome: TransferRunner.Outcome, intent: Intent?) throws {
        let (session, identifier) = (key.session, key.identifier)
        var outcome = outcome
        if case .retryLater(_, let error) = outcome, intent != nil {
            // The client's suspend or cancel (or a shutdown) came first.
            outcome = .failed(error)
        }
        switch outcome {
        case .retryLater(let delay, let error):
            let attempts = (failedAttempts[key] ?? 0) + 1
            let stored = try store.task(session: session, identifier: identifier)
            let pastDeadline = stored.resourceDeadline.map { $0 <= configuration.clock() } ?? false
            if attempts < configuration.retry.maximumAttempts, !pastDeadline {
                failedAttempts[key] = attempts
                notBefore[key] = .now + .milliseconds(Int64(delay * 1000))
                try store.transition(session: session, identifier: identifier, to: .pending)
                logger.info("\(key): \(error.message); try \(attempts + 1) in \(delay) s")
                return
            }
            failedAttempts[key] = nil
            var failure = pastDeadline ? TransferRunner.resourceTimedOut(stored) : error
            if failure.resumeData == nil { failure.resumeData = stored.resumeData }
            try complete(key, error: failure, events: [])
        case .downloaded(let location):
            failedAttempts[key] = nil
            try complete(key, error: nil, events: [(.didFinishDownloading, Self.encode(location))])
            logger.info("\(key) downloaded to \(location)")
            return
        case .uploaded:
            failedAttempts[key] = nil
            try complete(key, error: nil, events: [])
            return
        case .failed(let error):
            switch intent {
            case .stop?:
                try store.transition(session: session, identifier: identifier, to: .pending)
            case .suspend?:
                try store.transition(session: session, identifier: identifier, to: .suspended)
            case .cancel(let produceResumeData, let reason)?:
                try cancelled(key, produceResumeData: produceResumeData, reason: reason)
            case .tooSlow(let message)?:
                var failure = FerryError(.timedOut, message, failingURL: error.failingURL)
                failure.resumeData = try store.task(session: session, identifier: identifier).resumeData
                try complete(key, error: failure, events: [])
            case nil:
                let attempts = (failedAttempts[key] ?? 0) + 1
                let stored = try store.task(session: session, identifier: identifier)
                if let end = stored.resourceDeadline, end <= configuration.clock() {
                    failedAttempts[key] = nil
                    try complete(key, error: TransferRunner.resourceTimedOut(stored), events: [])
                    logger.info("\(key) passed its resource deadline: \(error)")
                    return
                }
                if RetryPolicy.isRetryable(error.code),
                    let delay = configuration.retry.delay(afterFailedAttempts: attempts)
                {
                    failedAttempts[key] = attempts
                    notBefore[key] = .now + .milliseconds(Int64(delay * 1000))
                    try store.transition(session: session, identifier: identifier, to: .pending)
                    logger.info("\(key) failed (\(error.code)); try \(attempts + 1) in \(delay) s")
                    return
                }
                failedAttempts[key] = nil
                var failure = error
                if failure.resumeData == nil {
                    failure.resumeData = try store.task(session: session, identifier: identifier).resumeData
                }
                try complete(key, error: failure, events: [])
                logger.info("\(key) failed: \(error)")
            }
        }
    }

    /// Completes a task: state, error and events (then didComplete) in one transaction; the attached
    /// client, if any, is told to read them.
    private func complete(
        _ key: TaskKey,
        error: FerryError?,
        events: [(kind: StoredEvent.Kind, payload: Data?)]
    ) throws {
        try store.transition(
            session: key.session,
            identifier: key.identifier,
            to: .completed,
            error: error,
            events: events + [(.didComplete, try error.map { try JSONEncoder().encode($0) })]
        )
        hub.signal(key.session, .journal)
    }

    private func cancelled(_ key: TaskKey, produceResumeData: Bool, reason: String?) throws {
        let task = try store.task(session: key.session, identifier: key.identifier)
        try complete(key, error: cancellation(of: task, produceResumeData: produceResumeData, reason: reason), events: [])
    }

    /// The error a task that is not running completes with when cancelled, after its leftovers are dealt
    /// with: without resume data its partial file goes (S6.9; a device or FIFO written through stays),
    /// and a resumable upload's server resource is released (DELETE, errors ignored).
    private func cancellation(of task: StoredTask, produceResumeData: Bool, reason: String?) -> FerryError {
        var error = FerryError(
            .cancelled,
            reason ?? "the task was cancelled",
            failingURL: (task.currentRequest ?? task.originalRequest).url.absoluteString
        )
        if produceResumeData, let resumeData = task.resumeData {
            error.resumeData = resumeData
        } else if let partial = task.partialPath {
            DownloadDestination.removeFile(partial)
        } else if let upload = task.uploadState, let transport = try? transports.transport(for: task.connection) {
            let uploader = ResumableUploader(transport: transport)
            let deadline = NIODeadline.now() + TimeAmount.seconds(10)
            Task.detached { await uploader.cancel(upload, deadline: deadline) }
        }
        return error
    }

    // MARK: Client requests

    /// Cancels a task (a completed one stays as it is).
    /// - Returns: the task afterwards and, when asked for and possible, its resume data.
    func cancel(_ key: TaskKey, produceResumeData: Bool, reason: String?) async throws -> (StoredTask, ResumeData?) {
        let task = try store.task(session: key.session, identifier: key.identifier)
        guard task.state != .completed else { return (task, nil) }
        if running[key] != nil {
            await stopRunning(key, intent: .cancel(produceResumeData: produceResumeData, reason: reason))
        } else {
            try cancelled(key, produceResumeData: produceResumeData, reason: reason)
            await onEventsJournaled(key.session)
        }
        let after = try store.task(session: key.session, identifier: key.identifier)
        return (after, after.error?.resumeData ?? (produceResumeData ? after.resumeData : nil))
    }

    /// Suspends a task: a running transfer stops at its last checkpoint and keeps its partial data.
    func suspend(_ key: TaskKey) async throws -> StoredTask {
        let task = try store.task(session: key.session, identifier: key.identifier)
        switch task.state {
        case .running where running[key] != nil:
            await stopRunning(key, intent: .suspend)
        case .pending, .running:
            try store.transition(session: key.session, identifier: key.identifier, to: .suspended)
        case .suspended, .completed:
            break
        }
        return try store.task(session: key.session, identifier: key.identifier)
    }

    /// Resumes a suspended task (it waits for a slot like any pending one).
    func resume(_ key: TaskKey) throws -> StoredTask {
        let task = try store.task(session: key.session, identifier: key.identifier)
        if task.state == .suspended {
            try store.transition(session: key.session, identifier: key.identifier, to: .pending)
            notBefore[key] = nil
            poke()
        }
        return try store.task(session: key.session, identifier: key.identifier)
    }

    /// Cancels every unfinished task of `session` with `reason` (a force quit, invalidateAndCancel).
    /// With `keepSuspended`, suspended downloads keep their partial data and complete with resume data,
    /// as a force quit leaves them (seed 000 §7.3.2); the others lose it, as `cancel()` does.
    func cancelAll(session: String, reason: String, keepSuspended: Bool = false) async throws {
        var waiting: [(identifier: Int, error: FerryError)] = []
        for task in try store.tasks(session: session) where task.state != .completed {
            let keep = keepSuspended && task.state == .suspended && task.kind == .download
            if running[task.key] != nil {
                await stopRunning(task.key, intent: .cancel(produceResumeData: keep, reason: reason))
            } else {
                waiting.append((task.taskIdentifier, cancellation(of: task, produceResumeData: keep, reason: reason)))
            }
        }
        // Those not running complete together: one transaction however many there are.
        guard !waiting.isEmpty else { return }
        try store.complete(session: session, waiting)
        hub.signal(session, .journal)
        await onEventsJournaled(session)
    }

    private func stopRunning(_ key: TaskKey, intent: Intent) async {
        guard running[key] != nil else { return }
        running[key]?.intent = intent
        running[key]?.handle.cancel()
        await withCheckedContinuation { continuation in
            endWaiters[key, default: []].append(continuation)
        }
    }

    // MARK: Throughput floor and shutdown

    /// Checks every running transfer against the throughput floor; call every ``DaemonConfiguration/throughputWindow``.
    func checkThroughput() {
        guard configuration.throughputFloor > 0 else { return }
        let minimum = Int64(Double(configuration.throughputFloor) * configuration.throughputWindow)
        for (key, entry) in running where entry.intent == nil {
            let total = entry.meter.total
            if let sample = entry.floorSample, total - sample < minimum {
                let rate = Double(total - sample) / configuration.throughputWindow
                logger.info("\(key) is under the throughput floor: \(Int(rate)) B/s")
                running[key]?.intent = .tooSlow(
                    "the transfer stayed under \(configuration.throughputFloor) bytes a second for \(Int(configuration.throughputWindow)) seconds (it ran at \(Int(rate))); the partial data is kept"
                )
                running[key]?.handle.cancel()
            } else {
                running[key]?.floorSample = total
            }
        }
    }

    /// Stops every transfer at its last checkpoint; they resume when the daemon starts again.
    func stopAll() async {
        stopping = true
        for key in Array(running.keys) {
            await stopRunning(key, intent: .stop)
        }
    }

    private static func encode(_ location: String) throws -> Data {
        try JSONEncoder().encode(["location": location])
    }
}
