public import FerryCore
import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix

/// Downloads one resource to a file: follows redirects (asking first), continues from resume data with
/// Range and If-Range, and never reports success unless the file holds exactly the server's bytes of
/// one version (SPEC S5). A failure or cancellation mid-body leaves the partial file and carries resume
/// data, when the response had a validator that makes continuing safe.
///
/// The same code runs in-process and inside ferryd: it knows nothing of sessions or delegates, only of
/// the callbacks in ``Events``.
public struct Downloader: Sendable {
    /// What happens along the way, for delegates and progress. Called on the downloading task, in order.
    public struct Events: Sendable {
        /// A redirect: return the request to follow (possibly changed), or nil to stop and deliver the
        /// redirect response as the result. Default: follow.
        public var willRedirect: @Sendable (_ status: Int, _ headers: Headers, _ proposed: Request) async -> Request? =
            {
                _,
                _,
                proposed in proposed
            }
        /// Resume data was used: the body continues at `offset` (0 when the server sent a new version,
        /// ignored the range, or could not be trusted) of `expectedTotal` bytes.
        public var didResume: @Sendable (_ offset: Int64, _ expectedTotal: Int64?) -> Void = { _, _ in }
        /// Resume data was given but the download starts from byte 0: why, in words (the server's file
        /// changed, it does not continue downloads, the partial file is gone, …). Called before
        /// `didResume(0, _)`.
        public var didStartOver: @Sendable (_ reason: String) -> Void = { _ in }
        /// Bytes were written: this time, in all, and the expected total (nil when unknown).
        public var didWrite: @Sendable (_ written: Int64, _ totalWritten: Int64, _ totalExpected: Int64?) -> Void = {
            _,
            _,
            _ in
        }

        /// Each final response head (after redirects), before its body is judged or written.
        public var didReceiveResponse: @Sendable (_ status: Int, _ headers: Headers) -> Void = { _, _ in }

        /// A 401's challenge: a credential to send again with, or not (nil: the 401 is the response).
        public var didReceiveChallenge: (@Sendable (AuthenticationChallenge) async -> ChallengeDisposition)?
        /// Closed while the task is suspended: the body loop waits at the next chunk.
        public var gate: TransferGate?
        /// Durable checkpoints (D1), for the daemon: nil in-process.
        public var checkpoint: Checkpoint?

        /// No callbacks.
        public init() {}
    }

    /// How often the partial file is made durable and its offset handed to ``record`` (D1): whichever
    /// of the two intervals passes first. A crash loses at most one interval, or, when the disk is slower than the
    /// network, what arrived while the previous checkpoint's sync ran (the body does not wait for it; the
    /// checkpoint that fell due meanwhile is synchronized as soon as that sync is done).
    public struct Checkpoint: Sendable {
        /// Bytes between checkpoints.
        public var everyBytes: Int64
        /// Seconds between checkpoints (checked as bytes arrive).
        public var everySeconds: Double
        /// Called after the file is synchronized (fdatasync) up to `resumeData.bytesReceived`; typically
        /// records the offset in the daemon's database. A throw fails the download.
        public var record: @Sendable (_ resumeData: ResumeData) throws -> Void
        /// A checkpoint is made durable only when this many seconds have passed since the last durable
        /// one; the others write out what is buffered (so it survives the process, not a power loss) and
        /// go to ``recordWritten``. Default 0: every checkpoint is durable.
        public var durableEverySeconds = 0.0
        /// Called at a checkpoint that is not durable, after the buffered bytes are written to the file.
        public var recordWritten: (@Sendable (_ resumeData: ResumeData) throws -> Void)?
        /// Told how long each durable checkpoint took: the file's sync and ``record`` together
        /// (ferryd's checkpoint latency histogram).
        public var didSynchronize: (@Sendable (_ duration: Duration) -> Void)?

