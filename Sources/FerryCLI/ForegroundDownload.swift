import FerryCore
import FerryEngine
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One `ferry get` download in this process. While it runs, the bytes go to `TARGET.ferry-part` and,
/// once the server has named its version (ETag or Last-Modified), a resume record to
/// `TARGET.ferry-resume` (written after each durable checkpoint, and on interruption or failure):
/// `-C` continues from them with If-Range, so a changed file is never spliced onto old bytes. Only a
/// complete, 2xx, checksum-verified body is renamed to TARGET.
struct ForegroundDownload {
    /// Where the file goes.
    enum Target {
        /// This exact path (`-o`).
        case file(String)
        /// This directory, under the remote name (`-O`, `--dir`).
        case directory(String)

        /// The file `path` (where the download went) as the command line named it, as curl's
        /// `%{filename_effective}` gives it: `-o`'s path as given, or the remote name within the directory
        /// as given (alone for the working directory).
        func asGiven(_ path: String) -> String {
            switch self {
            case .file(let given):
                return given
            case .directory(let directory):
                let name = (path as NSString).lastPathComponent
                return directory == "." ? name : (directory as NSString).appendingPathComponent(name)
            }
        }
    }

    /// What one download reports (`--json`).
    struct Report: Codable {
        var url: String
        var path: String
        var status: Int
        var bytes: Int64
        var resumedFrom: Int64
        var seconds: Double
        /// The verified digest's hex, when `--checksum` gave a sha256.
        var sha256: String?
        /// The verified digest, `algorithm=hex`, when `--checksum` gave one.
        var checksum: String?
        /// Connections asked for.
        var connections: Int
        /// `http/1.1` or `h2`.
        var `protocol`: String
        /// `TLSv1.3`, ...; nil over plain http.
        var tlsVersion: String?
        /// The proxy used, nil when direct.
        var proxy: String?
        /// The address and port connected to (the last exchange's).
        var remoteAddress: String?
        /// Where the body came from: `network`, `localCache` (`--cache`, fresh) or `revalidated`
        /// (`--cache`, a 304 confirmed the stored one).
        var fetchType: String
        /// The figures `-w` prints (not part of `--json`'s report).
        var writeOut: WriteOut.Values?

        private enum CodingKeys: String, CodingKey {
            case url, path, status, bytes, resumedFrom, seconds, sha256, checksum, connections, `protocol`, tlsVersion
            case proxy, remoteAddress, fetchType
        }
    }

    let url: URL
    let headers: Headers
    let target: Target
    let resume: Bool
    let retries: Int
    let checksum: ContentDigest?
    let connections: Int
    let limit: Int64?
    let quiet: Bool
    let transport: any HTTPTransport
    let interruption: Interruption
    /// `--compressed`: ask for gzip or deflate and write the body decoded.
    var decodesContent = false
    /// `--cache`: how the download uses the transport's HTTP cache.
    var cache: CacheUse?
    /// `-i`: the heads, redirects included, go into the file before the body.
    var includesHeads = false
    /// When the download must be over (`--max-time`).
    var deadline = NIODeadline.distantFuture
    /// The most redirects followed (`--max-redirs`); nil: the engine's 16.
    var maximumRedirects: Int?
    /// `--fail-with-body`: an error status's body is saved to the file (the download still fails).
    var keepsErrorBody = false
    /// `--retry-delay`: seconds before each try again instead of the doubling backoff (nil or 0: the
    /// backoff). A Retry-After still decides, as in curl.
    var retryDelay: Double?
    /// `-R`: the saved file takes the server's Last-Modified time.
    var takesRemoteTime = false
    /// `-J`: the file is named after the answer's Content-Disposition (when it has one), and that name,
    /// being the server's choice, never replaces an existing file (``DownloadDestination/init(newFileIn:named:)``).
    /// Without it the name comes from the URL the user gave, whatever the answer or a redirect says.
    var takesServerName = false
    /// `--speed-limit`/`--speed-time`: the lowest rate, for how long.
    var speedFloor: SpeedFloor?
    /// `-Z`: the board this download shows its progress on, with the others.
    var board: ProgressBoard?
    /// `-X` and `-d`: the method, and a body whose answer is the download.
    var method = "GET"
    var requestBody: ByteBuffer?

