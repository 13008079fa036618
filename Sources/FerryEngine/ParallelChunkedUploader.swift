public import FerryCore
import Foundation
import NIOConcurrencyHelpers
public import NIOCore

/// Uploads a file in chunks sent in parallel (SPEC S4.2–S4.5) with tus 1.0 and its concatenation
/// extension (https://tus.io/protocols/resumable-upload#concatenation): each chunk is a partial upload
/// (`POST` with `Upload-Concat: partial`, then `PATCH` with its bytes, read from the file at its offset),
/// and a final `POST` with `Upload-Concat: final;…` joins them in file order.
///
/// tus was chosen because the IETF resumable-upload draft (``ResumableUploader``) forbids parallel
/// appends to one upload, and tus's concatenation is a documented, header-only protocol (S3's multipart
/// upload needs XML and 5 MiB parts). ``ChunkPlanner`` decides the chunks: a speed probe first, then
/// sizes from the measured throughput, a cap on chunks in flight apart from the connection limit, and
/// failed chunks re-queued at the end.
public struct ParallelChunkedUploader: Sendable {
    /// The knobs: chunk sizes, chunks in flight, tries.
    public var options: ChunkPlanner.Options

    private let transport: any HTTPTransport

    /// An uploader sending through `transport` (whose per-host limit also bounds the connections).
    public init(transport: any HTTPTransport, options: ChunkPlanner.Options = ChunkPlanner.Options()) {
        self.transport = transport
        self.options = options
    }

    /// What an upload reports besides the server's answer.
    public struct Report: Sendable {
        /// The final request's answer (the concatenation's).
        public var result: DataLoader.Result
        /// Chunks the file was sent in.
        public var chunks: Int
        /// Chunk tries that failed and were sent again.
        public var retries: Int
        /// The probe's throughput, bytes a second.
        public var probeThroughput: Double?
    }

    /// An upload that goes on from an earlier run's chunks.
    public struct Resumption: Sendable {
        /// Chunks the server already holds (recorded by ``didStore`` in an earlier run): they are not
        /// sent again, only the bytes between them, and all are concatenated at the end.
        public var stored: [ChunkedUploadProgress.Chunk]
        /// Called with each chunk the server has stored, before the upload goes on; an error it throws
        /// ends the upload (a chunk that cannot be recorded would be sent again after a restart).
        public var didStore: @Sendable (ChunkedUploadProgress.Chunk) throws -> Void

        /// Nothing stored yet; new chunks recorded by `didStore` (default: nowhere).
        public init(
            stored: [ChunkedUploadProgress.Chunk] = [],
            didStore: @escaping @Sendable (ChunkedUploadProgress.Chunk) throws -> Void = { _ in }
        ) {
            self.stored = stored
            self.didStore = didStore
        }
    }

    static let tusVersion = "1.0.0"

