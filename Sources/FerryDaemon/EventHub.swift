import FerryCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Who is attached to which session, and the signals their event streams wait on. At most one client
/// attaches to an identifier at a time (S6.7). Publishing never blocks the caller: a transfer's progress
/// goes into the attached stream's buffer, or nowhere when no client listens.
final class EventHub: Sendable {
    /// What an attached stream is woken by.
    enum Signal: Sendable {
        /// New journaled events may be in the store.
        case journal
        /// A progress event to pass on as it is.
        case event(BackgroundEvent)
        /// Time for a heartbeat.
        case heartbeat
        /// The daemon is stopping or the session is reset: end the stream.
        case close
    }

    struct Attachment: Sendable {
        let id: UInt64
        let pid: Int32?
        let continuation: AsyncStream<Signal>.Continuation
    }

    private struct State {
        var attachments: [String: Attachment] = [:]
        /// The process that attached last, per session (S6.4 scenario 2: a live one is not launched).
        var lastClient: [String: Int32] = [:]
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())

    /// Attaches a client to `session`.
    /// - Throws: ``FerryError/Code/backgroundSessionInUseByAnotherProcess`` when a client is attached.
    func attach(session: String, pid: Int32?) throws -> (id: UInt64, signals: AsyncStream<Signal>) {
        let (stream, continuation) = AsyncStream<Signal>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let (id, stale) = try state.withLock { state -> (UInt64, Attachment?) in
            var stale: Attachment?
            // A client killed a moment ago may not have been noticed yet (its stream ends at the next
            // heartbeat): a holder whose process is gone gives way at once. So does a holder that is the
            // process attaching again: a process has one link per identifier (the library refuses a
            // second), so its earlier stream is on its way out (a session invalidated and made again at
            // once; a loaded ferryd had not yet seen the old stream close, and refused the new session
            // for good).
            if let current = state.attachments[session], let holder = current.pid,
                holder == pid || (kill(holder, 0) != 0 && errno == ESRCH)
            {
                stale = state.attachments.removeValue(forKey: session)
            }
            if let current = state.attachments[session] {
                let who = current.pid.map { "process \($0)" } ?? "another process"
                throw FerryError(
                    .backgroundSessionInUseByAnotherProcess,
                    "the background session '\(session)' is in use by another process (\(who)); one process at a time may attach"
                )
            }
            let id = state.nextID
            state.nextID += 1
            state.attachments[session] = Attachment(id: id, pid: pid, continuation: continuation)
            state.lastClient[session] = pid
            return (id, stale)
        }
        stale?.continuation.finish()
        return (id, stream)
    }

    /// Ends an attachment (its stream closed).
    func detach(session: String, id: UInt64) {
        let removed = state.withLock { state -> Attachment? in
            guard state.attachments[session]?.id == id else { return nil }
            return state.attachments.removeValue(forKey: session)
        }
        removed?.continuation.finish()
    }

    /// The process that attached to `session` last, if it said who it is.
    func lastClient(of session: String) -> Int32? {
        state.withLock { $0.lastClient[session] }
    }

    /// Whether a client is attached to `session`.
    func isAttached(_ session: String) -> Bool {
        state.withLock { $0.attachments[session] != nil }
    }

    /// Sends `signal` to the client attached to `session`, if any.
    func signal(_ session: String, _ signal: Signal) {
        let continuation = state.withLock { $0.attachments[session]?.continuation }
        continuation?.yield(signal)
    }

    /// Sends `signal` to every attached client.
    func broadcast(_ signal: Signal) {
        let continuations = state.withLock { $0.attachments.values.map(\.continuation) }
        for continuation in continuations { continuation.yield(signal) }
    }
}