        /// Makes the checkpoint at `point` durable and records `snapshot`, timing both for
        /// ``didSynchronize``. Runs on a pool thread.
        func synchronize(_ point: DurabilityPoint, _ snapshot: ResumeData?) throws {
            let start = ContinuousClock.now
            try point.synchronize()
            if let snapshot { try record(snapshot) }
            didSynchronize?(ContinuousClock.now - start)
        }

        /// A checkpoint every `everyBytes` or `everySeconds`, whichever comes first.
        public init(
            everyBytes: Int64 = 8 << 20,
            everySeconds: Double = 1,
            record: @escaping @Sendable (_ resumeData: ResumeData) throws -> Void
        ) {
            self.everyBytes = everyBytes
            self.everySeconds = everySeconds
            self.record = record
        }
    }

    /// A finished download.
    public struct Result: Sendable {
        /// The last request sent (after redirects).
        public var finalRequest: Request
        /// The final response's status.
        public var status: Int
        /// The final response's header fields.
        public var headers: Headers
        /// `http/1.1` or `h2`.
        public var protocolName: String
        /// The file with the body.
        public var path: String
        /// The body's length in the file.
        public var length: Int64
        /// How many redirects were followed.
        public var redirectCount: Int
    }

    /// The most redirects followed before failing with ``FerryError/Code/httpTooManyRedirects``.
    public var maximumRedirects = 16

    /// Whether a gzip or deflate Content-Encoding is undone before the bytes are written (curl's
    /// `--compressed`). A decoded body is fetched over one connection and cannot be continued: its
    /// offsets are not the server's.
    public var decodesContent = false

    /// A request body whose answer is the download (curl's `-d`), sent with the first request and
    /// again on 307 and 308 redirects. Such a download cannot be continued: a range request would not
    /// send the body again, so no resume data is made, and it is fetched over one connection.
    public var requestBody: ByteBuffer?

    let transport: any HTTPTransport

    /// A downloader sending through `transport`.
    public init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Downloads `request` (or continues `resumeData`) into the file at `path`.
    /// - Parameters:
    ///   - request: what to fetch; ignored when `resumeData` is given (it holds the requests).
    ///   - resumeData: where an earlier attempt stopped.
    ///   - path: the file to write (the partial file, when resuming).
    ///   - deadline: when the whole download must be over (the resource timeout).
    ///   - events: callbacks.
    /// - Throws: ``FerryError``; with resume data when the partial file can be continued.
    ///
    /// A request with ``Request/connections`` above 1 (or resume data with segments) is fetched in
    /// segments over several connections (``downloadSegmented(_:resumingFrom:to:deadline:events:)``). A
    /// request with an ``Request/expectedDigest`` succeeds only if a 2xx body has that digest.
    public func download(
        _ request: Request,
        resumingFrom resumeData: ResumeData? = nil,
        to path: String,
        deadline: NIODeadline,
        events: Events = Events()
    ) async throws -> Result {
        let original = resumeData?.originalRequest ?? request
        // A device or FIFO takes its bytes in order, once: one connection, and nothing to read back.
        let special = DownloadDestination.isSpecialFile(path)
        if special, original.expectedDigest != nil {
            throw FerryError(
                .invalidOperation,
                "cannot verify a checksum of \(path): it is not a regular file, so its bytes cannot be read back; download to a file"
            )
        }
        let segmented =
            !special && !decodesContent && requestBody == nil
            && (resumeData?.segments != nil
                || (original.connections > 1 && original.method == "GET" && original.headers["range"] == nil))
        let result =
            segmented
            ? try await downloadSegmented(
                request,
                resumingFrom: resumeData,
                to: path,
                deadline: deadline,
                events: events
            )
            : try await downloadSequential(
                request,
                resumingFrom: resumeData,
                to: path,
                deadline: deadline,
                events: events
            )
        if let digest = original.expectedDigest, (200..<300).contains(result.status) {
            try await DigestVerifier.verify(file: result.path, expected: digest, url: result.finalRequest.url)
        }
        return result
    }

