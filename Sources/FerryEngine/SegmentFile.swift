import FerryCore
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The file of a segmented download: it has the resource's full length from the start (space reserved
/// where the file system can, so a full disk is found before the transfer, not in its middle), and each
/// connection writes its bytes at their offsets. Writes are serialized by the caller
/// (``SegmentCoordinator`` holds its lock), so the file needs no lock of its own.
final class SegmentFile: Sendable {
    /// The file's path.
    let path: String
    private let descriptor: Int32

    /// Opens (creating it if needed) the file and gives it `length` bytes. With `fresh`, what it held is
    /// discarded first; otherwise the bytes already there stay (a continuation).
    /// - Throws: ``FerryError``: ``FerryError/Code/cannotCreateFile``, or ``FerryError/Code/cannotWriteToFile``
    ///   when the disk has no room for `length` bytes.
    init(path: String, length: Int64, fresh: Bool) throws {
        let descriptor = try PrivateFile.open(path, flags: O_WRONLY)
        if fresh || Self.size(descriptor) != length {
            if fresh { _ = ftruncate(descriptor, 0) }
            guard ftruncate(descriptor, off_t(length)) == 0 else {
                let code = errno
                close(descriptor)
                throw FerryError(.cannotCreateFile, "cannot size \(path) to \(length) bytes: \(FileSink.reason(code))")
            }
        }
        // Reserve the blocks (holes would otherwise fill, and could fail, mid-transfer). Other failures
        // (a file system that cannot) leave a sparse file.
        if length > 0 {
            let result = posix_fallocate(descriptor, 0, off_t(length))
            if result == ENOSPC || result == EDQUOT {
                let code = result
                // The length set above was a hole, not data: a fresh file goes back to empty rather than
                // stay a sparse file of the full size.
                if fresh { _ = ftruncate(descriptor, 0) }
                close(descriptor)
                throw FerryError(
                    .cannotWriteToFile,
                    "cannot reserve \(length) bytes for \(path): \(FileSink.reason(code)); free some space, then resume"
                )
            }
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Writes `buffer`'s first `count` readable bytes at `offset`.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile`` (a full disk says so).
    func write(_ buffer: ByteBuffer, count: Int, at offset: Int64) throws {
        try buffer.withUnsafeReadableBytes { bytes in
            try FileSink.writeAll(descriptor, UnsafeRawBufferPointer(rebasing: bytes[..<count]), at: offset, path: path)
        }
    }

    /// A way to make what was written so far durable from another thread (a checkpoint, D1).
    func durabilityPoint(length: Int64) throws -> DurabilityPoint {
        try DurabilityPoint(duplicating: descriptor, path: path, length: length)
    }

    private static func size(_ descriptor: Int32) -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return -1 }
        return Int64(status.st_size)
    }
}
