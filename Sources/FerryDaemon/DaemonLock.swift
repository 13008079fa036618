import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The lock that lets one daemon run per state directory: an exclusive `flock` on a file, held for the
/// daemon's life (the kernel drops it when the process dies, even by SIGKILL, so a stale lock cannot
/// block a restart). The file holds the holder's pid, for messages.
final class DaemonLock {
    private let descriptor: Int32

    /// Takes the lock.
    /// - Throws: ``FerryError/Code/invalidOperation`` naming the running daemon's pid when it is held.
    init(path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw FerryError(
                .cannotCreateFile,
                "cannot open the lock file \(path): \(String(cString: strerror(errno)))"
            )
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            close(descriptor)
            throw FerryError(
                .invalidOperation,
                "another ferryd (pid \(holder ?? "unknown")) is running for this state directory; stop it first or set FERRY_HOME to another directory"
            )
        }
        ftruncate(descriptor, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(descriptor, $0, strlen($0)) }
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
