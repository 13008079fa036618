/// A task's identity across sessions.
struct TaskKey: Hashable, Sendable, CustomStringConvertible {
    let session: String
    let identifier: Int

    var description: String { "\(session)#\(identifier)" }
}
