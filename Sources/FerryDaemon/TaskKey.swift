import Logging

/// A task's identity across sessions.
struct TaskKey: Hashable, Sendable, CustomStringConvertible {
    let session: String
    let identifier: Int

    var description: String { "\(session)#\(identifier)" }

    /// The log fields that name the task (`session`, `task`), so that a JSON log can be filtered by them.
    var metadata: Logger.Metadata { ["session": .string(session), "task": .stringConvertible(identifier)] }
}
