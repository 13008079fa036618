import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An append-only log file with a size cap: a line that would take the file past ``maximumBytes``
/// first renames it to `PATH.1` (replacing the previous one) and starts a new file, so the log takes at
/// most twice the cap. Lines from any thread are written whole, one `write` each, under a lock.
public final class RotatingLogFile: Sendable {
    /// The file's path.
    public let path: String
    /// The size past which the file is rotated.
    public let maximumBytes: Int64
    private struct State {
        var descriptor: Int32
        var size: Int64
    }
    private let state: Mutex<State>

    /// Opens (or creates, mode 0600) the log at `path` for appending.
    /// - Throws: ``FerryError``-like `CocoaError` when the file cannot be opened.
    public init(path: String, maximumBytes: Int64 = 10 << 20) throws {
        self.path = path
        self.maximumBytes = max(4096, maximumBytes)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw LogFileError("cannot open the log file \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        fstat(descriptor, &info)
        state = Mutex(State(descriptor: descriptor, size: Int64(info.st_size)))
    }

    deinit {
        state.withLock { close($0.descriptor) }
    }

    /// Appends `line` (which ends with a newline), rotating first when it would pass the cap.
    public func append(_ line: String) {
        var bytes = Array(line.utf8)
        state.withLock { state in
            if state.size > 0, state.size + Int64(bytes.count) > maximumBytes {
                rename(path, path + ".1")
                let fresh = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0o600)
                if fresh >= 0 {
                    close(state.descriptor)
                    state.descriptor = fresh
                    state.size = 0
                }
            }
            let written = bytes.withUnsafeMutableBytes { write(state.descriptor, $0.baseAddress, $0.count) }
            if written > 0 { state.size += Int64(written) }
        }
    }

    /// The error of a log file that cannot be opened.
    public struct LogFileError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
