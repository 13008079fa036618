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
public final class PartFileLock: Sendable {
    /// The part file locked.
    public let path: String
    private let descriptor: Mutex<Int32?>

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    deinit {
        release()
    }

    /// Creates `path` if missing and locks it.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``: when another download holds
    ///   the lock (naming its process when the system says), or when the file cannot be created.
    public static func acquire(_ path: String) throws -> PartFileLock {
        // The file may be renamed or removed between our open and our lock (its last writer finishing):
        // the lock is ours only if the path still names the file we locked.
        for _ in 0..<8 {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw FerryError(.cannotCreateFile, "cannot create \(path): \(FileSink.reason(errno))")
            }
            if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                var info = stat()
                let inode = fstat(descriptor, &info) == 0 ? UInt64(info.st_ino) : nil
                close(descriptor)
                guard code == EWOULDBLOCK || code == EAGAIN else {
                    throw FerryError(.cannotCreateFile, "cannot lock \(path): \(FileSink.reason(code))")
                }
                let holder = inode.flatMap(holder(ofInode:)).map { " (\($0))" } ?? ""
                throw FerryError(
                    .cannotCreateFile,
                    "another download is writing \(path)\(holder); wait for it to end, or save to another name"
                )
            }
            var locked = stat()
            var named = stat()
            if fstat(descriptor, &locked) == 0, stat(path, &named) == 0, locked.st_ino == named.st_ino,
                locked.st_dev == named.st_dev
            {
                return PartFileLock(path: path, descriptor: descriptor)
            }
            close(descriptor)
        }
        throw FerryError(.cannotCreateFile, "cannot lock \(path): it keeps being replaced by another download")
    }

    /// Gives the lock up (idempotent; also when the lock is deallocated).
    public func release() {
        descriptor.withLock { held in
            if let open = held { close(open) }
            held = nil
        }
    }

    /// The process holding a lock on the file with `inode`, from `/proc/locks`: "process 1234, ferry".
    static func holder(ofInode inode: UInt64) -> String? {
        guard let table = ProcFile.read("/proc/locks") else { return nil }
        for line in table.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, UInt64(device[2]) == inode else { continue }
            if pid == getpid() { return "this process" }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return "process \(pid)" + (name.map { ", \($0)" } ?? "")
        }
        return nil
    }
}
