import FerryCore
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Standard input as a request body (`ferry put - URL`): each element is what one read returned, up to
/// 64 KiB. A read is made only when the sender asks for the next chunk, so a slow server holds the
/// producer back through the pipe. The blocking read runs on a dispatch queue of its own: stdin may be a
/// regular file, which an event loop cannot watch, and a blocking read must not hold a thread of the
/// cooperative pool.
struct StandardInputChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The bytes stdin holds from here on when it is a regular file (`< file`), else nil (a pipe or a
    /// terminal: the length is unknown, and the body goes chunked).
    static var knownLength: Int64? {
        var info = stat()
        guard fstat(STDIN_FILENO, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let offset = lseek(STDIN_FILENO, 0, SEEK_CUR)
        guard offset >= 0 else { return nil }
        return Swift.max(0, Int64(info.st_size) - Int64(offset))
    }

    func makeAsyncIterator() -> Iterator { Iterator() }

    struct Iterator: AsyncIteratorProtocol {
        private let reader = Reader()

        mutating func next() async throws -> ByteBuffer? {
            try await reader.next()
        }
    }

    /// Reads on its queue, one read per request.
    private final class Reader: @unchecked Sendable {
        private let queue = DispatchQueue(label: "ferry.stdin.body")
        // Touched only on `queue`.
        private var ended = false

        func next() async throws -> ByteBuffer? {
            try await withCheckedThrowingContinuation { continuation in
                queue.async { continuation.resume(with: Result { try self.read() }) }
            }
        }

        private func read() throws -> ByteBuffer? {
            guard !ended else { return nil }
            var buffer = ByteBuffer()
            while true {
                var result = 0
                var code: Int32 = 0
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 65536) { raw in
                    result = Glibc.read(STDIN_FILENO, raw.baseAddress, raw.count)
                    code = errno
                    return Swift.max(result, 0)
                }
                if result > 0 { return buffer }
                if result < 0, code == EINTR { continue }
                ended = true
                if result < 0 {
                    throw FerryError(.noPermissionsToReadFile, "cannot read stdin: \(String(cString: strerror(code)))")
                }
                return nil  // the end of stdin
            }
        }
    }
}
