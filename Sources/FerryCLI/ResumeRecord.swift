import FerryCore
import FerryEngine
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The file beside a partial download (`NAME.ferry-resume`) that lets `-C` continue it safely.
///
/// Syncing the file to disk often makes the download wait for the disk (measured, 1 GiB from 127.0.0.1:
/// 3.96 s with a sync each second or 8 MiB; from nginx, 413 MB/s with one every 512 MiB against 726 for
/// the library without), so a checkpoint is made durable at most every 30 s and the others only write
/// the buffered bytes out: they survive
/// the process being killed, not the machine losing power. The record tells which is which: the bytes
/// written out (trusted while the machine has not restarted since — the kernel's boot id says so) and
/// the bytes made durable with fdatasync (trusted after a restart too). Neither ever claims bytes that
/// are not in the file, so a continued download is never spliced onto zeros.
struct ResumeRecord: Codable, Sendable {
    /// The format's version.
    var version = 1
    /// The kernel's boot id when the record was written.
    var bootID: String?
    /// Where the download stood: its bytes are in the partial file, at least until a restart.
    var resumeData: ResumeData
    /// Bytes of the partial file made durable (fdatasync).
    var durableBytes: Int64
    /// For a segmented download: the segments as they were when ``durableBytes`` were made durable.
    var durableSegments: SegmentPlan?

    /// This boot's id (`/proc/sys/kernel/random/boot_id`).
    static let currentBootID: String? =
        (try? String(
            contentsOfFile: "/proc/sys/kernel/random/boot_id",
            encoding: .utf8
        ))?.trimmingCharacters(in: .whitespacesAndNewlines)

    /// The resume data to trust now: all of it on the same boot, the durable bytes after a restart
    /// (nil when none were).
    var trustworthy: ResumeData? {
        if let bootID, bootID == Self.currentBootID { return resumeData }
        guard durableBytes > 0 else { return nil }
        var durable = resumeData
        if resumeData.segments != nil {
            // Segments fill the file out of order: only the durable plan says which bytes are on disk.
            guard let durableSegments, durableSegments.total == resumeData.segments?.total else { return nil }
            durable.segments = durableSegments
            durable.bytesReceived = durableSegments.bytesReceived
            return durable
        }
        durable.bytesReceived = min(durableBytes, resumeData.bytesReceived)
        return durable
    }

    /// What `-C` does with a partial file and its record.
    enum Continuation {
        /// Continue from this (its partial file is `partial`, its URL this run's).
        case resume(ResumeData)
        /// Nothing can be trusted: start over (the reason was noted unless quiet).
        case startOver
    }

    /// Where the record of the download to `target` is: beside it, `TARGET.ferry-resume`.
    static func path(beside target: String) -> String { target + ".ferry-resume" }

    /// Decides whether `-C` can continue the partial file `partial` from `url`, by its record at
    /// `record`: the record must be readable and trustworthy on this boot; a different URL (a
    /// re-signed link, a mirror) continues only with a validator, checked with If-Range. The resume
    /// data carries this run's options, not the first run's: `connections`, the digest to verify, and the
    /// credentials of `headers` (the record keeps none).
    /// - Throws: ``CLIFailure`` (usage) for a different URL and a record without ETag or Last-Modified.
    static func continuation(
        partial: String,
        record: String,
        url: URL,
        headers: Headers,
        connections: Int,
        expectedDigest: ContentDigest?,
        quiet: Bool
    ) throws -> Continuation {
        guard let saved = read(record) else {
            if !quiet { CLI.note("no record of which version \(partial) holds; downloading from the start") }
            return .startOver
        }
        guard var resumeData = saved.trustworthy else {
            if !quiet { CLI.note("the machine restarted before \(partial) reached the disk; downloading from the start") }
            return .startOver
        }
        if resumeData.originalRequest.url != url {
            // A re-signed URL or a mirror: the record's validator (If-Range) decides whether the bytes
            // continue the same file; a changed file starts over. Without one nothing can tell.
            guard resumeData.entityTag != nil || resumeData.lastModified != nil else {
                throw CLIFailure(
                    "\(partial) is part of \(resumeData.originalRequest.url.absoluteString), and its record has no ETag or Last-Modified to check that \(url.absoluteString) is the same file; remove it or drop -C",
                    status: .usage
                )
            }
            if !quiet {
                CLI.note(
                    "\(partial) came from \(resumeData.originalRequest.url.absoluteString); continuing from \(url.absoluteString), checked with If-Range (a different file starts over)"
                )
            }
            resumeData.originalRequest.url = url
            resumeData.currentRequest = resumeData.originalRequest
        }
        resumeData.partialFilePath = partial
        // The record holds no credential (ResumeRecordWriter drops them): this run's are sent.
        resumeData.originalRequest.headers = resumeData.originalRequest.headers.withSecrets(of: headers)
        resumeData.currentRequest.headers = resumeData.currentRequest.headers.withSecrets(of: headers)
        resumeData.originalRequest.connections = connections
        resumeData.originalRequest.expectedDigest = expectedDigest
        return .resume(resumeData)
    }