    /// Uploads the file at `path` to the tus endpoint `request.url` (the request's headers go with every
    /// request; its method is not used: tus creates with POST).
    /// - Parameters:
    ///   - resumption: chunks stored in an earlier run, and where to record new ones (``Resumption``).
    ///   - didSend: chunk bytes handed to a connection, and the total so far (at most the length; stored
    ///     chunks count from the start).
    /// - Throws: ``FerryError``: ``FerryError/Code/badServerResponse`` when the server does not offer tus
    ///   concatenation, or a chunk failed ``ChunkPlanner/Options/maximumAttempts`` times.
    public func upload(
        _ request: Request,
        file path: String,
        deadline: NIODeadline,
        resumption: Resumption = Resumption(),
        didSend: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void = { _, _ in }
    ) async throws -> Report {
        try request.validate()
        guard case .stream(let size?, _) = try TransportRequestBody.file(path: path) else {
            throw FerryError(.noPermissionsToReadFile, "\(path) has no known size")
        }
        try await checkServer(request, deadline: deadline)
        let stored = resumption.stored
        var planner = ChunkPlanner(
            length: size,
            options: options,
            stored: stored.map { $0.offset..<($0.offset + $0.length) }
        )
        var locations: [Int: URL] = [:]
        // The planner numbers stored chunks 0 up in the given order, unless it could not use them.
        if planner.chunksInFileOrder.count == stored.count {
            for (index, chunk) in stored.enumerated() {
                guard let url = URL(string: chunk.location) else { continue }
                locations[index] = url
            }
        }
        if locations.count != stored.count {
            planner = ChunkPlanner(length: size, options: options)
            locations = [:]
        }
        var retries = 0
        var probeThroughput: Double?
        let progress = ProgressTotal(limit: size, report: didSend)
        progress.add(planner.chunksInFileOrder.reduce(0) { $0 + $1.length })
        try await withThrowingTaskGroup(of: ChunkOutcome.self) { group in
            while !planner.isComplete {
                while let chunk = planner.next() {
                    group.addTask {
                        await self.send(chunk, of: path, request: request, deadline: deadline, progress: progress)
                    }
                }
                guard let outcome = try await group.next() else {
                    throw FerryError(.unknown, "the chunk plan stalled with nothing in flight; this is a bug in Ferry")
                }
                switch outcome {
                case .stored(let index, let location, let seconds):
                    locations[index] = location
                    planner.succeeded(index, seconds: seconds)
                    let chunk = planner.chunk(index)
                    do {
                        try resumption.didStore(.init(offset: chunk.offset, length: chunk.length, location: location.absoluteString))
                    } catch {
                        group.cancelAll()
                        throw error
                    }
                    if probeThroughput == nil { probeThroughput = planner.throughput }
                case .failed(let index, let error):
                    guard RetryPolicy.isRetryable(error.code) || error.code == .badServerResponse,
                        NIODeadline.now() < deadline, planner.failed(index) == .requeued
                    else {
                        group.cancelAll()
                        throw error
                    }
                    retries += 1
                }
            }
        }
        let parts = planner.chunksInFileOrder.map { locations[$0.index]!.absoluteString }
        var final = Headers()
        for field in request.headers { final.add(name: field.name, value: field.value) }
        final["Tus-Resumable"] = Self.tusVersion
        final["Upload-Concat"] = "final;" + parts.joined(separator: " ")
        let response = try await transport.send(
            TransportRequest(method: "POST", url: request.url, headers: final, body: .bytes(ByteBuffer())),
            deadline: deadline
        )
        var body = ByteBuffer()
        for try await var chunk in response.body { body.writeBuffer(&chunk) }
        return Report(
            result: DataLoader.Result(
                finalRequest: request,
                status: response.status,
                headers: response.headers,
                protocolName: response.protocolName,
                body: body,
                bodyLength: Int64(body.readableBytes),
                redirectCount: 0
            ),
            chunks: planner.chunksInFileOrder.count,
            retries: retries,
            probeThroughput: probeThroughput
        )
    }

    /// Ends stored chunks' partial uploads on the server (tus termination: DELETE, with the request's
    /// headers), so it can free what it holds for an upload that will not be concatenated. Errors are
    /// ignored: a tus server expires abandoned uploads by itself.
    public func terminate(_ chunks: [ChunkedUploadProgress.Chunk], of request: Request, deadline: NIODeadline) async {
        var headers = request.headers
        headers["Tus-Resumable"] = Self.tusVersion
        for chunk in chunks {
            guard let url = URL(string: chunk.location) else { continue }
            if let response = try? await transport.send(
                TransportRequest(method: "DELETE", url: url, headers: headers),
                deadline: deadline
            ) {
                try? await Downloader.drain(response.body)
            }
        }
    }

    private enum ChunkOutcome: Sendable {
        case stored(index: Int, location: URL, seconds: Double)
        case failed(index: Int, FerryError)
    }

