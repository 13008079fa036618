import FerryCore
import Foundation
import Synchronization

/// A background session's link to ferryd: creates its tasks there, forwards resume, suspend and cancel,
/// and turns the attached event stream into delegate calls, acknowledging each journaled event after
/// its callback has returned (D2). When the stream breaks (the daemon stopped or was killed) it starts
/// the daemon again and re-attaches; events already handled are not delivered twice.
final class BackgroundLink: Sendable {
    let identifier: String
    let client: DaemonClient

    private struct State {
        var stream: DaemonClient.EventStream?
        var lastHandled: Int64 = 0
        var closed = false
    }

    private let state: Mutex<State>
    /// Resumes and suspends waiting to go out, in the order they were asked for; one Task sends them.
    private let outbox: AsyncStream<@Sendable () async -> Void>.Continuation
    /// Identifiers attached by sessions of this process (S6.7: a second one is refused).
    private static let attachedHere = Mutex(Set<String>())

    /// Starts ferryd if needed and attaches to `identifier`.
    /// - Throws: ``FerryError`` when the identifier is in use (here or by another process) or no daemon
    ///   can be reached.
    init(identifier: String, client: DaemonClient?) throws {
        let claimed = Self.attachedHere.withLock { $0.insert(identifier).inserted }
        guard claimed else {
            throw FerryError(
                .backgroundSessionInUseByAnotherProcess,
                "this process already has a session with the background identifier '\(identifier)'; invalidate it before making another"
            )
        }
        do {
            let client = try client ?? DaemonClient.forCurrentUser()
            try client.ensureRunning()
            let stream = try client.attach(session: identifier)
            self.identifier = identifier
            self.client = client
            self.state = Mutex(State(stream: stream))
            let (requests, outbox) = AsyncStream<@Sendable () async -> Void>.makeStream()
            self.outbox = outbox
            Task {
                for await request in requests { await request() }
            }
        } catch {
            _ = Self.attachedHere.withLock { $0.remove(identifier) }
            throw error
        }
    }

    private var sessionPath: String {
        "\(ControlAPI.prefix)/sessions/\(DaemonClient.pathComponent(identifier))"
    }

    // MARK: Tasks

    /// Creates a task in the daemon, suspended until resumed.
    func create(_ creation: ControlAPI.TaskCreation) throws -> BackgroundTaskInfo {
        var creation = creation
        creation.start = false
        return try client.call("POST", "\(sessionPath)/tasks", body: creation)
    }

    /// The daemon's view of the session's tasks.
    func tasks() throws -> [BackgroundTaskInfo] {
        try client.call("GET", "\(sessionPath)/tasks")
    }

    /// Asks the daemon to run the task. Returns at once: the request goes out in order with the link's
    /// other resumes and suspends, without blocking the caller (which may be a cooperative thread).
    func resume(_ task: SessionTask) {
        let update = ControlAPI.TaskUpdate(taskDescription: task.taskDescription, priority: Double(task.priority))
        outbox.yield { await self.send(task, "resume", body: update) }
    }

    /// Asks the daemon to pause the task; returns at once, as ``resume(_:)``.
    func suspend(_ task: SessionTask) {
        outbox.yield { await self.send(task, "suspend") }
    }

    /// Cancels in the daemon; the completion arrives as an event. Returns the resume data when asked
    /// for and available.
    func cancel(_ task: SessionTask, produceResumeData: Bool) -> ResumeData? {
        do {
            let result: ControlAPI.CancelResult = try client.call(
                "POST",
                "\(sessionPath)/tasks/\(task.taskIdentifier)/cancel",
                body: ControlAPI.Cancellation(produceResumeData: produceResumeData)
            )
            return result.resumeData
        } catch {
            return nil
        }
    }

    private func send(_ task: SessionTask, _ action: String, body: ControlAPI.TaskUpdate? = nil) async {
        do {
            let _: BackgroundTaskInfo = try await client.call(
                "POST",
                "\(sessionPath)/tasks/\(task.taskIdentifier)/\(action)",
                body: body
            )
        } catch let error as FerryError {
            // The daemon is gone or refuses: the task cannot go on.
            await task.completeFromDaemon(error: error, info: nil)
        } catch {}
    }

    /// Cancels every task and forgets the session in the daemon (invalidateAndCancel, S6.11).
    /// The link closes first: the session completes its tasks itself, and the stream the daemon ends must
    /// not be taken for a daemon gone away (re-attaching would start a daemon and re-register the session).
    func invalidateAndCancel() {
        close()
        try? client.perform("POST", "\(sessionPath)/invalidate", body: ControlAPI.Invalidation(cancelTasks: true))
    }

    /// Detaches: the daemon keeps running the tasks and journals their events for the next attach.
    func close() {
        let stream = state.withLock { state -> DaemonClient.EventStream? in
            state.closed = true
            defer { state.stream = nil }
            return state.stream
        }
        stream?.cancel()
        outbox.finish()
        _ = Self.attachedHere.withLock { $0.remove(identifier) }
    }

    // MARK: Events

    /// Reads events until the link is closed, re-attaching when the stream breaks.
    func run(session: Session) async {
        var failures = 0
        while true {
            guard let stream = state.withLock({ $0.closed ? nil : $0.stream }) else { return }
            do {
                for try await event in stream.events {
                    failures = 0
                    await handle(event, session: session)
                }
            } catch {}
            if state.withLock({ $0.closed }) { return }
            // The daemon went away: start it again and re-attach, backing off while it cannot be reached.
            while !state.withLock({ $0.closed }) {
                failures += 1
                try? await Task.sleep(for: .milliseconds(min(2000, 100 * (1 << min(failures, 5)))))
                if state.withLock({ $0.closed }) { return }
                do {
                    try await client.ensureRunning()
                    let fresh = try await client.attach(session: identifier)
                    let keep = state.withLock { state -> Bool in
                        guard !state.closed else { return false }
                        state.stream = fresh
                        return true
                    }
                    if !keep { fresh.cancel() }
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