    /// Downloads over one connection, continuing from resume data without segments.
    func downloadSequential(
        _ request: Request,
        resumingFrom resumeData: ResumeData?,
        to path: String,
        deadline: NIODeadline,
        events: Events
    ) async throws -> Result {
        let originalRequest = resumeData?.originalRequest ?? request
        var current = resumeData?.currentRequest ?? request
        try current.validate(for: transport)
        // Never continued by range: the answer to a body (the body would not be sent again), a request
        // for a range of its own (curl's -r; a second Range would contradict it), and a body to decode
        // (its offsets are not the server's).
        let continuable = requestBody == nil && originalRequest.headers["range"] == nil && !decodesContent
        var resumption = continuable ? resumeData.flatMap { Self.resumption(from: $0, path: path) } : nil
        var redirectCount = 0
        var refetched = false
        // Why resume data, if any, is not continued (set again when a ranged answer cannot be trusted).
        var startOverReason = resumption?.canResume == true ? nil : resumeData.map { Self.obstacle(continuing: $0, at: path, continuable) }

        let follower = RedirectFollower(transport: transport, maximumRedirects: maximumRedirects)
        while true {
            let ranged = resumption?.canResume == true
            let outcome = try await follower.send(
                current,
                body: requestBody.map { .bytes($0) },
                extraHeaders: ranged ? resumption?.requestHeaders ?? [] : [],
                deadline: deadline,
                willRedirect: events.willRedirect,
                didReceiveChallenge: events.didReceiveChallenge
            )
            let response = outcome.response
            current = outcome.request
            redirectCount += outcome.redirects
            events.didReceiveResponse(response.status, response.headers)
            if outcome.refusedRedirect {
                // The redirect response itself is the result, body and all.
                let job = BodyJob(response: response, request: current, original: originalRequest, path: path, redirects: redirectCount)
                return try await finish(job, deadline: deadline, events: events)
            }
            if !ranged { try Self.refuseUnaskedPartial(response, to: current) }

            var writeOffset: Int64 = 0
            var validators = BodyJob.Validators(etag: response.headers["etag"], lastModified: response.headers["last-modified"])
            if ranged, let plan = resumption {
                switch plan.judge(status: response.status, headers: response.headers) {
                case .append(let total):
                    writeOffset = plan.offset
                    if validators.etag == nil { validators.etag = resumeData?.entityTag }
                    if validators.lastModified == nil { validators.lastModified = resumeData?.lastModified }
                    events.didResume(plan.offset, total)
                case .startOver(let reason):
                    events.didStartOver(reason)
                    events.didResume(0, response.headers.contentLength)
                case .discardAndRefetch(let reason):
                    try await Self.drain(response.body)
                    startOverReason = reason
                    guard !refetched else {
                        throw FerryError(
                            .badServerResponse,
                            "the server's answers to a range request cannot be trusted: \(reason)",
                            failingURL: current.url.absoluteString
                        )
                    }
                    refetched = true
                    resumption = nil
                    continue
                case .httpError(let status):
                    try await Self.drain(response.body)
                    throw FerryError(
                        .badServerResponse,
                        "the server answered \(status) when asked for the rest; the partial data is kept for a later try",
                        failingURL: current.url.absoluteString,
                        resumeData: resumeData
                    )
                }
            } else if resumeData != nil {
                // Resume data that could not be used (no validator, or a refetch): start over, and say so.
                events.didStartOver(startOverReason ?? "the partial download cannot be continued")
                events.didResume(0, response.headers.contentLength)
            }
            let job = BodyJob(
                response: response,
                request: current,
                original: originalRequest,
                path: path,
                writeOffset: writeOffset,
                // The answer to a body cannot be asked for again by range: no resume data.
                validators: requestBody == nil ? validators : nil,
                redirects: redirectCount
            )
            return try await finish(job, deadline: deadline, events: events)
        }
    }

    /// A response whose body is to be written, and what the result and resume data need to know.
    struct BodyJob: Sendable {
        struct Validators: Sendable {
            var etag: String?
            var lastModified: String?
        }

