import FerryEngine
public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process for tests that run Ferry's executables (or curl) as a user would, started by
/// FerryEngine's `ProcessSpawn` (why not Foundation's `Process`: there; it crashed this suite once).
public final class ChildProcess: @unchecked Sendable {
    /// Where the child's standard output and error go.
    public enum Output: Sendable {
        /// To pipes: ``standardOutput`` and ``standardError`` read them.
        case pipes
        /// Appended to this file, both.
        case file(String)
        /// Nowhere (/dev/null).
        case discarded
    }

    /// The built executable `name` (`ferry`, `ferryd`, `ferry-testserver`) beside the running test
    /// binary: the first directory up from this process's executable that holds it.
    public static func builtProduct(_ name: String) -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = (executable as NSString).deletingLastPathComponent
        // The test bundle may sit inside a .xctest directory.
        while !FileManager.default.isExecutableFile(atPath: directory + "/" + name), directory.count > 1 {
            directory = (directory as NSString).deletingLastPathComponent
        }
        return directory + "/" + name
    }

    /// The child's pid.
    public let processIdentifier: Int32
    /// The read end of the child's standard output, with ``Output/pipes``.
    public let standardOutput: FileHandle?
    /// The read end of the child's standard error, with ``Output/pipes``.
    public let standardError: FileHandle?
    private let lock = NSLock()
    private var status: Int32?

    private init(pid: Int32, standardOutput: FileHandle?, standardError: FileHandle?) {
        self.processIdentifier = pid
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// Starts `executable` (a path) with `arguments` and exactly `environment`; standard input is
    /// /dev/null and no other descriptor of this process is inherited, except `passing`: those become
    /// the child's descriptors 3, 4, … in order (as systemd passes sockets, `LISTEN_FDS`).
    /// - Throws: ``TestServerError`` when it cannot be started.
    public static func spawn(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        directory: String? = nil,
        output: Output = .pipes,
        passing: [Int32] = []
    ) throws -> ChildProcess {
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        if case .pipes = output {
            guard pipe(&out) == 0, pipe(&err) == 0 else {
                throw TestServerError("pipe failed: \(String(cString: strerror(errno)))")
            }
        }
        var spawn = ProcessSpawn(executable, arguments: arguments)
        spawn.environment = environment
        spawn.directory = directory
        spawn.passing = passing
        switch output {
        case .pipes:
            spawn.standardOutput = .descriptor(out[1])
            spawn.standardError = .descriptor(err[1])
        case .file(let path):
            spawn.standardOutput = .append(path: path, mode: 0o644)
            spawn.standardError = .standardOutput
        case .discarded:
            spawn.standardOutput = .null
            spawn.standardError = .standardOutput
        }
        let started = Result { () throws(ProcessSpawn.Failure) in try spawn.start() }
        for descriptor in [out[1], err[1]] where descriptor >= 0 { close(descriptor) }
        let pid: pid_t
        switch started {
        case .success(let started): pid = started
        case .failure(let failure):
            for descriptor in [out[0], err[0]] where descriptor >= 0 { close(descriptor) }
            throw TestServerError(failure.description)
        }
        return ChildProcess(
            pid: pid,
            standardOutput: out[0] >= 0 ? FileHandle(fileDescriptor: out[0], closeOnDealloc: true) : nil,
            standardError: err[0] >= 0 ? FileHandle(fileDescriptor: err[0], closeOnDealloc: true) : nil
        )
    }

    /// Whether the child still runs (it is reaped once it has ended).
    public var isRunning: Bool { reap(blocking: false) }

    /// Waits for the child to end.
    public func waitUntilExit() { _ = reap(blocking: true) }

    /// Waits for the child to end, on a thread of its own (``offPool(_:)``): what async tests call.
    public func exited() async {
        await offPool { self.waitUntilExit() }
    }

    /// Sends SIGTERM.
    public func terminate() { kill(processIdentifier, SIGTERM) }

    /// The exit status, or the signal's number when a signal ended it (as Foundation's `Process`
    /// reports it); -1 while it runs.
    public var terminationStatus: Int32 {
        lock.lock()
        defer { lock.unlock() }
        return status ?? -1
    }

    private func reap(blocking: Bool) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard status == nil else { return false }
        var code: Int32 = 0
        var result: pid_t
        repeat {
            result = waitpid(processIdentifier, &code, blocking ? 0 : WNOHANG)
        } while result == -1 && errno == EINTR
        guard result == processIdentifier else { return true }
        status = (code & 0x7F) == 0 ? (code >> 8) & 0xFF : code & 0x7F
        return false
    }
}

/// Runs `body`, which blocks (a child's exit, a pipe's end), on a thread of its own and returns its
/// value. Async tests wait with it: a blocking call on Swift's cooperative pool (two threads on a
/// two-core machine) stalls every other test in the process for as long as it blocks.
public func offPool<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

extension FileHandle {
    /// Everything until end of file, read on a thread of its own: a blocking read on Swift's
    /// cooperative pool (two threads on a two-core machine) stalled every other test in the process for
    /// as long as the child ran.
    public func readToEndOffPool() async -> Data {
        await offPool { self.readDataToEndOfFile() }
    }

    /// The first line (without its newline), read on a thread of its own; nil at end of file before a
    /// newline. For peers that bind port 0 and print the port they got: no race with other listeners
    /// for a port that was free a moment ago.
    public func readLineOffPool() async -> String? {
        await withCheckedContinuation { continuation in
            let thread = Thread { [self] in
                var line = Data()
                while true {
                    let byte = readData(ofLength: 1)
                    if byte.isEmpty { return continuation.resume(returning: nil) }
                    if byte.first == UInt8(ascii: "\n") { break }
                    line.append(byte)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
            thread.start()
        }
    }
}
