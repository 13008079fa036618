import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A list of values in a file that several processes share (the persistent ``CookieStore`` and
/// ``CredentialStore``): JSON, mode 0600, replaced atomically (a reader never sees half a file), written
/// under an exclusive `flock` on a lock file beside it so that concurrent writers apply their changes
/// one after another.
struct LockedJSONFile<Element: Codable>: Sendable {
    let path: String

    /// What identifies one version of the file: a change (another process's write) changes it.
    struct Stamp: Sendable, Hashable {
        var inode: UInt64
        var size: Int64
        var modified: Int64
    }

    /// The file's stamp, nil when there is none.
    func stamp() -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Stamp(
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        )
    }

    /// The values the file holds (none when it does not exist).
    func read() throws -> [Element] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return try JSONDecoder().decode([Element].self, from: data)
    }

    /// Under the lock: reads the file, lets `change` turn its values into the ones to keep, writes them.
    /// `written` gets the new file's stamp. A file that cannot be decoded is taken as empty (it is
    /// rewritten whole).
    func update(_ change: ([Element], Stamp?) throws -> [Element], written: (Stamp?) -> Void) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw FerryError(.cannotWriteToFile, "cannot open \(path).lock: \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        // Held for one read and one write of a small file; other processes wait that long at most.
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw FerryError(.cannotWriteToFile, "cannot lock \(path).lock") }
        }
        defer { flock(lock, LOCK_UN) }
        let current = (try? read()) ?? []
        let kept = try change(current, stamp())
        let data = try JSONEncoder().encode(kept)
        let temporary = path + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw FerryError(.cannotWriteToFile, "cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw FerryError(.cannotWriteToFile, "cannot replace \(path): \(String(cString: strerror(errno)))")
        }
        written(stamp())
    }
}