        var response: TransportResponse
        /// The request that got this response (after redirects).
        var request: Request
        /// The request as first made.
        var original: Request
        var path: String
        /// Where the body goes in the file; the file is cut to this length first.
        var writeOffset: Int64 = 0
        /// The validators of the version being written; nil when it cannot be resumed at all.
        var validators: Validators? = nil
        var redirects: Int
    }

    /// Writes the body within the deadline.
    func finish(_ job: BodyJob, deadline: NIODeadline, events: Events) async throws -> Result {
        try await DeadlineRace.run(until: deadline, url: job.request.url.absoluteString, over: transport) {
            try await self.writeBody(job, events: events)
        }
    }

    /// Writes the body at `writeOffset` and checks that it is complete.
    private func writeBody(_ job: BodyJob, events: Events) async throws -> Result {
        let (response, request, path, writeOffset) = (job.response, job.request, job.path, job.writeOffset)
        let decoder = decodesContent ? ContentDecoder(headers: response.headers) : nil
        let declared = response.headers.contentLength
        // What the server announces must fit before anything is written (a device or FIFO takes it as
        // it comes). A decoded body's length is unknown; its encoded length is a lower bound.
        if let declared, (200..<300).contains(response.status), !DownloadDestination.isSpecialFile(path) {
            do {
                try DiskSpace.check(declared, for: path, keeping: decoder == nil ? writeOffset : 0, url: request.url.absoluteString)
            } catch {
                response.cancel?()
                throw error
            }
        }
        let sink = try FileSink(path: path, keepingFirst: decoder == nil ? writeOffset : 0)
        // A decoded body is checked against Content-Length by the bytes as sent.
        let expectedTotal = decoder == nil ? declared.map { writeOffset + $0 } : nil
        var encodedLength: Int64 = 0
        func resumeData() -> ResumeData? {
            // Only a successful response with a validator can be continued safely; a decoded one never.
            guard decoder == nil, let validators = job.validators, !sink.isSequential,
                response.status == 200 || response.status == 206,
                RangeResumption.validator(entityTag: validators.etag, lastModified: validators.lastModified) != nil,
                sink.length > 0
            else { return nil }
            return ResumeData(
                originalRequest: job.original,
                currentRequest: request,
                bytesReceived: sink.length,
                expectedLength: expectedTotal,
                entityTag: validators.etag,
                lastModified: validators.lastModified,
                partialFilePath: path
            )
        }
        var checkpoints = events.checkpoint.map { BodyCheckpoints($0, startingAt: sink.bytesAccepted) }
        do {
            let gate = events.gate
            for try await sent in response.body {
                if let gate, !gate.isOpen { try await gate.passThrough() }
                encodedLength += Int64(sent.readableBytes)
                if let decoder {
                    // Decoded a piece at a time: a small body that inflates to gigabytes never sits
                    // whole in memory (ContentDecoder.pieceSize).
                    decoder.feed(sent)
                    while let piece = try decoder.next() {
                        try sink.append(piece)
                        events.didWrite(Int64(piece.readableBytes), sink.bytesAccepted, expectedTotal)
                    }
                } else {
                    try sink.append(sent)
                    events.didWrite(Int64(sent.readableBytes), sink.bytesAccepted, expectedTotal)
                }
                try await checkpoints?.wrote(to: sink, snapshot: resumeData)
            }
            try await checkpoints?.finish()
            try sink.flush()
            try decoder?.finish()
            if decoder != nil, let declared, encodedLength != declared {
                throw FerryError(
                    .networkConnectionLost,
                    "the server announced \(declared) bytes but sent \(encodedLength)",
                    failingURL: request.url.absoluteString
                )
            }
        } catch var error as FerryError {
            _ = try? await checkpoints?.finish()
            try? sink.flush()
            if error.resumeData == nil { error.resumeData = resumeData() }
            throw error
        } catch {
            _ = try? await checkpoints?.finish()
            try? sink.flush()
            throw FerryError(
                .networkConnectionLost,
                "the download failed: \(error)",
                failingURL: request.url.absoluteString,
                resumeData: resumeData()
            )
        }
        if let expectedTotal, sink.length != expectedTotal {
            throw FerryError(
                .networkConnectionLost,
                "the server announced \(expectedTotal - writeOffset) bytes but sent \(sink.length - writeOffset); the partial data is kept",
                failingURL: request.url.absoluteString,
                resumeData: resumeData()
            )
        }
        return Result(
            finalRequest: request,
            status: response.status,
            headers: response.headers,
            protocolName: response.protocolName,
            path: path,
            length: sink.length,
            redirectCount: job.redirects
        )
    }

