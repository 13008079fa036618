import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging
import NIOCore

/// Applying what a task's ``BackgroundTaskMachine`` asks for (persisted with its events before any
/// client hears of it), the timers on the injected clock, the throughput floor, and shutting down.
extension Scheduler {
    // MARK: Applying the machine's actions

    /// The machine of a task read from the store (a running one with no transfer here is pending: D4).
    func machine(for task: StoredTask) -> BackgroundTaskMachine {
        let phase: BackgroundTaskMachine.Phase =
            switch task.state {
            case .pending, .running: .pending
            case .suspended: .suspended
            case .completed: .completed
            }
        return BackgroundTaskMachine(
            phase: phase,
            isDownload: task.kind == .download,
            deadline: task.resourceDeadline,
            retryPolicy: retryPolicy(of: task)
        )
    }

    /// ferryd's retry policy, with the task's own number of tries (``TaskLimits/maximumAttempts``).
    func retryPolicy(of task: StoredTask) -> RetryPolicy {
        var policy = configuration.retry
        if let attempts = task.limits?.maximumAttempts { policy.maximumAttempts = attempts }
        return policy
    }

    /// Gives the task's machine one input and applies the action it returns. The machine is kept in
    /// memory while the task runs, waits for a retry or has someone waiting on it.
    func feed(
        _ key: TaskKey,
        _ task: StoredTask,
        _ input: (inout BackgroundTaskMachine) throws -> BackgroundTaskMachine.Action
    ) throws {
        var entry = entries[key] ?? Entry(machine: machine(for: task))
        let action = try input(&entry.machine)
        entries[key] = entry
        try apply(action, to: key, task)
        tidy(key)
    }

    func apply(_ action: BackgroundTaskMachine.Action, to key: TaskKey, _ task: StoredTask) throws {
        switch action {
        case .none, .startTransfer:
            // Starting is ``start(_:now:)``'s: it persists the state when the transfer really begins.
            break
        case .persistPending:
            try store.transition(session: key.session, identifier: key.identifier, to: .pending)
        case .persistSuspended:
            try store.transition(session: key.session, identifier: key.identifier, to: .suspended)
        case .stopTransfer:
            entries[key]?.transfer?.handle.cancel()
        case .retry(let at):
            try store.transition(session: key.session, identifier: key.identifier, to: .pending)
            let attempts = entries[key]?.machine.failedAttempts ?? 0
            var fields = key.metadata
            let reason = entries[key]?.lastError
            if let reason { fields["error"] = .string(reason.code.name) }
            logger.info(
                "\(key): try \(attempts + 1) in \(Int(at.timeIntervalSince(clock.now()).rounded(.up))) s\(reason.map { " (\($0.message))" } ?? "")",
                metadata: fields
            )
            arm(at)
        case .complete(let completion):
            try complete(key, completion, task)
        }
    }

    /// Persists a completion: state, error and events (then didComplete) in one transaction; the
    /// attached client, if any, is told to read them.
    func complete(_ key: TaskKey, _ completion: BackgroundTaskMachine.Completion, _ task: StoredTask) throws {
        var error: FerryError?
        var events: [(kind: StoredEvent.Kind, payload: Data?)] = []
        let url = (task.currentRequest ?? task.originalRequest).url.absoluteString
        switch completion {
        case .downloaded(let location):
            events.append((.didFinishDownloading, try JSONEncoder().encode(["location": location])))
            logger.info("\(key) downloaded to \(location)", metadata: key.metadata)
        case .uploaded:
            break
        case .failed(var failure):
            if failure.resumeData == nil { failure.resumeData = task.resumeData }
            error = failure
            // The log is for people: no query token of the URL (the message itself names no credential).
            logger.info("\(key) failed: \(configuration.redaction.error(failure))", metadata: key.metadata)
        case .resourceTimedOut:
            error = TransferRunner.resourceTimedOut(task)
            logger.info("\(key) passed its resource deadline", metadata: key.metadata)
        case .tooSlow(let message):
            var failure = FerryError(.timedOut, message, failingURL: url)
            failure.resumeData = task.resumeData
            error = failure
        case .cancelled(let produceResumeData, let reason):
            error = cancellation(of: task, produceResumeData: produceResumeData, reason: reason)
        }
        // A cancellation is not a failure.
        if let error, error.code != .cancelled { metrics.failed(error) }
        try store.transition(
            session: key.session,
            identifier: key.identifier,
            to: .completed,
            error: error,
            events: events + [(.didComplete, try error.map { try JSONEncoder().encode($0) })]
        )
        hub.signal(key.session, .journal)
    }

