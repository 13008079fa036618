import FerryCore
import Foundation
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

extension TransportRequestBody {
    /// The file at `path` as a body, read chunk by chunk as it is sent (constant memory whatever its size).
    /// - Throws: ``FerryError`` (``FerryError/Code/fileDoesNotExist``, ``FerryError/Code/fileIsDirectory``
    ///   or ``FerryError/Code/noPermissionsToReadFile``) when it cannot be read.
    public static func file(path: String, chunkSize: Int = 256 * 1024) throws -> TransportRequestBody {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FerryError(.fileDoesNotExist, "\(path) does not exist; nothing to upload")
        }
        guard !isDirectory.boolValue else {
            throw FerryError(.fileIsDirectory, "\(path) is a directory; upload a file (or a multipart body)")
        }
        guard FileManager.default.isReadableFile(atPath: path),
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        else {
            throw FerryError(.noPermissionsToReadFile, "\(path) cannot be read; check its permissions")
        }
        return .stream(
            length: size,
            TransportBodyStream(FileChunks(path: path, offset: 0, length: size, chunkSize: chunkSize))
        )
    }
}
