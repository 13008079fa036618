public import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The files Ferry keeps for itself beside a download — the part file (`NAME.ferry-part`), the resume
/// record (`NAME.ferry-resume`) and its staging copy — are opened so that nobody else can choose what
/// they are (docs/RELIABILITY.md, "Hostile servers and users"):
/// - never through a symbolic link (`O_NOFOLLOW`): a link another user planted at that name in a shared
///   directory would otherwise make the download write the server's bytes, or the record with its
///   request, into whatever file the link names;
/// - created with mode 0600;
/// - an existing one is adopted only when it is a regular file owned by this user, with no other hard
///   link and no write permission for anybody else: a part file another user made (or can still write)
///   would let them change the download after its checksum passed.
///
/// A link the user named (`-o link`) is followed as before (``DownloadDestination``); these rules are
/// for the names Ferry makes up.
public enum PrivateFile {
    /// Opens `path` with `flags` (`O_WRONLY`, `O_RDWR`, `O_RDONLY`, `O_TRUNC`…), creating it with mode
    /// 0600 when missing (unless `creating` is false), and checks that it is this user's own regular file.
    /// - Returns: the open descriptor (close-on-exec).
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``, saying what is wrong and what to do.
    public static func open(_ path: String, flags: Int32, creating: Bool = true) throws -> Int32 {
        let descriptor = Glibc.open(path, flags | (creating ? O_CREAT : 0) | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP {
                throw FerryError(
                    .cannotCreateFile,
                    "\(path) is a symbolic link; Ferry never follows a link at its own working file (someone may have planted it there): remove it, or save to another directory"
                )
            }
            throw FerryError(.cannotCreateFile, "cannot open \(path) for writing: \(FileSink.reason(code))")
        }
        do {
            try check(descriptor, path: path)
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Checks that the open file is this user's own regular file, with no other writer.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotCreateFile``.
    static func check(_ descriptor: Int32, path: String) throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw FerryError(.cannotCreateFile, "cannot look at \(path): \(FileSink.reason(errno))")
        }
        if let problem = problem(with: info) {
            throw FerryError(
                .cannotCreateFile,
                "\(path) \(problem), so Ferry will not use it as its working file; remove it, or save to another directory"
            )
        }
    }

    /// What makes a file not ours to use, in words, or nil when it is.
    static func problem(with info: stat) -> String? {
        if info.st_mode & S_IFMT != S_IFREG {
            return "is not a regular file (\(DownloadDestination.describe(info.st_mode & S_IFMT) ?? "a directory"))"
        }
        if info.st_nlink > 1 {
            return "has \(info.st_nlink) hard links (another name could change it)"
        }
        return ownershipProblem(info)
    }

    /// What makes a file or directory not this user's alone, in words (another owner, or write
    /// permission for others), or nil when it is; ``PrivateDirectory`` holds directories to it too.
    static func ownershipProblem(_ info: stat) -> String? {
        if info.st_uid != geteuid() { return "belongs to another user (uid \(info.st_uid))" }
        if info.st_mode & 0o022 != 0 {
            return "can be written by other users (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }

    /// True when `path` is one of the names Ferry makes up beside a download (`NAME.ferry-part`, …):
    /// such a name is never written through to a device, whatever a link there points at.
    public static func isWorkingName(_ path: String) -> Bool {
        SafeFilename.reservedSuffixes.contains { path.hasSuffix($0) }
    }
}
