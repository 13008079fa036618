public import FerryCore
public import Foundation
import Synchronization

/// An ``AltServiceCache`` shared by a transport's requests and, when it has a file, kept there in
/// curl's format (`--alt-svc FILE`; ferryd's `alt-svc.txt` in its state directory): read when made,
/// written whenever an answer changes it, so a later run (or curl) starts from what this one learned.
public final class AltServiceStore: Sendable {
    private let cache: Mutex<AltServiceCache>
    /// The file, its symbolic links resolved (a link the user named is followed).
    public let file: String?
    private let now: @Sendable () -> Date

    /// A store in memory, or kept in `file` (read now when it exists; made on the first change).
    /// - Throws: ``FerryError`` when the file cannot be read or is not an Alt-Svc cache.
    public init(file: String? = nil, now: @escaping @Sendable () -> Date = { Date() }) throws(FerryError) {
        self.file = file.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
        self.now = now
        var loaded = AltServiceCache()
        if let path = self.file, FileManager.default.fileExists(atPath: path) {
            guard let text = UserNamedFile.text(of: path) else {
                throw FerryError(.noPermissionsToReadFile, "cannot read the Alt-Svc file \(path)")
            }
            do {
                loaded = try AltServiceCache(curlFormat: text)
            } catch {
                throw FerryError(.cannotDecodeContentData, "the Alt-Svc file \(path): \(error.message)")
            }
        }
        cache = Mutex(loaded)
    }

    /// An empty store kept in `file`, whatever it holds now (overwritten on the first change).
    public init(replacing file: String, now: @escaping @Sendable () -> Date = { Date() }) {
        self.file = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
        self.now = now
        cache = Mutex(AltServiceCache())
    }

    /// The UDP port of `host`:`port`'s HTTP/3 alternative still valid now, if one is known.
    public func http3Port(host: String, port: Int) -> Int? {
        let now = now()
        return cache.withLock { $0.http3(host: host, port: port, now: now)?.port }
    }

    /// An answer's `Alt-Svc` values from `host`:`port`, received over `protocolName` (`http/1.1`,
    /// `h2`, `h3`), taken in; the file rewritten when that changed the cache.
    public func record(_ values: [String], host: String, port: Int, protocolName: String) {
        guard !values.isEmpty else { return }
        let source = protocolName == "h2" || protocolName == "h3" ? protocolName : "h1"
        let now = now()
        let text: String? = cache.withLock { cache in
            cache.record(values, host: host, port: port, sourceProtocol: source, now: now) ? cache.curlFormat : nil
        }
        guard let text, let file else { return }
        // Written whole to a new file that replaces the old: a crash leaves one or the other (a device
        // or a FIFO is written through, a link followed: UserNamedFile). A file that cannot be written
        // costs only what the next run would have known (curl's way too).
        try? UserNamedFile.replace(file, with: Data(text.utf8))
    }

    /// The entries now (for tests and status).
    public var entries: [AltServiceCache.Entry] { cache.withLock { $0.entries } }
}
