public import FerryCore
public import Foundation

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

    /// Writes `data` as the whole of `path` (see the type's rules).
    /// - Throws: ``FerryError`` (``FerryError/Code/cannotWriteToFile``) saying why it could not.
    public static func replace(_ path: String, with data: Data) throws(FerryError) {
        let target = followingLinks(path)
        var status = stat()
        if lstat(target, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            // A device or a FIFO: written through.
            let descriptor = open(target, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK)
            guard descriptor >= 0 else { throw FerryError(.cannotWriteToFile, "cannot write \(path): \(FileSink.reason(errno))") }
            defer { close(descriptor) }
            let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == data.count else { throw FerryError(.cannotWriteToFile, "cannot write \(path): \(FileSink.reason(errno))") }
            return
        }
        do {
            try data.write(to: URL(fileURLWithPath: target), options: .atomic)
        } catch {
            throw FerryError(.cannotWriteToFile, "cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// The file `path` names once its links are followed (up to 16 of them); `path` itself when it is
    /// no link.
    static func followingLinks(_ path: String) -> String {
        var current = path
        for _ in 0..<16 {
            guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: current) else { return current }
            current =
                destination.hasPrefix("/")
                ? destination : ((current as NSString).deletingLastPathComponent as NSString).appendingPathComponent(destination)
        }
        return current
    }
}
