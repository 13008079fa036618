public import FerryCore
public import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The place a download is delivered to, as found on disk: symbolic links followed, and what is there.
///
/// Only what the user named is written (docs/ARCHITECTURE.md, "Delivery"):
/// - a regular file, or nothing yet: the body grows in a part file beside it (``partPath``) and replaces
///   it atomically once complete and verified;
/// - a character or block device, a FIFO or a socket: the body is written straight into it, with no
///   part file and no rename (renaming over `/dev/null` would replace the device with a regular file),
///   and such a download cannot be continued after an interruption;
/// - a symbolic link: followed, so the file it points to is replaced, as curl writes through it.
///
/// A name a server chose (`ferry get -J`'s Content-Disposition name) is a ``init(newFileIn:named:)``
/// destination: it never replaces or follows anything already there; the download takes the first
/// free name of `NAME`, `NAME.1`, `NAME.2`, … instead, as wget does.
public struct DownloadDestination: Sendable, Equatable, CustomStringConvertible {
    /// What is at the destination.
    public enum Kind: Sendable, Equatable {
        /// Nothing yet.
        case missing
        /// A regular file, to be replaced.
        case regularFile
        /// Something that is written through, never replaced: its description ("character device",
        /// "block device", "FIFO", "socket").
        case special(String)
    }

    /// The path as it was given.
    public let named: String
    /// The path written: ``named`` with symbolic links followed.
    public let path: String
    /// What is at ``path``.
    public let kind: Kind
    /// True when what is at ``path`` may be replaced (a name the user gave); false for a name someone
    /// else chose (``init(newFileIn:named:)``).
    public let replacesExisting: Bool

    /// The most names tried after `NAME` for a destination that does not replace (`NAME.1` … `NAME.999`).
    static let maximumAlternatives = 999

    /// The most symbolic links followed, as the kernel's own limit (ELOOP).
    static let maximumLinks = 40

