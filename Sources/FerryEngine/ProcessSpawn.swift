import Foundation

#if canImport(Glibc)
import Glibc
#endif

// glibc ≥ 2.34 and ≥ 2.29; Swift's Glibc module does not export them.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func addChangeDirectory(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32

/// The one way Ferry starts a program: posix_spawn with exactly the descriptors, directory, session
/// and environment asked for. ferryd on demand and launch commands (``DetachedProcess``), short helper
/// programs (``HelperProgram``) and the test server's peers (`ChildProcess`) all start here.
///
/// Not Foundation's `Process`: on Linux its `run()` copies 256 bytes for every entry of /proc/self/fd,
/// which can read past glibc's buffer and crash the parent (swiftlang/swift-corelibs-foundation#5472,
/// fixed after Swift 6.3.1; it crashed full test runs twice), it cannot start a new session, and it
/// does not promise to close inherited descriptors. Not swift-subprocess either (measured): its waits
/// run on the cooperative pool, and under a loaded full test run a program that prints one line took
/// over 2 s to be read, and one killed at a 0.5 s timeout took 17 s to be done with.
public struct ProcessSpawn: Sendable {
    /// Where one of the child's standard descriptors comes from or goes.
    public enum Stream: Sendable, Equatable {
        /// This process's own.
        case inherit
        /// /dev/null.
        case null
        /// A descriptor of this process (a pipe's end, say).
        case descriptor(Int32)
        /// Appended to the file at `path`, created with `mode` if missing (standard output and error).
        case append(path: String, mode: UInt32)
        /// Where standard output goes (standard error only).
        case standardOutput
    }

    /// Why a program could not be started.
    public struct Failure: Error, CustomStringConvertible {
        /// posix_spawn's error number (ENOENT, EACCES, ...).
        public let code: Int32
        public let executable: String
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// A path, or with ``searchesPath`` a name looked up in PATH.
    public var executable: String
    /// Without the program's name (it is `executable`).
    public var arguments: [String] = []
    /// Exactly this environment; nil: this process's.
    public var environment: [String: String]?
    /// Where the child starts; nil: this process's working directory.
    public var directory: String?
    public var searchesPath = false
    public var standardInput: Stream = .null
    public var standardOutput: Stream = .inherit
    public var standardError: Stream = .inherit
    /// Descriptors of this process that become the child's 3, 4, … in order (as systemd passes sockets);
    /// every other one is closed in the child.
    public var passing: [Int32] = []
    /// The child leads a session of its own: a terminal's signals to this process do not reach it.
    public var newSession = false
    /// The child leads a process group of its own (so that it and what it starts can be killed together).
    public var ownProcessGroup = false

    public init(_ executable: String, arguments: [String] = []) {
        self.executable = executable
        self.arguments = arguments
    }

    /// Starts the program; returns its pid. The caller reaps it.
    public func start() throws(Failure) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags: Int32 = 0
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26; not in Swift's Glibc module).
        if newSession { flags |= 0x80 }
        if ownProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        Self.redirect(standardInput, to: 0, reading: true, &actions)
        Self.redirect(standardOutput, to: 1, reading: false, &actions)
        Self.redirect(standardError, to: 2, reading: false, &actions)
        for (index, descriptor) in passing.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 3 + Int32(index))
        }
        _ = addCloseFrom(&actions, 3 + Int32(passing.count))
        if let directory { _ = directory.withCString { addChangeDirectory(&actions, $0) } }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let code =
            searchesPath
            ? posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
            : posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw Failure(code: code, executable: executable) }
        return pid
    }

    private static func redirect(_ stream: Stream, to target: Int32, reading: Bool, _ actions: inout posix_spawn_file_actions_t) {
        switch stream {
        case .inherit:
            break
        case .null:
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
        case .descriptor(let descriptor):
            posix_spawn_file_actions_adddup2(&actions, descriptor, target)
        case .append(let path, let mode):
            posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, mode_t(mode))
        case .standardOutput:
            posix_spawn_file_actions_adddup2(&actions, 1, target)
        }
    }

    /// Waits for `pid` (blocking: call it on a thread of its own); its exit status, or 128 + the signal
    /// that ended it; -1 when it cannot be waited for.
    public static func reap(_ pid: Int32) -> Int32 {
        var code: Int32 = 0
        while waitpid(pid, &code, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = code & 0x7F
        return signal == 0 ? (code >> 8) & 0xFF : 128 + signal
    }
}
