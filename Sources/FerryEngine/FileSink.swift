import FerryCore
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes a download's bytes to a file in large writes: small buffers are gathered into a 1 MiB staging
/// buffer, large ones go straight to the file. Used by one task at a time; not thread safe.
///
/// A path that is not a regular file (a character device such as `/dev/null`, a FIFO, a socket) is
/// written through in order: never cut, never positioned, never synchronized (``isSequential``).
final class FileSink {
    /// The size at which gathered bytes are written.
    static let stagingCapacity = 1 << 20

    /// The file's path.
    let path: String
    private let descriptor: Int32
    /// Bytes in the file (written, not necessarily synchronized).
    private(set) var length: Int64
    private var staging: ByteBuffer
    /// True for a device, FIFO or socket: bytes go out in order with write(2), and what was written
    /// cannot be taken back, so such a download cannot be continued.
    let isSequential: Bool

    /// Opens (creating it if needed) the file and cuts it to its first `offset` bytes.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``, saying why.
    init(path: String, keepingFirst offset: Int64) throws {
        // A device or FIFO the user named is written through; Ferry's own part file never is, whatever
        // a link planted at its name points at (PrivateFile refuses the link below).
        if DownloadDestination.isSpecialFile(path), !PrivateFile.isWorkingName(path) {
            guard offset == 0 else {
                throw FerryError(
                    .cannotWriteToFile,
                    "cannot continue at byte \(offset) in \(path): it is not a regular file, and what was written to it cannot be taken back; download it again"
                )
            }
            self.descriptor = try Self.openSpecial(path)
            self.path = path
            self.length = 0
            self.isSequential = true
            self.staging = ByteBufferAllocator().buffer(capacity: Self.stagingCapacity)
            return
        }
        isSequential = false
        let descriptor = try PrivateFile.open(path, flags: O_WRONLY)
        guard ftruncate(descriptor, off_t(offset)) == 0 else {
            let code = errno
            close(descriptor)
            throw FerryError(.cannotCreateFile, "cannot cut \(path) to \(offset) bytes: \(Self.reason(code))")
        }
        self.path = path
        self.descriptor = descriptor
        self.length = offset
        self.staging = ByteBufferAllocator().buffer(capacity: Self.stagingCapacity)
    }

    deinit {
        close(descriptor)
    }

    /// Bytes accepted so far (in the file or staged).
    var bytesAccepted: Int64 { length + Int64(staging.readableBytes) }

    /// Adds bytes at the end.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile`` (a full disk says so).
    func append(_ buffer: ByteBuffer) throws {
        if buffer.readableBytes >= Self.stagingCapacity / 2 {
            try flush()
            try write(buffer)
            return
        }
        if staging.readableBytes + buffer.readableBytes > Self.stagingCapacity { try flush() }
        var buffer = buffer
        staging.writeBuffer(&buffer)
        if staging.readableBytes >= Self.stagingCapacity { try flush() }
    }

    /// Writes whatever is staged.
    func flush() throws {
        guard staging.readableBytes > 0 else { return }
        try write(staging)
        staging.clear()
    }

    /// Writes what is staged and returns a way to make the file durable up to its current ``length``
    /// from another thread while this sink goes on writing (the daemon's checkpoints, D1).
    func durabilityPoint() throws -> DurabilityPoint {
        try flush()
        return try DurabilityPoint(duplicating: descriptor, path: path, length: length)
    }

    private func write(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { bytes in
            if isSequential {
                try Self.writeInOrder(descriptor, bytes, path: path) { length += Int64($0) }
            } else {
                try Self.writeAll(descriptor, bytes, at: length, path: path) { length += Int64($0) }
            }
        }
    }

    /// Opens a device, FIFO or socket for writing, without creating or cutting anything. A FIFO with no
    /// reader is an error at once (opening it would wait for one forever).
    private static func openSpecial(_ path: String) throws -> Int32 {
        var info = stat()
        let isFIFO = stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO
        let descriptor = open(path, O_WRONLY | O_CLOEXEC | (isFIFO ? O_NONBLOCK : 0))
        guard descriptor >= 0 else {
            let code = errno
            if isFIFO, code == ENXIO {
                throw FerryError(
                    .cannotCreateFile,
                    "nothing is reading the FIFO \(path); start its reader first, then download again"
                )
            }
            throw FerryError(.cannotCreateFile, "cannot open \(path) for writing: \(reason(code))")
        }
        if isFIFO {
            // Opened without waiting for a reader; writes wait for it to drain as usual.
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        }
        return descriptor
    }

