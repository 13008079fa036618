public import FerryEngine
public import Foundation
public import Logging
import NIOCore
import Synchronization

/// Ending the session, and what its tasks ask of it: whether it is usable, their deadlines, download
/// paths.
extension Session {
    // MARK: Invalidation

    /// Lets the tasks finish (tasks never resumed count: resume or cancel them), then ends the session:
    /// didBecomeInvalidWithError(nil), the delegate released, connections closed. New tasks fail.
    /// Does nothing on ``shared``.
    public func finishTasksAndInvalidate() {
        guard !isShared else { return }
        if background != nil {
            // The tasks go on in the daemon; their events wait for the next session with this identifier.
            let valid = locked.withLock { state -> Bool in
                guard case .valid = state.phase else { return false }
                state.phase = .finishing
                return true
            }
            if valid { invalidate() }
            return
        }
        let finalize = locked.withLock { state -> Bool in
            guard case .valid = state.phase else { return false }
            state.phase = .finishing
            return state.tasks.isEmpty
        }
        if finalize { invalidate() }
    }

    /// Cancels every task, then ends the session as ``finishTasksAndInvalidate()`` does. Does nothing on
    /// ``shared``.
    public func invalidateAndCancel() {
        guard !isShared else { return }
        if let background {
            let tasks = locked.withLock { state -> [SessionTask] in
                if case .invalidated = state.phase { return [] }
                state.phase = .finishing
                return Array(state.tasks.values)
            }
            Task {
                // The daemon cancels and forgets the session; the identifier is free again (S6.11) before
                // didBecomeInvalid.
                await background.invalidateAndCancel()
                for task in tasks {
                    await task.completeFromDaemon(
                        error: FerryError(.cancelled, "the session was invalidated and cancelled"),
                        info: nil
                    )
                }
                self.invalidate()
            }
            return
        }
        let (tasks, finalize) = locked.withLock { state -> ([SessionTask], Bool) in
            if case .invalidated = state.phase { return ([], false) }
            let wasValid: Bool
            if case .valid = state.phase { wasValid = true } else { wasValid = false }
            state.phase = .finishing
            return (Array(state.tasks.values), wasValid && state.tasks.isEmpty)
        }
        for task in tasks { task.cancel() }
        if finalize { invalidate() }
    }

    /// A task has delivered its completion.
    func taskEnded(_ task: SessionTask) {
        let finalize = locked.withLock { state -> Bool in
            guard state.tasks.removeValue(forKey: task.taskIdentifier) != nil else { return false }
            guard case .finishing = state.phase else { return false }
            return state.tasks.isEmpty
        }
        if finalize { invalidate() }
    }

    func invalidate() {
        locked.withLock { $0.phase = .invalidated }
        background?.close()
        let transport = self.transport
        queue.enqueue { [self] in
            try? await transport.shutdown()
            let delegate = locked.withLock { state in
                defer { state.delegate = nil }
                return state.delegate
            }
            await delegate?.session(self, didBecomeInvalidWithError: nil)
        }
        queue.finish()
    }

    // MARK: For tasks

    /// Throws why tasks of this session cannot run, if they cannot.
    func checkUsable() throws {
        if let configurationError { throw configurationError }
    }

    /// When a transfer starting now must be over (timeoutIntervalForResource).
    func resourceDeadline() -> NIODeadline {
        let seconds = configuration.timeoutIntervalForResource
        guard seconds.isFinite, seconds > 0, seconds < 1e9 else { return .distantFuture }
        return .now() + .nanoseconds(Int64(seconds * 1e9))
    }

    /// When a connection and its handshake starting now must be done (a WebSocket's, a stream task's):
    /// the configuration's timeoutIntervalForRequest, or `request`'s own timeout when shorter (Apple's
    /// rule, as for exchanges).
    func requestDeadline(_ request: Request? = nil) -> NIODeadline {
        let seconds = min(request?.timeoutInterval ?? .infinity, configuration.timeoutIntervalForRequest)
        return .now() + .nanoseconds(Int64(min(max(seconds, 0.001), 1e6) * 1e9))
    }

    /// A fresh path for a download's temporary file.
    func newDownloadPath() -> String {
        "\(downloadDirectory)/ferry-\(UUID().uuidString).tmp"
    }
}
