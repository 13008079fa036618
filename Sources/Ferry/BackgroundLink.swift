import FerryCore
import Foundation
import Synchronization

/// A background session's link to ferryd: creates its tasks there, forwards resume, suspend and cancel,
/// and turns the attached event stream into delegate calls, acknowledging each journaled event after
/// its callback has returned (D2). When the stream breaks (the daemon stopped or was killed) it starts
/// the daemon again and re-attaches; events already handled are not delivered twice.
///
/// Nothing here blocks its caller: the session's creation only claims the identifier in this process,
/// and every request to the daemon (creations included) goes out in order from one task once
/// ``run(session:)`` has attached. A task is named before the daemon hears of it (``nextIdentifier()``).
final class BackgroundLink: Sendable {
    let identifier: String
    let client: DaemonClient

    private struct State {
        var stream: DaemonClient.EventStream?
        var lastHandled: Int64 = 0
        var closed = false
        /// The last task identifier given out.
        var lastIdentifier = 0
    }

    private let state: Mutex<State>
    /// Requests to the daemon waiting to go out, in the order they were made; ``run(session:)`` sends
    /// them once attached. Each is given the link's failure, if it has one, instead of being sent.
    private let outbox: AsyncStream<@Sendable (FerryError?) async -> Void>.Continuation
    private let requests: AsyncStream<@Sendable (FerryError?) async -> Void>
    /// Identifiers attached by sessions of this process (S6.7: a second one is refused).
    private static let attachedHere = Mutex(Set<String>())

    /// Claims `identifier` in this process; ``run(session:)`` then reaches the daemon.
    /// - Throws: `FerryError` when a session of this process has the identifier, or no daemon
    ///   directory can be worked out.
    init(identifier: String, client: DaemonClient?) throws {
        let claimed = Self.attachedHere.withLock { $0.insert(identifier).inserted }
        guard claimed else {
            throw FerryError(
                .backgroundSessionInUseByAnotherProcess,
                "this process already has a session with the background identifier '\(identifier)'; invalidate it before making another"
            )
        }
        do {
            self.client = try client ?? DaemonClient.forCurrentUser()
        } catch {
            _ = Self.attachedHere.withLock { $0.remove(identifier) }
            throw error
        }
        self.identifier = identifier
        self.state = Mutex(State())
        (requests, outbox) = AsyncStream<@Sendable (FerryError?) async -> Void>.makeStream()
    }

    /// The identifier of a new task, given out here so that a task factory need not wait for the
    /// daemon: this process's clock in milliseconds since 2026 (a later process starts past an earlier
    /// one's, without asking), past every identifier the daemon reported.
    func nextIdentifier() -> Int {
        let now = Int((Date().timeIntervalSince1970 - 1_767_225_600) * 1000)
        return state.withLock { state in
            state.lastIdentifier = max(state.lastIdentifier + 1, now)
            return state.lastIdentifier
        }
    }

    /// Keeps ``nextIdentifier()`` past `identifier` (a task the daemon reported).
    private func noteIdentifier(_ identifier: Int) {
        state.withLock { $0.lastIdentifier = max($0.lastIdentifier, identifier) }
    }

    private var sessionPath: String {
        "\(ControlAPI.prefix)/sessions/\(DaemonClient.pathComponent(identifier))"
    }

    // MARK: Tasks

    /// Creates `task` in the daemon, under the task's identifier and suspended until resumed; a refusal
    /// completes the task with the daemon's error.
    func create(_ creation: ControlAPI.TaskCreation, for task: SessionTask) {
        var creation = creation
        creation.start = false
        creation.taskIdentifier = task.taskIdentifier
        enqueue(task) { [self, creation] in
            let _: BackgroundTaskInfo = try await client.call("POST", "\(sessionPath)/tasks", body: creation)
        }
    }