    /// Writes all of `bytes` at the descriptor's current position (write until done, again after EINTR).
    private static func writeInOrder(
        _ descriptor: Int32,
        _ bytes: UnsafeRawBufferPointer,
        path: String,
        wrote: (Int) -> Void
    ) throws {
        var done = 0
        while done < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                let hint = code == EPIPE ? "; its reader went away" : ""
                throw FerryError(.cannotWriteToFile, "cannot write \(path): \(reason(code))\(hint)")
            }
            done += written
            wrote(written)
        }
    }

    /// Writes all of `bytes` at `offset` (pwrite until done, again after EINTR), telling `wrote` each
    /// piece written, so a failure leaves the caller knowing what reached the file.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile`` (a full disk says so).
    static func writeAll(
        _ descriptor: Int32,
        _ bytes: UnsafeRawBufferPointer,
        at offset: Int64,
        path: String,
        wrote: (Int) -> Void = { _ in }
    ) throws {
        var done = 0
        while done < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + done, bytes.count - done, at: offset + Int64(done))
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                // What can be continued afterwards is the caller's to say (a decoded body cannot be).
                let hint = code == ENOSPC || code == EDQUOT ? " (free some space first)" : ""
                throw FerryError(.cannotWriteToFile, "cannot write \(path): \(reason(code))\(hint)")
            }
            done += written
            wrote(written)
        }
    }

    /// pwrite. In debug builds, a disk that fills up, for tests (docs/RELIABILITY.md): writes past
    /// `FERRY_DEBUG_DISK_LIMIT` bytes of a file fail with ENOSPC as a full disk's would (the bytes that
    /// fit are written).
    static func write(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int, at offset: Int64) -> Int {
        #if DEBUG
        if let limit = debugDiskLimit {
            let fitting = Int(max(0, min(Int64(count), limit - offset)))
            guard fitting > 0 else {
                errno = ENOSPC
                return -1
            }
            return pwrite(descriptor, pointer, fitting, off_t(offset))
        }
        #endif
        return pwrite(descriptor, pointer, count, off_t(offset))
    }

    #if DEBUG
    /// See ``write(_:_:_:at:)``: debug builds only.
    static let debugDiskLimit: Int64? = ProcessInfo.processInfo.environment["FERRY_DEBUG_DISK_LIMIT"].flatMap(
        Int64.init
    )
    #endif

    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// A file's first ``length`` bytes, written and waiting to be made durable; ``synchronize()`` may run on
/// any thread (its own descriptor, closed after).
struct DurabilityPoint: Sendable {
    let path: String
    let descriptor: Int32
    /// Bytes in the file when the point was taken: durable once ``synchronize()`` returns.
    let length: Int64

    /// Closes the descriptor without synchronizing (a checkpoint that only needs the bytes written).
    func discard() {
        close(descriptor)
    }

    /// fdatasync, then the descriptor is closed.
    func synchronize() throws {
        defer { close(descriptor) }
        // EINVAL: a device or FIFO, which has nothing to synchronize.
        guard fdatasync(descriptor) == 0 || errno == EINVAL else {
            throw FerryError(.cannotWriteToFile, "cannot synchronize \(path): \(FileSink.reason(errno))")
        }
    }
}

extension DurabilityPoint {
    /// A point for the first `length` bytes of the file open at `descriptor`, with a descriptor of its own.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile`` when it cannot be duplicated.
    init(duplicating descriptor: Int32, path: String, length: Int64) throws {
        let copy = dup(descriptor)
        guard copy >= 0 else {
            throw FerryError(.cannotWriteToFile, "cannot synchronize \(path): \(FileSink.reason(errno))")
        }
        self.init(path: path, descriptor: copy, length: length)
    }
}
