import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts a program in a session of its own (a terminal's signals to the parent do not reach it), with
/// standard input from /dev/null, standard output and error appended to a log, and none of the parent's
/// other file descriptors: a listening socket or database inherited by a long-lived child would outlive
/// its owner's close. Used to start ferryd on demand and for launch commands.
///
/// Started by ``ProcessSpawn`` (why not Foundation's `Process`: there).
public enum DetachedProcess {
    /// Starts `executable` with `arguments` (without the program name) and `environment`, in
    /// `directory` (nil: this process's working directory).
    /// - Returns: the child's pid; a thread reaps it when it exits and calls `onExit` with its status.
    /// - Throws: ``FerryError`` when it cannot be started.
    @discardableResult
    public static func spawn(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        log: String,
        directory: String? = nil,
        onExit: @escaping @Sendable (Int32) -> Void = { _ in }
    ) throws -> Int32 {
        var spawn = ProcessSpawn(executable, arguments: arguments)
        spawn.environment = environment
        spawn.directory = directory
        spawn.standardOutput = .append(path: log, mode: 0o600)
        spawn.standardError = .standardOutput
        spawn.newSession = true
        let pid: pid_t
        do {
            pid = try spawn.start()
        } catch {
            throw FerryError(.unknown, error.description)
        }
        let child = pid
        Thread.detachNewThread { onExit(ProcessSpawn.reap(child)) }
        return child
    }
}
