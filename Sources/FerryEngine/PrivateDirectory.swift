public import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// ferryd's directories and its control socket belong to the user alone (docs/RELIABILITY.md, "The
/// daemon's front door"). A directory ferryd makes gets mode 0700; one that is already there is used as
/// it is — never chmodded (`FERRY_SOCKET=/tmp/x.sock` once locked every other user out of `/tmp`) — and
/// only when this user owns it and nobody else can write it: in a shared directory another user could
/// replace the socket with their own and receive the tasks, with their credentials.
public enum PrivateDirectory {
    /// Makes `path` and its missing parents (each mode 0700), then checks that it is this user's own.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``, saying what is wrong and what to do.
    public static func make(_ path: String, purpose: String) throws {
        var made = ""
        for component in path.split(separator: "/") {
            made += "/" + component
            if mkdir(made, 0o700) == 0 || errno == EEXIST { continue }
            throw FerryError(.cannotCreateFile, "cannot create the directory \(made) for \(purpose): \(FileSink.reason(errno))")
        }
        try check(path, purpose: purpose)
    }

    /// Checks that `path` is a directory this user owns and nobody else can write.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``.
    public static func check(_ path: String, purpose: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw FerryError(.cannotCreateFile, "cannot look at \(path) (for \(purpose)): \(FileSink.reason(errno))")
        }
        if let problem = problem(with: info) {
            throw FerryError(
                .cannotCreateFile,
                "ferry will not keep \(purpose) in \(path): it \(problem), so another user could put their own there; use a directory of your own (FERRY_SOCKET, XDG_RUNTIME_DIR or FERRY_HOME)"
            )
        }
    }

    /// Checks that the control socket at `path` is this user's own, in a directory of this user's own,
    /// before a client sends anything to it (a request may carry credentials).
    /// - Throws: ``FerryError`` with ``FerryError/Code/backgroundSessionWasDisconnected``; nothing when
    ///   there is no socket yet (connecting says so).
    public static func checkSocket(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        var problem: String?
        if info.st_mode & S_IFMT != S_IFSOCK {
            problem = "\(path) is not a socket"
        } else if info.st_uid != geteuid() {
            problem = "\(path) belongs to another user (uid \(info.st_uid))"
        } else {
            var folder = stat()
            if stat(directory, &folder) == 0, let issue = Self.problem(with: folder) {
                problem = "its directory \(directory) \(issue)"
            }
        }
        if let problem {
            throw FerryError(
                .backgroundSessionWasDisconnected,
                "ferry will not talk to the daemon socket \(path): \(problem), so it may not be your ferryd; use a directory of your own (FERRY_SOCKET, XDG_RUNTIME_DIR or FERRY_HOME)"
            )
        }
    }

    /// What makes a directory not private to this user, in words, or nil when it is.
    static func problem(with info: stat) -> String? {
        if info.st_mode & S_IFMT != S_IFDIR { return "is not a directory" }
        return PrivateFile.ownershipProblem(info)
    }
}
