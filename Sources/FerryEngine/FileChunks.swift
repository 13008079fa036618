import FerryCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// A file read chunk by chunk at offsets (SPEC S4.2): the whole file is never in memory.
///
/// Each iteration opens the file anew, so the sequence can be sent again (a retry, a 307 redirect).
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let path: String
    let offset: Int64
    let length: Int64
    let chunkSize: Int

    func makeAsyncIterator() -> Iterator {
        Iterator(path: path, position: offset, remaining: length, chunkSize: chunkSize)
    }

    struct Iterator: AsyncIteratorProtocol {
        let path: String
        var position: Int64
        var remaining: Int64
        let chunkSize: Int
        var descriptor: Int32 = -1

        init(path: String, position: Int64, remaining: Int64, chunkSize: Int) {
            self.path = path
            self.position = position
            self.remaining = remaining
            self.chunkSize = chunkSize
        }

        mutating func next() async throws -> ByteBuffer? {
            guard remaining > 0 else {
                if descriptor >= 0 {
                    close(descriptor)
                    descriptor = -1
                }
                return nil
            }
            if descriptor < 0 {
                descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else {
                    throw FerryError(
                        .fileDoesNotExist,
                        "cannot open \(path) to upload it: \(String(cString: strerror(errno)))"
                    )
                }
            }
            let count = Int(Swift.min(Int64(chunkSize), remaining))
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var got = 0
            let fd = descriptor
            let at = position
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                got = pread(fd, pointer.baseAddress, count, off_t(at))
                return Swift.max(0, got)
            }
            guard got > 0 else {
                close(descriptor)
                descriptor = -1
                throw FerryError(
                    .noPermissionsToReadFile,
                    "\(path) ended or failed at byte \(position) while \(remaining) more bytes were expected; was it changed during the upload?"
                )
            }
            position += Int64(got)
            remaining -= Int64(got)
            return buffer
        }
    }
}