    /// The error a cancelled task completes with, after its leftovers are dealt with: without resume data
    /// its partial file goes (S6.9; a device or FIFO written through stays), and a resumable upload's
    /// server resource, or a chunked upload's stored chunks, are released (DELETE, errors ignored).
    func cancellation(of task: StoredTask, produceResumeData: Bool, reason: String?) -> FerryError {
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
        } else if let chunks = task.chunkedUpload?.stored, !chunks.isEmpty,
            let transport = try? transports.transport(for: task.connection)
        {
            let uploader = ParallelChunkedUploader(transport: transport)
            let (request, deadline) = (task.originalRequest, NIODeadline.now() + TimeAmount.seconds(10))
            Task.detached { await uploader.terminate(chunks, of: request, deadline: deadline) }
        }
        return error
    }

    /// Waits until the task's transfer, if one runs, has ended and its end is recorded.
    func untilStopped(_ key: TaskKey) async {
        guard entries[key]?.transfer != nil else { return }
        await withCheckedContinuation { continuation in
            entries[key]?.endWaiters.append(continuation)
        }
    }

    /// Pokes at `at`, unless an earlier wake-up is armed.
    func arm(_ at: Date) {
        if let armed, armed <= at, armed > clock.now() { return }
        armed = at
        let clock = self.clock
        Task {
            try? await clock.sleep(until: at)
            self.woke(at)
        }
    }

    func woke(_ at: Date) {
        if armed == at { armed = nil }
        poke()
    }

    // MARK: Throughput floor and shutdown

    /// Checks every running transfer against the throughput floor; call every ``DaemonConfiguration/throughputWindow``.
    func checkThroughput() {
        guard configuration.throughputFloor > 0 else { return }
        let minimum = Int64(Double(configuration.throughputFloor) * configuration.throughputWindow)
        for key in Array(entries.keys) {
            guard let transfer = entries[key]?.transfer, entries[key]?.machine.phase == .running(stopping: nil) else {
                continue
            }
            let total = transfer.meter.total
            guard let sample = transfer.floorSample, total - sample < minimum else {
                entries[key]?.transfer?.floorSample = total
                continue
            }
            let rate = Double(total - sample) / configuration.throughputWindow
            logger.info("\(key) is under the throughput floor: \(Int(rate)) B/s", metadata: key.metadata)
            let message =
                "the transfer stayed under \(configuration.throughputFloor) bytes a second for \(Int(configuration.throughputWindow)) seconds (it ran at \(Int(rate))); the partial data is kept"
            if case .stopTransfer? = entries[key]?.machine.tooSlow(message) {
                transfer.handle.cancel()
            }
        }
    }

    /// Stops every transfer at its last checkpoint; they resume when the daemon starts again.
    func stopAll() async {
        stopping = true
        for key in Array(entries.keys) where entries[key]?.transfer != nil {
            if case .stopTransfer? = entries[key]?.machine.daemonStopping() {
                entries[key]?.transfer?.handle.cancel()
            }
        }
        for key in Array(entries.keys) { await untilStopped(key) }
    }

    /// Drops the task's entry when its machine can be made again from its stored state.
    func tidy(_ key: TaskKey) {
        guard let entry = entries[key], entry.transfer == nil, entry.endWaiters.isEmpty else { return }
        switch entry.machine.phase {
        case .waiting, .running: break
        case .pending where entry.machine.failedAttempts > 0: break
        case .pending, .suspended, .completed: entries[key] = nil
        }
    }

    /// The file a didFinishDownloading event's payload names.
    static func location(_ payload: Data?) -> String? {
        payload.flatMap { try? JSONDecoder().decode([String: String].self, from: $0) }?["location"]
    }

    /// A didFinishDownloading event's file when it is the daemon's to remove: in the delivery directory
    /// (a task's own destination belongs to the client).
    static func deliveredFile(_ payload: Data?, _ configuration: DaemonConfiguration) -> String? {
        guard let location = location(payload), location.hasPrefix(configuration.paths.deliveryDirectory + "/")
        else { return nil }
        return location
    }
}