    /// OPTIONS: the server must speak tus 1.0 with the concatenation extension.
    private func checkServer(_ request: Request, deadline: NIODeadline) async throws {
        var headers = request.headers
        headers["Tus-Resumable"] = Self.tusVersion
        let response = try await transport.send(
            TransportRequest(method: "OPTIONS", url: request.url, headers: headers),
            deadline: deadline
        )
        try await Downloader.drain(response.body)
        let extensions = (response.headers["tus-extension"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard (response.headers["tus-version"] ?? "").contains(Self.tusVersion), extensions.contains("concatenation")
        else {
            throw FerryError(
                .badServerResponse,
                "\(request.url.absoluteString) does not offer tus 1.0 with concatenation (answered \(response.status)); parallel chunked uploads need it — use a plain or resumable upload",
                failingURL: request.url.absoluteString
            )
        }
    }

    /// Creates a partial upload for `chunk` and sends its bytes.
    private func send(
        _ chunk: ChunkPlanner.Chunk,
        of path: String,
        request: Request,
        deadline: NIODeadline,
        progress: ProgressTotal
    ) async -> ChunkOutcome {
        do {
            var headers = request.headers
            headers["Tus-Resumable"] = Self.tusVersion
            headers["Upload-Length"] = String(chunk.length)
            headers["Upload-Concat"] = "partial"
            let created = try await transport.send(
                TransportRequest(method: "POST", url: request.url, headers: headers, body: .bytes(ByteBuffer())),
                deadline: deadline
            )
            try await Downloader.drain(created.body)
            guard created.status == 201, let value = created.headers["location"],
                let location = URL(string: value, relativeTo: request.url)?.absoluteURL
            else {
                return .failed(index: chunk.index, Self.refusal(created.status, "creating a chunk", request.url))
            }
            let started = NIODeadline.now()
            var append = Headers()
            for field in request.headers where field.name.lowercased() != "content-type" {
                append.add(name: field.name, value: field.value)
            }
            append["Tus-Resumable"] = Self.tusVersion
            append["Upload-Offset"] = "0"
            append["Content-Type"] = "application/offset+octet-stream"
            let bytes = FileChunks(path: path, offset: chunk.offset, length: chunk.length, chunkSize: 256 * 1024).map {
                @Sendable buffer -> ByteBuffer in
                progress.add(Int64(buffer.readableBytes))
                return buffer
            }
            let stored = try await transport.send(
                TransportRequest(
                    method: "PATCH",
                    url: location,
                    headers: append,
                    body: .stream(length: chunk.length, TransportBodyStream(bytes))
                ),
                deadline: deadline
            )
            try await Downloader.drain(stored.body)
            guard (200..<300).contains(stored.status), stored.headers["upload-offset"] == String(chunk.length) else {
                return .failed(index: chunk.index, Self.refusal(stored.status, "sending a chunk", location))
            }
            let seconds = Double((NIODeadline.now() - started).nanoseconds) / 1e9
            return .stored(index: chunk.index, location: location, seconds: seconds)
        } catch let error as FerryError {
            return .failed(index: chunk.index, error)
        } catch {
            return .failed(index: chunk.index, FerryError(.networkConnectionLost, "a chunk failed: \(error)"))
        }
    }

    /// A refused chunk request: a 5xx or 429 may pass (it is tried again), another status is final.
    private static func refusal(_ status: Int, _ doing: String, _ url: URL) -> FerryError {
        let passing = status >= 500 || status == 429
        return FerryError(
            passing ? .networkConnectionLost : .invalidOperation,
            "the server answered \(status) when \(doing)",
            failingURL: url.absoluteString
        )
    }
}

/// Upload progress over all chunks, never past the file's length (a chunk sent again counts once).
private final class ProgressTotal: Sendable {
    private let total = NIOLockedValueBox<Int64>(0)
    private let limit: Int64
    private let report: @Sendable (Int64, Int64) -> Void

    init(limit: Int64, report: @escaping @Sendable (Int64, Int64) -> Void) {
        self.limit = limit
        self.report = report
    }

    func add(_ count: Int64) {
        let (delta, now) = total.withLockedValue { total -> (Int64, Int64) in
            let next = min(limit, total + count)
            defer { total = next }
            return (next - total, next)
        }
        if delta > 0 { report(delta, now) }
    }
}
