public import FerryCore
public import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Files the user names for Ferry to write besides a download — `-D FILE` (the heads), `-c FILE`
/// (the cookie jar), `--alt-svc FILE` — written as what they are, as curl writes them:
/// - a device or a FIFO (`-D /dev/null`, `-c /dev/null`) is written through, never replaced: a
///   file renamed over `/dev/null` breaks the whole machine;
/// - a symbolic link is followed, and the file it names is written (the link stays);
/// - a regular file, or none yet, is replaced whole (a file written beside it, renamed over it), so a
///   crash leaves the old contents or the new.
public enum UserNamedFile {
    /// Opens `path` for writing from its start, as curl's `fopen(path, "wb")`: created (mode 0666 less
    /// the umask) when missing, emptied when a regular file, written through when a device or a FIFO,
    /// its link followed. The descriptor is close-on-exec.
    /// - Throws: ``FerryError`` (``FerryError/Code/cannotCreateFile``) saying why it could not.
    public static func openForWriting(_ path: String) throws(FerryError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw FerryError(.cannotCreateFile, "cannot write \(path): \(FileSink.reason(errno))") }
        return descriptor
    }

    /// The text of `path` as the user named it: a regular file, or a device or FIFO read to its end
    /// (`-b /dev/null`, curl's way to turn cookies on with none loaded, reads as empty); nil when it
    /// cannot be read or is not UTF-8. (Foundation's `String(contentsOfFile:)` refuses a device.)
    public static func text(of path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() ?? Data() else { return nil }
        return String(data: data, encoding: .utf8)
    }

    /// Writes `data` as the whole of `path` (see the type's rules). What `path` is, is
    /// ``DownloadDestination``'s reading of it (links followed, a loop or a directory refused), and a
    /// device or FIFO is written through its ``FileSink``, as `-o` does.
    /// - Throws: ``FerryError`` saying why it could not.
    public static func replace(_ path: String, with data: Data) throws(FerryError) {
        do {
            let destination = try DownloadDestination(inspecting: path)
            if case .special = destination.kind {
                let sink = try FileSink(path: destination.path, keepingFirst: 0)
                try sink.append(ByteBuffer(bytes: data))
                try sink.flush()
            } else {
                try data.write(to: URL(fileURLWithPath: destination.path), options: .atomic)
            }
        } catch let error as FerryError {
            throw error
        } catch {
            throw FerryError(.cannotWriteToFile, "cannot write \(path): \(error.localizedDescription)")
        }
    }
}
