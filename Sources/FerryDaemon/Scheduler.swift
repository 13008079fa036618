import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging
import NIOCore

/// The one owner of every background task's life (issue "One owner for a task's life"): it keeps each
/// task's ``BackgroundTaskMachine``, feeds it the clients' intents, its own decisions and the engine's
/// outcomes, and alone applies what the machine asks for — persisting a state change with its events in
/// one transaction (D2) before any client can hear of it, starting and stopping transfers, signalling
/// the event hub, and arming timers on the injected clock. Nothing else writes a task's state.
///
/// It starts pending tasks up to the daemon-wide limit (S6.10), highest priority first, those the
/// network as it is now allows (``NetworkPolicy``: a task that may not run waits, pending, and is told
/// so once); retries network errors with backoff and busy answers after their Retry-After; stops
/// transfers under the throughput floor, and those the network no longer allows (at a checkpoint: they
/// continue with Range when allowed again). Every running transfer pays for its bytes through a
/// ``TaskThrottle``: its own limit, then its priority-weighted share of the daemon-wide ``pool``.
actor Scheduler {
    /// Runs one transfer of a task once: ferryd's ``TransferRunner``; tests give a fake.
    typealias Run = @Sendable (_ task: StoredTask, _ transport: any HTTPTransport, _ meter: ProgressMeter) async ->
        TransferRunner.Outcome

    /// A task's bandwidth weight: its priority, with a floor so that a priority of 0 still moves.
    static func weight(_ priority: Double) -> Double { max(0.02, priority) }

    /// A task the scheduler is holding in memory: one that runs, waits for a retry, or is being acted on.
    /// The others are read from the store when needed, their machine made from their stored state.
    struct Entry {
        var machine: BackgroundTaskMachine
        var transfer: Transfer?
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        /// The error of the last failed attempt, while the task waits to try again.
        var lastError: FerryError?
    }

    /// A transfer running now.
    struct Transfer {
        let handle: Task<Void, Never>
        let meter: ProgressMeter
        var floorSample: Int64?
        /// Its own limit and its share of the pool, changed live by ``update(_:_:)``.
        let throttle: TaskThrottle
        /// What it may use, and where it goes (checked again when the network or the policy changes).
        var policy: NetworkPolicy
        let host: String?
    }

    let store: FerryStore
    let hub: EventHub
    let configuration: DaemonConfiguration
    let transports: TransportCache
    let logger: Logger
    let metrics: DaemonMetrics
    let clock: any DaemonClock
    let run: Run
    /// Told when a session may have events and no client (launches, S6.5).
    let onEventsJournaled: @Sendable (String) async -> Void

    var entries: [TaskKey: Entry] = [:]
    /// Transfers running now (entries with a transfer).
    var runningCount = 0
    /// The earliest wake-up armed on the clock, if any.
    var armed: Date?
    var stopping = false
    /// The network as last reported (``networkChanged(_:)``); tasks are judged by it.
    var network = NetworkState()
    /// The daemon-wide bandwidth limit, shared by the running transfers by priority.
    let pool: BandwidthPool

    init(
        store: FerryStore,
        hub: EventHub,
        configuration: DaemonConfiguration,
        transports: TransportCache,
        logger: Logger,
        run: Run? = nil,
        metrics: DaemonMetrics = DaemonMetrics(),
        pool: BandwidthPool = BandwidthPool(bytesPerSecond: nil),
        onEventsJournaled: @escaping @Sendable (String) async -> Void
    ) {
        self.pool = pool
        self.metrics = metrics
        self.store = store
        self.hub = hub
        self.configuration = configuration
        self.clock = configuration.clock
        self.transports = transports
        self.logger = logger
        self.run =
            run ?? { task, transport, meter in
                await TransferRunner(
                    task: task,
                    record: TaskRecord(store: store, session: task.session, identifier: task.taskIdentifier),
                    hub: hub,
                    configuration: configuration,
                    transport: transport,
                    meter: meter,
                    metrics: metrics
                ).run()
            }
        self.onEventsJournaled = onEventsJournaled
    }

    /// `tasks` with the live position and rate of those running now (the store has the last
    /// checkpoint only).
    func withLiveProgress(_ tasks: [BackgroundTaskInfo]) -> [BackgroundTaskInfo] {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        return tasks.map { info in
            guard let entry = entries[TaskKey(session: info.session, identifier: info.taskIdentifier)] else {
                return info
            }
            var live = info
            if info.state != .completed, let lastError = entry.lastError {
                live.lastError = lastError
                live.failedAttempts = entry.machine.failedAttempts
                if case .waiting(let until) = entry.machine.phase {
                    live.nextAttemptTime = until.timeIntervalSince1970
                }
            }
            guard let meter = entry.transfer?.meter else { return live }
            live.state = .running
            live.waitingReason = nil
            if let position = meter.latestPosition {
                switch info.kind {
                case .download:
                    live.bytesReceived = max(info.bytesReceived, position)
                    if live.expectedLength == nil { live.expectedLength = meter.latestExpected }
                case .upload: live.bytesSent = position
                }
            }
            live.bytesPerSecond = meter.rate(now: now)
            return live
        }
    }

    /// The tasks of `session` (every session's when nil) as stored, with the live view of those running
    /// or waiting to try again: what the control API's listings and the status page show.
    func listing(session: String?) throws -> [BackgroundTaskInfo] {
        let sessions = try session.map { [$0] } ?? store.sessions()
        return withLiveProgress(try sessions.flatMap { try store.tasks(session: $0).map(info(of:)) })
    }

    /// At most `limit` tasks of every session, unfinished ones first (FerryStore.page), with live
    /// progress, and how many there are in all.
    func page(limit: Int) throws -> (tasks: [BackgroundTaskInfo], total: Int) {
        let (tasks, total) = try store.page(limit: limit)
        return (withLiveProgress(tasks.map(info(of:))), total)
    }

    /// The task as the control API shows it, with why it waits when the network does not allow it now.
    func info(of task: StoredTask) -> BackgroundTaskInfo {
        var info = task.info
        if task.state == .pending {
            info.waitingReason = task.networkPolicy.waitReason(in: network, host: task.host)?.rawValue
        }
        return info
    }

    /// The network, the pending tasks it holds back by reason, and the daemon-wide limit (metrics).
    func networkSample() throws -> DaemonMetrics.NetworkSample {
        var waiting: [String: Int] = [:]
        for task in try store.pendingHeldBack(by: network, onlyUnreported: false)
        where entries[task.key]?.transfer == nil {
            if let reason = task.networkPolicy.waitReason(in: network, host: task.host) {
                waiting[reason.rawValue, default: 0] += 1
            }
        }
        return DaemonMetrics.NetworkSample(state: network, waiting: waiting, bandwidthLimit: pool.limit)
    }

    /// Bytes a second moved by the transfers running now, all together.
    func currentRate() -> Double {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        return entries.values.reduce(0) { $0 + ($1.transfer?.meter.rate(now: now) ?? 0) }
    }

    // MARK: Creation

    /// Creates tasks in one transaction, each born in its first state (pending, or suspended when asked),
    /// and starts what may start.
    /// - Returns: the tasks as they are now (one may be running already).
    func create(session: String, _ tasks: [FerryStore.NewTask]) throws -> [StoredTask] {
        var created = try store.createTasks(
            registeringSession: true,
            session: session,
            limit: configuration.maximumTasksPerSession,
            tasks
        )
        reportWaiting(created)
        if poke() > 0 {
            for index in created.indices where entries[created[index].key]?.transfer != nil {
                created[index].state = .running
            }
        }
        return created
    }

    /// Changes what a client may change of a task, then resumes it (the control API's resume).
    func resume(_ key: TaskKey, update: ControlAPI.TaskUpdate?) throws -> StoredTask {
        let task = try update.map { try apply($0, to: key) } ?? store.task(session: key.session, identifier: key.identifier)
        try feed(key, task) { $0.resume() }
        reportWaiting([try store.task(session: key.session, identifier: key.identifier)])
        poke()
        return try store.task(session: key.session, identifier: key.identifier)
    }

    /// Changes what a client may change of a live task (persisted first): its description, priority,
    /// network policy and own bandwidth limit. A running transfer takes the new limit and weight at once;
    /// one the new policy forbids on the network as it is stops at a checkpoint and waits; a pending task
    /// now allowed may start.
    @discardableResult
    func update(_ key: TaskKey, _ update: ControlAPI.TaskUpdate) throws -> StoredTask {
        let task = try apply(update, to: key)
        reportWaiting([task])
        poke()
        return task
    }

    /// Persists `update` and hands it to a running transfer (limit, weight, policy); the task afterwards.
    func apply(_ update: ControlAPI.TaskUpdate, to key: TaskKey) throws -> StoredTask {
        guard !update.isEmpty else { return try store.task(session: key.session, identifier: key.identifier) }
        try store.updateTask(session: key.session, identifier: key.identifier, update)
        let task = try store.task(session: key.session, identifier: key.identifier)
        if let transfer = entries[key]?.transfer {
            transfer.throttle.setLimit(task.bandwidthLimit)
            transfer.throttle.setWeight(Self.weight(task.priority))
            entries[key]?.transfer?.policy = task.networkPolicy
            enforcePolicy(key)
        }
        return task
    }

    // MARK: The network

    /// The network changed (or is first known): running transfers it no longer allows stop at a
    /// checkpoint, waiting tasks hear why once, and those it now allows start.
    func networkChanged(_ state: NetworkState) {
        guard state != network else { return }
        logger.info("the network is \(state)")
        network = state
        for key in Array(entries.keys) where entries[key]?.transfer != nil { enforcePolicy(key) }
        do {
            reportWaiting(try store.pendingHeldBack(by: state, onlyUnreported: true))
        } catch {
            logger.error("cannot read the waiting tasks: \(error)")
        }
        poke()
    }

    /// Stops a running transfer that may not use the network as it is now.
    func enforcePolicy(_ key: TaskKey) {
        guard let transfer = entries[key]?.transfer,
            let reason = transfer.policy.waitReason(in: network, host: transfer.host)
        else { return }
        if case .stopTransfer? = entries[key]?.machine.mayNotUseNetwork() {
            logger.info("\(key) stops at a checkpoint and waits: \(reason.rawValue)", metadata: key.metadata)
            transfer.handle.cancel()
        }
    }

    /// Journals taskIsWaitingForConnectivity for those of `tasks` that are pending, may not run now, and
    /// have not had it (once per task).
    func reportWaiting(_ tasks: [StoredTask]) {
        let waiting = tasks.compactMap { task -> (session: String, identifier: Int, reason: String)? in
            guard task.state == .pending, !task.waitReported,
                let reason = task.networkPolicy.waitReason(in: network, host: task.host)
            else { return nil }
            return (task.session, task.taskIdentifier, reason.rawValue)
        }
        guard !waiting.isEmpty else { return }
        do {
            // One transaction for all of them (a batch of a thousand created on a metered network).
            let events = try store.reportWaiting(waiting)
            for event in events {
                let key = TaskKey(session: event.session, identifier: event.taskIdentifier ?? 0)
                let reason = event.payload.map { String(decoding: $0, as: UTF8.self) } ?? ""
                logger.info("\(key) waits: \(reason)", metadata: key.metadata)
            }
            for session in Set(events.map(\.session)) { hub.signal(session, .journal) }
        } catch {
            logger.error("cannot record that \(waiting.count) task(s) wait: \(error)")
        }
    }

    /// Suspends a task: a running transfer stops at its last checkpoint and keeps its partial data.
    func suspend(_ key: TaskKey) async throws -> StoredTask {
        let task = try store.task(session: key.session, identifier: key.identifier)
        try feed(key, task) { $0.suspend() }
        await untilStopped(key)
        return try store.task(session: key.session, identifier: key.identifier)
    }

    /// Cancels a task (a completed one stays as it is).
    /// - Returns: the task afterwards and, when asked for and possible, its resume data.
    func cancel(_ key: TaskKey, produceResumeData: Bool, reason: String?) async throws -> (StoredTask, ResumeData?) {
        let task = try store.task(session: key.session, identifier: key.identifier)
        guard task.state != .completed else { return (task, nil) }
        try feed(key, task) { $0.cancel(produceResumeData: produceResumeData, reason: reason) }
        await untilStopped(key)
        await onEventsJournaled(key.session)
        let after = try store.task(session: key.session, identifier: key.identifier)
        return (after, after.error?.resumeData ?? (produceResumeData ? after.resumeData : nil))
    }

    /// Cancels every unfinished task of `session` with `reason`: a force quit when `forceQuit` (a
    /// suspended download keeps its partial data and completes with resume data, seed 000 §7.3.2),
    /// otherwise an invalidation (all lose it, as `cancel()` does).
    func cancelAll(session: String, reason: String, forceQuit: Bool) async throws {
        var stopped: [TaskKey] = []
        var cancelled: [(identifier: Int, error: FerryError)] = []
        for task in try store.tasks(session: session) where task.state != .completed {
            var machine = entries[task.key]?.machine ?? machine(for: task)
            let action = forceQuit ? machine.forceQuit(reason: reason) : machine.invalidate(reason: reason)
            // Kept in memory until the end: a completed machine keeps a task that is completed below from
            // taking a slot a stopped one frees.
            entries[task.key, default: Entry(machine: machine)].machine = machine
            switch action {
            case .complete(.cancelled(let produceResumeData, let reason)):
                // Those not running complete together below, in one transaction however many there are.
                cancelled.append(
                    (task.taskIdentifier, cancellation(of: task, produceResumeData: produceResumeData, reason: reason))
                )
            case .stopTransfer:
                entries[task.key]?.transfer?.handle.cancel()
            default:
                break
            }
            if entries[task.key]?.transfer != nil { stopped.append(task.key) }
        }
        // The running ones were all told at once; their ends come first, then the others' together.
        for key in stopped { await untilStopped(key) }
        if !cancelled.isEmpty {
            defer { for task in cancelled { entries[TaskKey(session: session, identifier: task.identifier)] = nil } }
            try store.complete(session: session, cancelled)
            hub.signal(session, .journal)
        }
        await onEventsJournaled(session)
    }

    /// Forgets a session whose tasks have all completed: its tasks, events, and the files it was handed in
    /// the delivery directory and never collected (invalidateAndCancel, S6.11; a task's own destination
    /// belongs to the client).
    func forget(session: String) throws {
        for event in try store.events(session: session) where event.kind == .didFinishDownloading {
            if let location = Self.deliveredFile(event.payload, configuration) {
                try? FileManager.default.removeItem(atPath: location)
            }
        }
        try store.removeSession(session)
        entries = entries.filter { $0.key.session != session }
    }

    // MARK: Starting

    /// Starts what may start.
    /// - Returns: how many transfers it started.
    @discardableResult
    func poke() -> Int {
        guard !stopping, runningCount < configuration.maximumConcurrentTransfers else { return 0 }
        let now = clock.now()
        let waiting = entries.values.count { if case .waiting = $0.machine.phase { true } else { false } }
        let pending: [StoredTask]
        do {
            // Enough to fill the free slots past those waiting for a retry's time.
            let free = configuration.maximumConcurrentTransfers - runningCount
            // Offline, only tasks to this machine may go; SQL cannot tell them, so all are read.
            // Tasks held until a later time (earliestBeginDate) are not among them.
            pending = try store.tasks(
                in: .pending,
                limit: network.isOnline ? free + waiting : Int.max,
                network: network,
                beginningBy: now
            )
        } catch {
            logger.error("cannot read pending tasks: \(error)")
            return 0
        }
        let before = runningCount
        var wake: Date?
        for task in pending {
            guard runningCount < configuration.maximumConcurrentTransfers else { break }
            if let entry = entries[task.key], entry.transfer != nil || !entry.machine.mayStart(at: now) {
                // Running, waiting for its retry's time, or completed in memory and about to be stored.
                if case .waiting(let until) = entry.machine.phase { wake = min(wake ?? until, until) }
                continue
            }
            guard task.networkPolicy.waitReason(in: network, host: task.host) == nil else { continue }
            start(task, now: now)
        }
        if runningCount < configuration.maximumConcurrentTransfers {
            // A free slot: look again when the soonest held task's time comes.
            do {
                if let begin = try store.nextBegin(after: now) { wake = min(wake ?? begin, begin) }
            } catch {
                logger.error("cannot read when held tasks begin: \(error)")
            }
        }
        if let wake { arm(wake) }
        return runningCount - before
    }

    func start(_ task: StoredTask, now: Date) {
        let key = task.key
        let transport: any HTTPTransport
        do {
            transport = try transports.transport(for: task.connection)
        } catch {
            // Settings that cannot be used (refused at creation; a store from another version): the task
            // fails and says why.
            logger.error("cannot make a transport for \(key): \(error)", metadata: key.metadata)
            let failure = error as? FerryError ?? FerryError(.secureConnectionFailed, "\(error)")
            do {
                try feed(key, task) { machine in try machine.cannotStart(failure, at: now) }
            } catch {
                logger.error("cannot record that \(key) cannot start: \(error)", metadata: key.metadata)
            }
            return
        }
        do {
            try feed(key, task) { machine in try machine.start(at: now) }
        } catch {
            logger.error("cannot start \(key): \(error)", metadata: key.metadata)
            return
        }
        guard entries[key]?.machine.isRunning == true else { return }
        if let file = TransferRunner.finishedFile(of: task, configuration) {
            // Finished before the daemon died, not yet recorded as such: handed over now, without a run
            // (its state goes from pending to completed in one transaction).
            logger.info("\(key) had finished before the restart: \(file)", metadata: key.metadata)
            try? feed(key, task) { machine in try machine.transferFinished(.downloaded(location: file)) }
            Task { await onEventsJournaled(key.session) }
            return
        }
        do {
            try store.transition(session: key.session, identifier: key.identifier, to: .running)
        } catch {
            logger.error("cannot start \(key): \(error)", metadata: key.metadata)
            entries[key] = nil
            return
        }
        var current = task
        current.state = .running
        let meter = ProgressMeter(rate: configuration.progressRate)
        let run = self.run
        logger.debug("starting \(key) \(configuration.redaction.url(task.originalRequest.url).absoluteString)", metadata: key.metadata)
        let throttle = TaskThrottle(bytesPerSecond: task.bandwidthLimit, pool: pool, weight: Self.weight(task.priority))
        let context = TransferContext(priority: Float(task.priority), throttle: throttle)
        let handle = Task {
            let outcome = await TransferContext.$current.withValue(context) { await run(current, transport, meter) }
            await self.ended(key, outcome)
        }
        entries[key]?.transfer = Transfer(
            handle: handle,
            meter: meter,
            throttle: throttle,
            policy: task.networkPolicy,
            host: task.host
        )
        runningCount += 1
    }

    func ended(_ key: TaskKey, _ outcome: TransferRunner.Outcome) async {
        guard entries[key]?.transfer != nil else { return }
        entries[key]?.transfer = nil
        runningCount -= 1
        let now = clock.now()
        do {
            let task = try store.task(session: key.session, identifier: key.identifier)
            var failure: FerryError?
            switch outcome {
            case .failed(let error), .retryLater(_, let error):
                logger.debug("\(key) stopped: \(error)", metadata: key.metadata)
                failure = error
                entries[key]?.lastError = error
            case .downloaded, .uploaded: break
            }
            try feed(key, task) { machine in
                switch outcome {
                case .downloaded(let location): try machine.transferFinished(.downloaded(location: location))
                case .uploaded: try machine.transferFinished(.uploaded)
                case .failed(let error): try machine.transferFailed(error, retryAfter: nil, now: now)
                case .retryLater(let delay, let error): try machine.transferFailed(error, retryAfter: delay, now: now)
                }
            }
            if let failure, case .waiting? = entries[key]?.machine.phase { metrics.retried(failure) }
            if failure != nil {
                // Stopped because the network no longer allows it, or failed as the network changed: if the
                // network holds it back now, it waits and says so (once).
                reportWaiting([try store.task(session: key.session, identifier: key.identifier)])
            }
        } catch {
            logger.error("cannot record the end of \(key): \(error)", metadata: key.metadata)
            entries[key] = nil
        }
        for waiter in entries[key]?.endWaiters ?? [] { waiter.resume() }
        entries[key]?.endWaiters = []
        tidy(key)
        poke()
        await onEventsJournaled(key.session)
    }
}