    /// Writes the body of a response already received (a data task that became a download, or a
    /// segmented download's first response read whole) to `path`, with the same checks as a download:
    /// complete, and resumable when the response has a validator.
    func continueAsDownload(
        response: TransportResponse,
        request: Request,
        originalRequest: Request,
        redirects: Int,
        to path: String,
        deadline: NIODeadline,
        events: Events
    ) async throws -> Result {
        let job = BodyJob(
            response: response,
            request: request,
            original: originalRequest,
            path: path,
            writeOffset: 0,
            validators: BodyJob.Validators(
                etag: response.headers["etag"],
                lastModified: response.headers["last-modified"]
            ),
            redirects: redirects
        )
        return try await finish(job, deadline: deadline, events: events)
    }

    /// The continuation resume data allows, if its partial file still holds the bytes it claims.
    static func resumption(from resumeData: ResumeData, path: String) -> RangeResumption? {
        let partial = resumeData.partialFilePath
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: partial),
            let size = (attributes[.size] as? NSNumber)?.int64Value, size >= resumeData.bytesReceived
        else { return nil }
        if partial != path {
            // Continue in the new place: the partial file moves to where this download writes.
            guard (try? FileManager.default.moveItem(atPath: partial, toPath: path)) != nil else { return nil }
        }
        return RangeResumption(
            offset: resumeData.bytesReceived,
            expectedLength: resumeData.expectedLength,
            entityTag: resumeData.entityTag,
            lastModified: resumeData.lastModified
        )
    }

    /// A 206 nobody asked for is a fragment, never the file (RFC 9110 §15.3.7): refused, nothing saved.
    static func refuseUnaskedPartial(_ response: TransportResponse, to request: Request) throws {
        guard response.status == 206,
            let problem = PartialContentCheck.problem(requestedRange: request.headers["range"], headers: response.headers)
        else { return }
        response.cancel?()
        throw FerryError(.badServerResponse, problem + "; nothing was saved", failingURL: request.url.absoluteString)
    }

    /// Why resume data is not continued at `path`, in words.
    static func obstacle(continuing resumeData: ResumeData, at path: String, _ continuable: Bool) -> String {
        guard continuable else {
            return "a download with a request body, a Range of its own or a compressed body cannot be continued"
        }
        return obstacle(continuing: resumeData, at: path) ?? "the partial download cannot be continued"
    }

    /// Why resume data cannot be continued at `path`, in words; nil when nothing stands in the way.
    static func obstacle(continuing resumeData: ResumeData, at path: String) -> String? {
        guard RangeResumption.validator(entityTag: resumeData.entityTag, lastModified: resumeData.lastModified) != nil else {
            return "the server gave no ETag or Last-Modified that could prove its file is the one the partial download holds"
        }
        guard resumeData.bytesReceived > 0 else { return "nothing was received before" }
        let partial = resumeData.partialFilePath
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: partial),
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else { return "the partial file \(partial) is gone" }
        guard size >= resumeData.bytesReceived else {
            return "the partial file \(partial) holds \(size) bytes, fewer than the \(resumeData.bytesReceived) received"
        }
        return partial == path ? nil : "the partial file \(partial) could not be moved to \(path)"
    }

    /// Reads and drops a body we will not use, so its connection can be reused.
    static func drain(_ body: TransportBodyStream) async throws {
        for try await _ in body {}
    }
}
