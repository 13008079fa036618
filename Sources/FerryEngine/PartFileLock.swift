public import FerryCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One writer per part file: an exclusive `flock` on the part file, held while a download writes it,
/// renames it into place or removes it. A second download to the same destination — in this process,
/// another `ferry`, or a program using Ferry — fails at once with an error naming the holder instead of
/// writing into the same bytes (two writers of one part file produced a file matching neither resource).
///
/// `flock` locks conflict between open file descriptions even within one process, and the kernel drops
/// them when the holder dies, so a crashed download never leaves a stale lock.
///
/// A lock this process released can still look held for a moment: a program another thread is starting
/// (posix_spawn) holds a copy of every descriptor until its exec closes them, and with it the lock.
/// ``acquire(_:)`` waits that moment out (two seconds at most, without blocking a thread) when no lock
/// of this process holds the file and the system names this process as the holder (or names none:
/// `/proc/locks` has been seen without the line).
public final class PartFileLock: Sendable {
    /// The part file locked.
    public let path: String
    private let descriptor: Mutex<Int32?>
    private let file: FileIdentity

    /// A file by device and inode.
    struct FileIdentity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The files this process's live locks hold.
    private static let heldHere = Mutex<Set<FileIdentity>>([])

    private init(path: String, descriptor: Int32, file: FileIdentity) {
        self.path = path
        self.descriptor = Mutex(descriptor)
        self.file = file
    }

    deinit {
        release()
    }

    /// Creates `path` if missing and locks it, waiting out a lock this process released that a program
    /// being started still holds for a moment (up to two seconds).
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``: when another download holds
    ///   the lock (naming its process when the system says), or when the file cannot be created.
    public static func acquire(_ path: String) async throws -> PartFileLock {
        let end = ContinuousClock.now + .seconds(2)
        while true {
            do {
                return try lock(path)
            } catch let busy as Busy {
                guard busy.lingering, ContinuousClock.now < end else { throw busy.error }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// The lock is held: by this process's released lock lingering in a child being started
    /// (`lingering`), or by another download (`error` says so).
    private struct Busy: Error {
        var error: FerryError
        var lingering: Bool
    }

    /// Creates `path` if missing and locks it now, without waiting out a lingering lock (for a check in
    /// a process that starts no programs meanwhile, such as the CLI's).
    /// - Throws: ``FerryError`` as ``acquire(_:)``.
    public static func acquireNow(_ path: String) throws -> PartFileLock {
        do {
            return try lock(path)
        } catch let busy as Busy {
            throw busy.error
        }
    }

    /// Creates `path` if missing and locks it now; ``Busy`` when it is held.
    private static func lock(_ path: String) throws -> PartFileLock {
        // The file may be renamed or removed between our open and our lock (its last writer finishing):
        // the lock is ours only if the path still names the file we locked.
        for _ in 0..<8 {
            // Never through a link, and only a file that is this user's alone (PrivateFile says why).
            let descriptor = try PrivateFile.open(path, flags: O_RDWR)
            if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                var info = stat()
                let file = fstat(descriptor, &info) == 0 ? FileIdentity(info) : nil
                close(descriptor)
                guard code == EWOULDBLOCK || code == EAGAIN else {
                    throw FerryError(.cannotCreateFile, "cannot lock \(path): \(FileSink.reason(code))")
                }
                let holder: Int32? = file.flatMap { Self.holder(ofInode: $0.inode) }
                let heldHere: Bool = file.map { file in Self.heldHere.withLock { $0.contains(file) } } ?? true
                throw Busy(
                    error: FerryError(
                        .cannotCreateFile,
                        "another download is writing \(path)\(holder.map { " (" + Self.describe($0) + ")" } ?? ""); wait for it to end, or save to another name"
                    ),
                    lingering: !heldHere && (holder == nil || holder == getpid())
                )
            }
            var locked = stat()
            var named = stat()
            if fstat(descriptor, &locked) == 0, stat(path, &named) == 0, locked.st_ino == named.st_ino,
                locked.st_dev == named.st_dev
            {
                let file = FileIdentity(locked)
                Self.heldHere.withLock { _ = $0.insert(file) }
                return PartFileLock(path: path, descriptor: descriptor, file: file)
            }
            close(descriptor)
        }
        throw FerryError(.cannotCreateFile, "cannot lock \(path): it keeps being replaced by another download")
    }

    /// Gives the lock up (idempotent; also when the lock is deallocated).
    public func release() {
        let released = descriptor.withLock { held -> Bool in
            defer { held = nil }
            guard let open = held else { return false }
            close(open)
            return true
        }
        if released { _ = Self.heldHere.withLock { $0.remove(file) } }
    }

    /// The pid of the process holding a lock on the file with `inode`, from `/proc/locks`.
    static func holder(ofInode inode: UInt64) -> Int32? {
        guard let table = ProcFile.read("/proc/locks") else { return nil }
        for line in table.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, UInt64(device[2]) == inode else { continue }
            return pid
        }
        return nil
    }

    /// A holder as the error names it: "this process", or "process 1234, ferry".
    static func describe(_ pid: Int32) -> String {
        if pid == getpid() { return "this process" }
        let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return "process \(pid)" + (name.map { ", \($0)" } ?? "")
    }
}

extension PartFileLock.FileIdentity {
    init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
