import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

// glibc ≥ 2.29; Swift's Glibc module does not export it.
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func addChangeDirectory(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32

/// Starts a program in a session of its own (a terminal's signals to the parent do not reach it), with
/// standard input from /dev/null, standard output and error appended to a log, and none of the parent's
/// other file descriptors: a listening socket or database inherited by a long-lived child would outlive
/// its owner's close. Used to start ferryd on demand and for launch commands.
///
/// Foundation's `Process` neither starts a new session nor promises to close inherited descriptors,
/// hence posix_spawn here.
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
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26): the child leads a new session.
        posix_spawnattr_setflags(&attributes, Int16(0x80))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        _ = addCloseFrom(&actions, 3)
        if let directory { _ = directory.withCString { addChangeDirectory(&actions, $0) } }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw FerryError(.unknown, "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        let child = pid
        Thread.detachNewThread {
            var code: Int32 = 0
            waitpid(child, &code, 0)
            onExit((code >> 8) & 0xFF)
        }
        return child
    }
}