    /// Looks at `path` (absolute or relative to the current directory).
    /// - Throws: ``FerryError`` with ``FerryError/Code/fileIsDirectory`` for a directory,
    ///   ``FerryError/Code/cannotCreateFile`` for a symbolic-link loop or a path that cannot be looked at.
    public init(inspecting path: String) throws {
        named = path
        replacesExisting = true
        // The kernel's view first: a device, FIFO or socket reached through links — including the
        // "magic" ones of /proc such as /dev/stdout → /proc/self/fd/1 → pipe:[…], whose text is not a
        // path — is written through the name as given.
        var followed = stat()
        if stat(path, &followed) == 0 {
            let type = followed.st_mode & S_IFMT
            if let special = Self.describe(type) {
                self.path = path
                kind = .special(special)
                return
            }
        }
        var current = path
        for _ in 0...Self.maximumLinks {
            var info = stat()
            guard lstat(current, &info) == 0 else {
                let code = errno
                guard code == ENOENT else {
                    throw FerryError(.cannotCreateFile, "cannot look at \(current): \(FileSink.reason(code))")
                }
                self.path = current
                kind = .missing
                return
            }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: current) else {
                    throw FerryError(.cannotCreateFile, "cannot read the symbolic link \(current)")
                }
                current =
                    target.hasPrefix("/")
                    ? target : ((current as NSString).deletingLastPathComponent as NSString).appendingPathComponent(target)
            case S_IFDIR:
                throw FerryError(
                    .fileIsDirectory,
                    "\(path) is a directory\(current == path ? "" : " (through the link to \(current))"); name a file in it"
                )
            case S_IFREG:
                self.path = current
                kind = .regularFile
                return
            case let type:
                self.path = current
                kind = .special(Self.describe(type) ?? "special file")
                return
            }
        }
        throw FerryError(.cannotCreateFile, "cannot follow \(path): more than \(Self.maximumLinks) symbolic links")
    }

    /// A new file named `name` in `directory`, for a name someone else chose (a server's
    /// Content-Disposition): nothing at that name is replaced or followed; ``deliver(from:mode:)``
    /// takes the first free name of `name`, `name.1`, `name.2`, … when delivering.
    public init(newFileIn directory: String, named name: String) {
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + name
        named = path
        self.path = path
        kind = .missing
        replacesExisting = false
    }

    /// What a non-regular file type is called, or nil for a regular file or directory.
    static func describe(_ type: mode_t) -> String? {
        switch type {
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFIFO: "FIFO"
        case S_IFSOCK: "socket"
        default: nil
        }
    }

    /// True when the destination is written through, not replaced (a device, a FIFO, a socket).
    public var isSpecial: Bool {
        if case .special = kind { return true }
        return false
    }

    /// Where the body grows before it replaces a regular destination: beside it, so the final rename
    /// stays on one file system.
    public var partPath: String { path + ".ferry-part" }

    /// The file written while the download runs: ``partPath``, or the destination itself when special.
    public var writePath: String { isSpecial ? path : partPath }

    public var description: String {
        switch kind {
        case .missing, .regularFile: path
        case .special(let what): "\(path) (a \(what))"
        }
    }

    /// The mode a new file gets in this process: 0o666 less the umask.
    public static var newFileMode: UInt32 { UInt32(0o666 & ~currentUmask) }

    /// The process's umask, read from `/proc/self/status` (Linux 4.7 and later) without changing it.
    /// Reading it with umask(2) means setting it: two threads doing that at once could leave it at 0
    /// for good, and every directory made after was world-writable (seen: test homes ferryd refused).
    /// Without the field, the umask is read that way once (a static's initializer runs once) and kept.
    static var currentUmask: mode_t {
        if let status = ProcFile.read("/proc/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        {
            return value
        }
        return fallbackUmask
    }

    private static let fallbackUmask: mode_t = {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }()

    /// The error for a download whose answer was not 2xx: a file destination was left as it was; a
    /// device or FIFO already got the body.
    public func refusal(status: Int, url: URL) -> FerryError {
        FerryError(
            .badServerResponse,
            isSpecial
                ? "the server answered \(status); its body went to \(self)"
                : "the server answered \(status); nothing was written to \(path)",
            failingURL: url.absoluteString
        )
    }

    /// Why a special destination cannot do something a file can, for errors: "X is a FIFO, not a file".
    public func notAFile(_ what: String) -> String {
        guard case .special(let kind) = kind else { return what }
        return "\(what): \(named) is a \(kind), not a regular file"
    }

    /// Puts the finished download at `source` in place of a regular (or missing) destination: a rename,
    /// or on another file system a copy beside the destination renamed over it, so a reader never sees
    /// half a file. A special destination written directly (`source` is the destination) needs nothing;
    /// one that was not gets the bytes written through, and the source goes.
    /// A destination that does not replace (``replacesExisting`` false) is delivered to the first free
    /// name of `NAME`, `NAME.1`, … reserved with an exclusive create, never through a link.
    /// - Parameter mode: permission bits for the delivered file, or nil to leave them.
    /// - Returns: the path the file is at now.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotMoveFile``, saying why.
    @discardableResult
    public func deliver(from source: String, mode: UInt32? = nil) throws -> String {
        if isSpecial {
            guard source != path else { return path }
            try Self.copy(source, through: path)
            Self.removeFile(source)
            return path
        }
        if let mode { chmod(source, mode_t(mode)) }
        let path = replacesExisting ? self.path : try reserveFreeName()
        var delivered = false
        // A name reserved for a delivery that failed goes again (it is empty and ours).
        defer { if !delivered, !replacesExisting { Self.removeFile(path) } }
        if rename(source, path) == 0 {
            delivered = true
            return path
        }
        let code = errno
        guard code == EXDEV else {
            throw FerryError(
                .cannotMoveFile,
                "cannot move the finished download to \(path): \(FileSink.reason(code)); it is in \(source)"
            )
        }
        let staging = path + ".ferry-\(UUID().uuidString.prefix(8))"
        do {
            try FileManager.default.copyItem(atPath: source, toPath: staging)
            guard rename(staging, path) == 0 else {
                throw FerryError(.cannotMoveFile, "cannot rename \(staging) to \(path): \(FileSink.reason(errno))")
            }
            Self.removeFile(source)
            delivered = true
            return path
        } catch let error as FerryError {
            Self.removeFile(staging)
            throw error
        } catch {
            Self.removeFile(staging)
            throw FerryError(.cannotMoveFile, "cannot copy the finished download to \(path): \(error)")
        }
    }

    /// Creates an empty file at the first free name of ``path``, `path.1`, … (O_EXCL and O_NOFOLLOW: an
    /// existing file, link or dangling link is never touched) for the finished download to be renamed
    /// over: the name is this process's from then on.
    func reserveFreeName() throws -> String {
        for number in 0...Self.maximumAlternatives {
            let candidate = number == 0 ? path : path + ".\(number)"
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                close(descriptor)
                return candidate
            }
            guard errno == EEXIST else {
                throw FerryError(.cannotMoveFile, "cannot create \(candidate): \(FileSink.reason(errno))")
            }
        }
        throw FerryError(
            .cannotMoveFile,
            "cannot save \(path): it and \(path).1 … \(path).\(Self.maximumAlternatives) all exist; remove some, or name the file with -o"
        )
    }

    /// Writes the file at `source` into the device or FIFO at `path`, in order.
    static func copy(_ source: String, through path: String) throws {
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw FerryError(.cannotMoveFile, "cannot read the finished download \(source)")
        }
        defer { try? input.close() }
        let sink = try FileSink(path: path, keepingFirst: 0)
        while let data = try input.read(upToCount: FileSink.stagingCapacity), !data.isEmpty {
            try sink.append(ByteBuffer(bytes: data))
        }
        try sink.flush()
    }

    /// Removes `path` if it is a regular file, and nothing else: a part file that turned out to be a
    /// device, a FIFO or a link is never unlinked.
    public static func removeFile(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        unlink(path)
    }

    /// True when `path` exists and is not a regular file after following links (a device, a FIFO, a
    /// socket): such a file is written sequentially, never cut, synchronized or replaced.
    public static func isSpecialFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type != S_IFREG && type != S_IFDIR
    }
}
