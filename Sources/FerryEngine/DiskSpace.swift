import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Free space where a file is to be written, so a body the server announces as larger than the disk
/// can take is refused before a byte is written (a full disk mid-way leaves a part file to deal with).
enum DiskSpace {
    /// Bytes an unprivileged writer may still use on the file system that holds `path`'s directory,
    /// or nil when it cannot be told (then nothing is refused in advance).
    static func available(forFileAt path: String) -> Int64? {
        #if DEBUG
        // Debug builds: a disk with this much free, for tests (docs/RELIABILITY.md).
        if let free = ProcessInfo.processInfo.environment["FERRY_DEBUG_DISK_FREE"].flatMap(Int64.init) { return free }
        #endif
        var info = statvfs()
        let directory = (path as NSString).deletingLastPathComponent
        guard statvfs(directory.isEmpty ? "." : directory, &info) == 0 else { return nil }
        let (blocks, size) = (Int64(info.f_bavail), Int64(info.f_frsize))
        guard size > 0, blocks <= Int64.max / size else { return nil }
        return blocks * size
    }

    /// Throws when `length` more bytes do not fit after the first `keeping` bytes of `path`.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile``, naming both figures.
    static func check(_ length: Int64, for path: String, keeping: Int64, url: String) throws {
        guard length > 0, let free = available(forFileAt: path) else { return }
        let held = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        // What the file holds past the bytes kept is cut before writing: its space counts as free.
        guard length > free + max(0, held - keeping) else { return }
        throw FerryError(
            .cannotWriteToFile,
            "the server announces \(length) bytes, but \((path as NSString).deletingLastPathComponent) has only \(free) bytes free; nothing was written: free some space, then try again",
            failingURL: url
        )
    }
}
