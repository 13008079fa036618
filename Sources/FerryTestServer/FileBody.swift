import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open regular file served by `/files/...`; closed when the response ends.
final class FileBody: Sendable {
    let descriptor: Int32
    let size: Int64
    /// Modification time, seconds since the epoch.
    let modified: Int64
    /// Modification time's nanoseconds, for the ETag.
    let modifiedNanoseconds: Int

    /// Opens `path` for reading; nil when it is missing or not a regular file.
    init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        self.size = Int64(info.st_size)
        self.modified = Int64(info.st_mtim.tv_sec)
        self.modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
    }

    deinit {
        close(descriptor)
    }

    /// Reads `count` bytes at `offset` on the thread pool; a short read (the file shrank) is an error.
    func read(offset: Int64, count: Int, pool: NIOThreadPool, eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer> {
        pool.runIfActive(eventLoop: eventLoop) {
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var done = 0
            while done < count {
                var got = 0
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { pointer in
                    got = pread(self.descriptor, pointer.baseAddress, count - done, off_t(offset + Int64(done)))
                    return max(0, got)
                }
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { throw IOError(errnoCode: got < 0 ? errno : EIO, reason: "pread") }
                done += got
            }
            return buffer
        }
    }
}
