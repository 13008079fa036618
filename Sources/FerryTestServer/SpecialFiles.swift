public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Device nodes and FIFOs for tests of downloads to destinations that are not regular files (made in a
/// test's own directory: never the machine's /dev/null).
public enum SpecialFiles {
    /// Makes a character device like /dev/null (1, 3) at `path` (needs root, or CAP_MKNOD).
    public static func makeNullDevice(_ path: String) throws {
        // glibc's makedev(1, 3), a macro Swift does not import.
        guard mknod(path, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 else {
            throw TestServerError("mknod \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether this process may make device nodes (root with CAP_MKNOD): tried once in a temporary
    /// directory. Tests that need one are skipped with the reason when it may not.
    public static let canMakeDevices: Bool = {
        let path = NSTemporaryDirectory() + "/ferry-mknod-probe-\(getpid())"
        defer { unlink(path) }
        return (try? makeNullDevice(path)) != nil
    }()

    /// Makes a FIFO at `path`.
    public static func makeFIFO(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else {
            throw TestServerError("mkfifo \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The file type bits of `path` (`S_IFREG`, `S_IFCHR`, `S_IFIFO`, `S_IFLNK`, ...), or 0 when it does
    /// not exist. `following` follows symbolic links.
    public static func type(of path: String, following: Bool = true) -> mode_t {
        var info = stat()
        let status = following ? stat(path, &info) : lstat(path, &info)
        return status == 0 ? info.st_mode & S_IFMT : 0
    }
}

/// Reads everything written into a FIFO, on a thread of its own (its reads block).
///
/// The FIFO has a reader from ``init(_:)`` on (a non-blocking descriptor), so a writer that opens it
/// without waiting finds one; the bytes are read by a second descriptor that waits for the writer and
/// ends at the writer's close.
public final class FIFOReader: @unchecked Sendable {
    private let holder: Int32
    private let done = NSCondition()
    private var data: Data?

    /// Opens `path` for reading and starts collecting.
    public init(_ path: String) throws {
        holder = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard holder >= 0 else {
            throw TestServerError("open \(path): \(String(cString: strerror(errno)))")
        }
        let holder = holder
        let thread = Thread { [self] in
            var collected = Data()
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)  // waits for a writer
            close(holder)
            if descriptor >= 0 {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    collected.append(contentsOf: buffer[0..<count])
                }
                close(descriptor)
            }
            done.lock()
            data = collected
            done.broadcast()
            done.unlock()
        }
        thread.start()
    }

    /// The bytes, once the writer has closed the FIFO (waits on a thread of the pool, not the caller's).
    public func bytes() async -> Data {
        await withCheckedContinuation { continuation in
            Thread {
                self.done.lock()
                while self.data == nil { self.done.wait() }
                let result = self.data!
                self.done.unlock()
                continuation.resume(returning: result)
            }.start()
        }
    }
}