    /// Reads a record; nil when there is none, it cannot be read, or it is not this user's own file
    /// (a link, or a file another user could write, is never trusted: PrivateFile says why).
    static func read(_ path: String) -> ResumeRecord? {
        guard let descriptor = try? PrivateFile.open(path, flags: O_RDONLY, creating: false),
            let data = try? FileHandle(fileDescriptor: descriptor, closeOnDealloc: true).read(upToCount: 1 << 20)
        else { return nil }
        return try? JSONDecoder().decode(ResumeRecord.self, from: data)
    }
}

/// Writes a download's record as checkpoints come (from the transfer and from the sync thread), keeping
/// the most advanced state of each kind.
final class ResumeRecordWriter: CheckpointSink {
    private let path: String
    private struct State {
        var written: ResumeData?
        var durable: Int64 = 0
        var durableSegments: SegmentPlan?
    }

    private let state = Mutex(State())

    init(path: String) { self.path = path }

    /// Bytes written out (not necessarily durable).
    func written(_ data: ResumeData) throws {
        try update { state in
            if state.written.map({ $0.bytesReceived <= data.bytesReceived }) ?? true { state.written = data }
        }
    }

    /// Bytes made durable.
    func durable(_ data: ResumeData) throws {
        try update { state in
            if data.bytesReceived >= state.durable {
                state.durable = data.bytesReceived
                state.durableSegments = data.segments
            }
            if state.written.map({ $0.bytesReceived <= data.bytesReceived }) ?? true { state.written = data }
        }
    }

    private func update(_ change: (inout State) -> Void) throws {
        try state.withLock { state in
            change(&state)
            guard var written = state.written else { return }
            // No credential is written beside the download: the record is a file in the user's
            // directory, often shared, and outlives an interrupted run. -C sends that run's own.
            written.originalRequest.headers = written.originalRequest.headers.withoutSecrets
            written.currentRequest.headers = written.currentRequest.headers.withoutSecrets
            let record = ResumeRecord(
                bootID: ResumeRecord.currentBootID,
                resumeData: written,
                durableBytes: min(state.durable, written.bytesReceived),
                durableSegments: state.durableSegments
            )
            var data = try JSONEncoder().encode(record)
            // Padded (JSON allows trailing spaces) so that a later record fits in the same blocks.
            if data.count < Self.recordSize {
                data.append(contentsOf: repeatElement(0x20, count: Self.recordSize - data.count))
            }
            do {
                try Self.replace(path, with: data)
            } catch {
                // A full disk has no room for the new copy a safe replacement needs: overwrite the old
                // record where it is (a crash in the middle leaves a record that does not parse, and -C
                // then starts over — never a wrong offset).
                try Self.overwrite(path, with: data, error: error)
            }
        }
    }

    private static let recordSize = 4096

    /// Writes a copy beside the record and renames it over: a reader sees the old record or the new one.
    /// No fsync (Foundation's atomic write does one, and on ext4 each made the kernel write out the
    /// download's dirty pages too, halving its speed); after a power loss a record that does not parse
    /// makes -C start over, and a boot id that differs makes it trust only the durable bytes.
    private static func replace(_ path: String, with data: Data) throws {
        let staging = path + ".new"
        // Mode 0600, never through a link planted at the name, only this user's own file.
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.open(staging, flags: O_WRONLY | O_TRUNC)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .localFile)
        }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress!, data.count) }
        let code = errno
        close(descriptor)
        guard written == data.count, rename(staging, path) == 0 else {
            unlink(staging)
            throw CLIFailure(
                "cannot write \(path): \(String(cString: strerror(written < 0 ? code : ENOSPC)))",
                status: .localFile
            )
        }
    }

    private static func overwrite(_ path: String, with data: Data, error: any Error) throws {
        guard let descriptor = try? PrivateFile.open(path, flags: O_WRONLY, creating: false) else { throw error }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, Int(status.st_size) >= data.count else { throw error }
        let written = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress!, data.count, 0) }
        guard written == data.count else { throw error }
    }
}