    func run() async throws -> Report {
        let files = try prepareFiles()
        let hadPart = !files.destination.isSpecial && FileManager.default.fileExists(atPath: files.partial)
        // One writer per part file: a second `ferry get` to the same name fails here, naming the first.
        let lock = files.destination.isSpecial ? nil : try await Self.lock(files.partial)
        defer { lock?.release() }
        let resumeData = try startingPoint(files.destination, hadPart: hadPart, record: files.record)
        let request = try makeRequest(files.destination)
        let display = ProgressDisplay(name: files.name, quiet: quiet, board: board)
        let observed = Observed()
        let writer = ResumeRecordWriter(path: files.record)
        // A part of the file (-r, or a Range of -H) is not the file: no record, so -C can never take it
        // for the start of the whole.
        let ranged = request.headers["range"] != nil
        let events = events(display, observed, continuing: resumeData != nil, checkpoints: files.destination.isSpecial || ranged ? nil : writer)
        let plan = makePlan(request, files: files, resumeData: resumeData, events: events)
        let started = ProgressDisplay.now()
        let startDate = Date()
        let result: Downloader.Result
        // Records the exchanges (SessionTransport), for --json's protocol, TLS version and address.
        // --limit-rate: the engine's throttle pays for every chunk, all segments of -x N together.
        let context = TransferContext(
            cache: cache,
            throttle: limit.map { TaskThrottle(bytesPerSecond: $0, pool: nil, weight: 0.5) }
        )
        do {
            do {
                result = try await transfer(plan, context: context, counter: observed.moved, display: display, files: files)
            } catch let error as FerryError {
                display.finish(failed: true)
                throw await failure(error, files: files, writer: writer, continuedFromRecord: resumeData != nil, ranged: ranged)
            } catch let failure as CLIFailure {
                display.finish(failed: true)
                throw failure
            } catch is SpeedFloor.TooSlow {
                display.finish(failed: true)
                throw Self.tooSlow(speedFloor, url: url, continuable: FileManager.default.fileExists(atPath: files.record))
            }
        } catch var failure as CLIFailure where failure.status != .interrupted {
            // -w's figures of what happened before the failure, printed as curl prints them.
            failure.writeOut = WriteOut.Values(
                failed: failure,
                transactions: context.recordedTransactions,
                url: url,
                // An error status's page is not the download (unless --fail-with-body keeps it).
                bytes: failure.httpStatus != nil && !keepsErrorBody ? 0 : max(0, observed.moved.value - observed.resumedFrom.withLock { $0 }),
                start: startDate,
                total: ProgressDisplay.now() - started,
                file: target.asGiven(files.target)
            )
            throw failure
        }
        display.finish()
        let seconds = ProgressDisplay.now() - started
        try? FileManager.default.removeItem(atPath: files.record)
        if includesHeads { try Self.prependHeads(context.recordedTransactions, to: result.path) }
        if takesRemoteTime { Self.setRemoteTime(of: result.path, from: result.headers) }
        return report(
            result,
            transactions: context.recordedTransactions,
            resumedFrom: observed.resumedFrom.withLock { $0 },
            start: startDate,
            seconds: seconds
        )
    }

    /// `-R`: gives the regular file at `path` the time of the answer's Last-Modified, as curl does;
    /// nothing without one (or with one that is not a date), and nothing for a device or FIFO.
    static func setRemoteTime(of path: String, from headers: Headers) {
        guard let value = headers["last-modified"], let date = HTTPDate.date(value),
            !DownloadDestination.isSpecialFile(path)
        else { return }
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let time = timespec(tv_sec: Int(seconds), tv_nsec: 0)
        let times = [time, time]
        _ = times.withUnsafeBufferPointer { utimensat(AT_FDCWD, path, $0.baseAddress, 0) }
    }