    /// The daemon's view of the session's tasks, once attached.
    func tasks() async throws -> [BackgroundTaskInfo] {
        try await withCheckedThrowingContinuation { continuation in
            outbox.yield { [self] failure in
                if let failure { return continuation.resume(throwing: failure) }
                do {
                    continuation.resume(returning: try await client.call("GET", "\(sessionPath)/tasks"))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Asks the daemon to run the task. Returns at once: the request goes out in order with the link's
    /// other requests.
    func sendResume(_ task: SessionTask) {
        let update = ControlAPI.TaskUpdate(
            taskDescription: task.taskDescription,
            priority: Double(task.priority),
            earliestBeginTime: task.earliestBeginDate?.timeIntervalSince1970
        )
        enqueue(task) { [self] in
            let _: BackgroundTaskInfo = try await client.call(
                "POST",
                "\(sessionPath)/tasks/\(task.taskIdentifier)/resume",
                body: update
            )
        }
    }

    /// Sends a change of a live task (PATCH, in order with the link's other requests) and returns the
    /// task as the daemon has it afterwards.
    func sendChange(_ task: SessionTask, _ change: ControlAPI.TaskUpdate) async throws -> BackgroundTaskInfo {
        try await withCheckedThrowingContinuation { continuation in
            outbox.yield { [self] failure in
                if let failure { return continuation.resume(throwing: failure) }
                do {
                    continuation.resume(
                        returning: try await client.call("PATCH", "\(sessionPath)/tasks/\(task.taskIdentifier)", body: change)
                    )
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Asks the daemon to pause the task; returns at once, as ``sendResume(_:)``.
    func sendSuspend(_ task: SessionTask) {
        enqueue(task) { [self] in
            let _: BackgroundTaskInfo = try await client.call("POST", "\(sessionPath)/tasks/\(task.taskIdentifier)/suspend")
        }
    }

    /// Cancels in the daemon; returns at once. `answered` gets the resume data when asked for and
    /// available (nil when not, or when the daemon cannot be reached); the completion arrives as an event.
    func sendCancel(_ task: SessionTask, produceResumeData: Bool, answered: @escaping @Sendable (ResumeData?) -> Void) {
        outbox.yield { [self] failure in
            guard failure == nil else { return answered(nil) }
            do {
                let result: ControlAPI.CancelResult = try await client.call(
                    "POST",
                    "\(sessionPath)/tasks/\(task.taskIdentifier)/cancel",
                    body: ControlAPI.Cancellation(produceResumeData: produceResumeData)
                )
                answered(result.resumeData)
            } catch {
                answered(nil)
            }
        }
    }

    /// Queues a request about `task`; when it cannot be made (the daemon is gone, refuses, or the link
    /// failed) the task completes with that error, as it cannot go on.
    private func enqueue(_ task: SessionTask, _ request: @escaping @Sendable () async throws -> Void) {
        outbox.yield { failure in
            do {
                if let failure { throw failure }
                try await request()
            } catch let error as FerryError {
                await task.completeFromDaemon(error: error, info: nil)
            } catch {
                await task.completeFromDaemon(error: FerryError(.unknown, "\(error)"), info: nil)
            }
        }
    }

    /// Cancels every task and forgets the session in the daemon (invalidateAndCancel, S6.11); returns
    /// once the daemon has done so (or cannot be reached), after the requests queued before it. The event
    /// stream closes first: the session completes its tasks itself, and the stream the daemon ends must
    /// not be taken for a daemon gone away (re-attaching would re-register the session). The identifier
    /// is free in this process afterwards, not before: a new session with it cannot race the old one's
    /// invalidation.
    func invalidateAndCancel() async {
        detach()?.cancel()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let queued = outbox.yield { [self] failure in
                if failure == nil {
                    try? await client.perform(
                        "POST",
                        "\(sessionPath)/invalidate",
                        body: ControlAPI.Invalidation(cancelTasks: true)
                    )
                }
                done.resume()
            }
            if case .terminated = queued { done.resume() }
        }
        outbox.finish()
        _ = Self.attachedHere.withLock { $0.remove(identifier) }
    }

    /// Detaches: the daemon keeps running the tasks and journals their events for the next attach.
    /// Requests already queued still go out.
    func close() {
        detach()?.cancel()
        outbox.finish()
        _ = Self.attachedHere.withLock { $0.remove(identifier) }
    }

    /// Marks the link closed; returns the stream to end.
    private func detach() -> DaemonClient.EventStream? {
        state.withLock { state -> DaemonClient.EventStream? in
            state.closed = true
            defer { state.stream = nil }
            return state.stream
        }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    /// Starts ferryd unless one answers and attaches; the stream is kept unless the link closed meanwhile.
    private func attach() async throws {
        try await client.ensureRunning()
        let stream = try await client.attach(session: identifier)
        let keep = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.stream = stream
            return true
        }
        if !keep { stream.cancel() }
    }

    // MARK: Events

    /// Reaches the daemon (starting it when none answers) and attaches, then sends the queued requests
    /// in order and delivers events until the link is closed, re-attaching when the stream breaks.
    /// When the daemon cannot be reached at first, or another process holds the identifier, every
    /// request fails with that error (its task completes with it).
    func run(session: Session) async {
        // Why the link cannot reach the daemon for good (another process holds the identifier, or ferryd
        // cannot be started); every request fails with it.
        let failure: FerryError?
        do {
            try await attach()
            failure = nil
        } catch {
            failure = error as? FerryError ?? FerryError(.backgroundSessionWasDisconnected, "\(error)")
        }
        // Tasks an earlier process made (S6.8), so that getAllTasks knows them and new identifiers pass
        // them; then whatever was asked meanwhile, in order.
        // sessionSendsLaunchEvents false: the daemon runs no launch command for this session's events.
        if failure == nil, !session.configuration.sessionSendsLaunchEvents {
            try? await client.perform("DELETE", "\(sessionPath)/launch")
        }
        if failure == nil, let known: [BackgroundTaskInfo] = try? await client.call("GET", "\(sessionPath)/tasks") {
            for info in known {
                noteIdentifier(info.taskIdentifier)
                if info.state != .completed { _ = session.backgroundTask(for: info) }
            }
        }
        let requests = self.requests
        Task {
            for await request in requests { await request(failure) }
        }
        guard failure == nil else { return }
        var failures = 0
        while true {
            guard let stream = state.withLock({ $0.closed ? nil : $0.stream }) else { return }
            do {
                for try await event in stream.events {
                    failures = 0
                    await handle(event, session: session)
                }
            } catch {}
            if isClosed { return }
            // The daemon went away: start it again and re-attach, backing off while it cannot be reached.
            while !isClosed {
                failures += 1
                try? await Task.sleep(for: .milliseconds(min(2000, 100 * (1 << min(failures, 5)))))
                if isClosed { return }
                do {
                    try await attach()
                    break
                } catch {
                    continue
                }
            }
        }
    }

    private func handle(_ event: BackgroundEvent, session: Session) async {
        if let sequence = event.sequence, sequence <= state.withLock({ $0.lastHandled }) { return }
        switch event.kind {
        case .attached, .heartbeat:
            return
        case .didFinishEvents:
            let delegate = session.delegate
            await session.queue.perform { await delegate?.sessionDidFinishEvents(forBackgroundSession: session) }
        case .didWriteData, .didSendBodyData, .didResume:
            guard let info = event.task, let task = session.backgroundTask(for: info) else { return }
            task.progressFromDaemon(event)
        case .didFinishDownloading:
            guard let info = event.task, let location = event.location else { break }
            if let download = session.backgroundTask(for: info) as? DownloadTask {
                await download.finishDownloadFromDaemon(info: info, location: URL(fileURLWithPath: location))
            }
        case .didComplete:
            guard let info = event.task, let task = session.backgroundTask(for: info) else { break }
            await task.completeFromDaemon(error: event.error, info: info)
        case .taskIsWaitingForConnectivity:
            guard let info = event.task, let task = session.backgroundTask(for: info) else { break }
            let reason = event.message.flatMap(NetworkPolicy.WaitReason.init(rawValue:)) ?? .offline
            if let delegate = task.taskDelegateForEvents() {
                await session.queue.perform { await delegate.session(session, taskIsWaitingForConnectivity: task, reason: reason) }
            }
        }
        if let sequence = event.sequence {
            state.withLock { $0.lastHandled = max($0.lastHandled, sequence) }
            try? await acknowledge(through: sequence)
        }
    }

    private func acknowledge(through sequence: Int64) async throws {
        try await client.perform("POST", "\(sessionPath)/ack", body: ControlAPI.Acknowledgement(through: sequence))
    }
}
