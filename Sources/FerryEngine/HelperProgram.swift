import FerryCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// pipe2(2) (Glibc's module map leaves it out): both ends close-on-exec from the start, so no program
/// another thread starts meanwhile inherits them.
@_silgen_name("pipe2")
private func pipe2(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// Short-lived helper programs Ferry runs (NetworkManager's query, `systemctl --user`), started with
/// posix_spawn and waited for on a thread of their own.
///
/// Started by ``ProcessSpawn`` (why not Foundation's `Process` or swift-subprocess: there); `Process.run()`
/// crashed full test runs twice, once in this library's network probe, which ferryd runs all day.
public enum HelperProgram {
    /// What the program at `executable` prints on stdout (at most 1 MiB kept), when it exits with 0
    /// within `timeout` seconds; nil when it cannot be started, fails, or takes longer (it is killed
    /// then, with the processes it started: it runs in a process group of its own).
    public static func output(of executable: String, _ arguments: [String], timeout: Double) async -> String? {
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else { return nil }
        let (reader, writer) = (ends[0], ends[1])
        var spawn = ProcessSpawn(executable, arguments: arguments)
        spawn.standardOutput = .descriptor(writer)
        spawn.standardError = .null
        spawn.ownProcessGroup = true
        let spawned = Result { () throws(ProcessSpawn.Failure) in try spawn.start() }
        close(writer)
        guard case .success(let pid) = spawned else {
            close(reader)
            return nil
        }
        let child = Child(pid: pid)
        // The deadline is kept on the waiting thread itself (poll's timeout, then a wait for the exit),
        // not by a sleeping task: under a loaded full test run the cooperative pool woke such a task
        // late, and a program meant to be given up after 2 s was waited for over 10 s.
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, timeout) * 1e9)
        let (status, output): (Int32, [UInt8]) = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var output: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while let wait = Self.milliseconds(until: deadline) {
                    var ready = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                    let polled = poll(&ready, 1, wait)
                    if polled < 0, errno == EINTR { continue }
                    if polled < 0 { break }
                    if polled == 0 { continue }
                    let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    if output.count < 1 << 20 { output += buffer[0..<count] }
                }
                close(reader)
                continuation.resume(returning: (child.reap(before: deadline), output))
            }
        }
        guard status == 0 else { return nil }
        return String(decoding: output, as: UTF8.self)
    }

    /// Runs the program `name` (looked up in PATH) with `arguments`, its output going where this
    /// process's goes, and returns its exit status (128 + the signal for one that was killed).
    /// - Throws: ``FerryError`` with ``FerryError/Code/fileDoesNotExist`` when it cannot be started.
    public static func status(ofProgramNamed name: String, _ arguments: [String]) async throws -> Int32 {
        var spawn = ProcessSpawn(name, arguments: arguments)
        spawn.searchesPath = true
        spawn.standardInput = .inherit
        let pid: pid_t
        do {
            pid = try spawn.start()
        } catch {
            throw FerryError(.fileDoesNotExist, "cannot run \(name): \(String(cString: strerror(error.code)))")
        }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: ProcessSpawn.reap(pid)) }
        }
    }

    /// A started program in its own process group, killed at most until it is reaped: until then its
    /// pid (and group id) cannot be another process's.
    private final class Child: Sendable {
        let pid: pid_t
        private let reaping = Mutex(false)

        init(pid: pid_t) { self.pid = pid }

        /// Kills its process group, unless it is being reaped.
        func kill() {
            reaping.withLock { reaping in if !reaping { _ = Glibc.kill(-pid, SIGKILL) } }
        }

        /// Waits for it (blocking: on a thread of its own) until `deadline` (uptime nanoseconds), kills
        /// it then, and returns its exit status, or 128 + its signal. It is watched without being reaped
        /// (WNOWAIT, every 5 ms: it has usually exited by the time its output ends), and only then
        /// marked and reaped, so a kill never reaches another process that took its pid.
        func reap(before deadline: UInt64) -> Int32 {
            var info = siginfo_t()
            while true {
                info._sifields._kill.si_pid = 0
                let waited = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT | WNOHANG)
                if waited < 0, errno == EINTR { continue }
                if waited < 0 || info._sifields._kill.si_pid != 0 { break }
                guard HelperProgram.milliseconds(until: deadline) != nil else {
                    kill()
                    break
                }
                usleep(5000)
            }
            reaping.withLock { $0 = true }
            return ProcessSpawn.reap(pid)
        }
    }

    /// Milliseconds left until `deadline` (uptime nanoseconds), at least 1; nil once it has passed.
    private static func milliseconds(until deadline: UInt64) -> Int32? {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now < deadline else { return nil }
        return Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max)))
    }
}