    /// `-i`: the heads of the exchanges up to the first success (the redirects, then the answer), as
    /// curl writes them, put before the body: written beside the file with the body copied after them,
    /// then renamed over it.
    static func prependHeads(_ transactions: [TransactionMetrics], to path: String) throws {
        let heads = HeaderDumpTransport.render(transactions, upToSuccess: true)
        let temporary = path + ".ferry-include"
        do {
            guard FileManager.default.createFile(atPath: temporary, contents: Data(heads.utf8)),
                let output = FileHandle(forWritingAtPath: temporary), let input = FileHandle(forReadingAtPath: path)
            else { throw CLIFailure("cannot write \(temporary)", status: .localFile) }
            defer {
                try? output.close()
                try? input.close()
            }
            try output.seekToEnd()
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try output.write(contentsOf: chunk) }
            try output.synchronize()
            guard rename(temporary, path) == 0 else { throw CLIFailure("cannot replace \(path)", status: .localFile) }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let failure = error as? CLIFailure { throw failure }
            throw CLIFailure("cannot put the heads before the body in \(path): \(error.localizedDescription)", status: .localFile)
        }
    }

    /// A transfer that stayed under `--speed-limit` for `--speed-time`, as curl's 28.
    static func tooSlow(_ floor: SpeedFloor?, url: URL, continuable: Bool) -> CLIFailure {
        CLIFailure(
            "\(url.absoluteString): slower than \(ByteFormat.rate(Double(floor?.bytesPerSecond ?? 0))) for \(Int(floor?.seconds ?? 0)) s (--speed-limit, --speed-time)"
                + (continuable ? "; the partial download is kept: continue with -C" : ""),
            status: .transferFailed,
            kind: "timedOut"
        )
    }

    /// `--json`'s name for a fetch type.
    static func fetchTypeName(_ type: TransactionMetrics.FetchType) -> String {
        switch type {
        case .networkLoad: "network"
        case .localCache: "localCache"
        case .revalidated: "revalidated"
        }
    }

    /// `1 s`, `0.5 s`: a wait as people read it.
    static func seconds(_ value: Double) -> String {
        value.rounded() == value ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// The bytes of a download whose digest is wrong go to TARGET.ferry-mismatch for inspection (not to
    /// TARGET, and not left where -C would take them for a download to continue).
    func mismatch(
        _ checksum: ContentDigest,
        partial: String,
        record: String,
        target: String
    ) async -> CLIFailure {
        let kept = target + ".ferry-mismatch"
        try? FileManager.default.removeItem(atPath: record)
        let actual = (try? await DigestVerifier.digest(ofFile: partial, algorithm: checksum.algorithm)) ?? "unknown"
        let place = rename(partial, kept) == 0 ? kept : partial
        return CLIFailure(
            "checksum mismatch for \(target): expected \(checksum.algorithm.rawValue) \(checksum.hex), got \(actual); the bytes are kept in \(place)",
            status: .checksumMismatch
        )
    }

    /// The directory, the name to start with, and whether that name is final (`-o`).
    func place() throws -> (String, String, Bool) {
        switch target {
        case .file(let path):
            let absolute = CLI.absolute(path)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue {
                throw CLIFailure("\(path) is a directory; use --dir \(path) to save into it", status: .localFile)
            }
            return ((absolute as NSString).deletingLastPathComponent, (absolute as NSString).lastPathComponent, true)
        case .directory(let directory):
            return (CLI.absolute(directory), RemoteName.fromURL(url), false)
        }
    }

    /// Resume data to continue from (`-C`), or nil to start afresh (a stale partial file is emptied, not
    /// removed: this download holds its lock).
    private func startingPoint(_ destination: DownloadDestination, hadPart: Bool, record: String) throws -> ResumeData? {
        let manager = FileManager.default
        let partial = destination.writePath
        if destination.isSpecial {
            if resume, !quiet {
                CLI.note(destination.notAFile("-C cannot continue a download written to it") + "; downloading from the start")
            }
            return nil
        }
        guard resume else {
            Self.restart(partial, record)
            return nil
        }
        guard hadPart else {
            if !quiet { CLI.note("nothing to continue for \(url.absoluteString); downloading from the start") }
            try? manager.removeItem(atPath: record)
            return nil
        }
        let continuation = try ResumeRecord.continuation(
            partial: partial,
            record: record,
            url: url,
            headers: headers,
            connections: connections,
            expectedDigest: checksum,
            quiet: quiet
        )
        switch continuation {
        case .startOver:
            Self.restart(partial, record)
            return nil
        case .resume(let resumeData):
            return resumeData
        }
    }

    /// Takes the part file's lock, as a CLI failure when another download holds it.
    private static func lock(_ partial: String) async throws -> PartFileLock {
        do {
            return try await PartFileLock.acquire(partial)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .localFile)
        }
    }

    /// Starts a part file afresh: emptied in place (its lock stays on it), its record removed.
    private static func restart(_ partial: String, _ record: String) {
        truncate(partial, 0)
        try? FileManager.default.removeItem(atPath: record)
    }

    static func checkWritableDirectory(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw CLIFailure("cannot save into \(directory): it does not exist (--create-dirs makes it)", status: .localFile)
        }
        guard isDirectory.boolValue else {
            throw CLIFailure("cannot save into \(directory): it is not a directory", status: .localFile)
        }
        guard access(directory, W_OK) == 0 else {
            throw CLIFailure("cannot save into \(directory): \(String(cString: strerror(errno)))", status: .localFile)
        }
    }

    /// Removes what this download left, regular files only (never a device or FIFO it wrote through).
    static func remove(_ paths: String...) {
        for path in paths { DownloadDestination.removeFile(path) }
    }
}
