public import FerryCore
import Foundation
import NIOConcurrencyHelpers
public import NIOCore

/// Sends an upload with the IETF resumable-upload protocol (``ResumableUploadProtocol``; SPEC S4.6):
/// detects support with OPTIONS, creates the upload resource, appends the bytes with PATCH, and after a
/// network error asks the server for its offset (HEAD) and goes on from there — bytes the server already
/// has are never sent again. A 409 moves to the offset the server names. `Upload-Limit` is respected:
/// an upload above `max-size` fails before a byte is sent, and appends are split at `max-append-size`.
///
/// In-process and in ferryd alike; ferryd records each confirmed state (``Events/didConfirm``) so an
/// upload continues after the daemon restarts.
public struct ResumableUploader: Sendable {
    /// The bytes to upload.
    public enum Body: Sendable {
        /// A file of `length` bytes, read at offsets as it is sent.
        case file(path: String, length: Int64)
        /// Bytes in memory.
        case bytes(ByteBuffer)

        /// The whole length.
        public var length: Int64 {
            switch self {
            case .file(_, let length): length
            case .bytes(let buffer): Int64(buffer.readableBytes)
            }
        }

        /// `count` bytes from `offset`, as a stream.
        func stream(from offset: Int64, count: Int64) -> TransportBodyStream {
            switch self {
            case .file(let path, _):
                return TransportBodyStream(FileChunks(path: path, offset: offset, length: count, chunkSize: 256 * 1024))
            case .bytes(let buffer):
                let slice = buffer.getSlice(at: buffer.readerIndex + Int(offset), length: Int(count)) ?? ByteBuffer()
                return TransportBodyStream(BufferChunks(buffer: slice))
            }
        }
    }

    /// Callbacks along the way.
    public struct Events: Sendable {
        /// Body bytes handed to the connection: this time, in all (from the server's offset), the length.
        public var didSend: @Sendable (_ sent: Int64, _ totalSent: Int64, _ totalExpected: Int64) -> Void = { _, _, _ in
        }
        /// The upload resource was created, or the server confirmed an offset: ferryd records it. A throw
        /// fails the upload.
        public var didConfirm: @Sendable (UploadResumption) throws -> Void = { _ in }
        /// Closed while the task is suspended: the body waits at the next chunk.
        public var gate: TransferGate?

        /// No callbacks.
        public init() {}
    }

    /// How an upload ended.
    public enum Outcome: Sendable {
        /// The server's final answer to the upload (any status: a 413 or a 500 is the response too).
        case finished(DataLoader.Result)
        /// The server does not speak the protocol: send a plain upload instead (nothing was sent yet).
        case unsupported
    }

    /// Interruptions resumed in a row before the upload fails (with resume data).
    public var maximumResumptions = 8
    /// The interop version of a new upload.
    public var version = ResumableUploadProtocol.Version.latest
    /// The largest final response body kept.
    public var maximumResponseBody = 16 << 20

    private let transport: any HTTPTransport

    /// An uploader sending through `transport`.
    public init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Uploads `body` as `request` asks (its method and headers go with the creation), or continues the
    /// upload `resumption` describes.
    /// - Parameters:
    ///   - partialFilePath: the file, for resume data (empty for bytes in memory).
    /// - Throws: ``FerryError``; with resume data (``ResumeData/upload``) once the upload resource exists.
    public func upload(
        _ request: Request,
        body: Body,
        resumingFrom resumption: UploadResumption?,
        filePath: String = "",
        deadline: NIODeadline,
        events: Events = Events()
    ) async throws -> Outcome {
        try request.validate()
        guard var state = try await start(request, body: body, resumingFrom: resumption, deadline: deadline, events: events)
        else { return .unsupported }
        func resumeData(_ state: UploadResumption) -> ResumeData {
            ResumeData(
                originalRequest: request,
                currentRequest: request,
                bytesReceived: state.offset,
                expectedLength: state.length,
                entityTag: nil,
                lastModified: nil,
                partialFilePath: filePath,
                upload: state
            )
        }
        var askOffset = resumption != nil
        var failures = 0
        var highestSent: Int64 = state.offset
        while true {
            do {
                if askOffset {
                    if let finished = try await retrieveOffset(&state, request: request, deadline: deadline) {
                        return .finished(finished)
                    }
                    try events.didConfirm(state)
                    askOffset = false
                }
                let step = try await append(
                    &state,
                    request: request,
                    body: body,
                    deadline: deadline,
                    events: events,
                    highestSent: &highestSent
                )
                switch step {
                case .finished(let result):
                    return .finished(result)
                case .moved:
                    try events.didConfirm(state)
                    failures = 0
                case .conflict:
                    try events.didConfirm(state)
                    failures += 1
                    guard failures <= maximumResumptions else {
                        throw FerryError(
                            .badServerResponse,
                            "the server keeps refusing the upload's offset (409)",
                            failingURL: state.location.absoluteString
                        )
                    }
                }
            } catch is CancellationError {
                throw FerryError(
                    .cancelled,
                    "the upload was cancelled",
                    failingURL: request.url.absoluteString,
                    resumeData: resumeData(state)
                )
            } catch var error as FerryError {
                failures += 1
                let retry =
                    RetryPolicy.isRetryable(error.code) && failures <= maximumResumptions
                    && NIODeadline.now() < deadline
                if error.code != .invalidResumeData, error.resumeData == nil, error.code != .badServerResponse {
                    error.resumeData = resumeData(state)
                }
                guard retry else { throw error }
                do {
                    try await Task.sleep(for: .milliseconds(min(5000, 100 << min(failures, 6))))
                } catch {
                    throw FerryError(
                        .cancelled,
                        "the upload was cancelled",
                        failingURL: request.url.absoluteString,
                        resumeData: resumeData(state)
                    )
                }
                askOffset = true
            }
        }
    }

    /// The upload's state to begin from: the resume data's (for a body of the same length), or a new
    /// upload resource created on the server; nil when the server does not speak the draft.
    private func start(
        _ request: Request,
        body: Body,
        resumingFrom resumption: UploadResumption?,
        deadline: NIODeadline,
        events: Events
    ) async throws -> UploadResumption? {
        if let resumption {
            guard resumption.length == body.length else {
                throw FerryError(
                    .invalidResumeData,
                    "the resume data is for an upload of \(resumption.length) bytes, but the body has \(body.length); start the upload again",
                    failingURL: request.url.absoluteString
                )
            }
            return resumption
        }
        guard let created = try await create(request, length: body.length, deadline: deadline) else { return nil }
        try events.didConfirm(created)
        return created
    }

    /// Cancels an upload on the server (DELETE), so it can free what it holds. Errors are ignored: the
    /// server forgets abandoned uploads by itself (`max-age`).
    public func cancel(_ resumption: UploadResumption, deadline: NIODeadline) async {
        let request = TransportRequest(
            method: "DELETE",
            url: resumption.location,
            headers: Headers(ResumableUploadProtocol.baseFields(resumption.version).map { ($0.name, $0.value) })
        )
        if let response = try? await transport.send(request, deadline: deadline) {
            try? await Downloader.drain(response.body)
        }
    }

    // MARK: Steps

    /// OPTIONS, then the creation request: the new upload, or nil when the server does not speak the draft.
    private func create(_ request: Request, length: Int64, deadline: NIODeadline) async throws -> UploadResumption? {
        let probe = try await exchange(
            TransportRequest(
                method: "OPTIONS",
                url: request.url,
                headers: merged(request.headers, ResumableUploadProtocol.baseFields(version))
            ),
            deadline: deadline
        )
        guard ResumableUploadProtocol.isSupported(optionsResponse: probe.headers) else { return nil }
        let limit = probe.headers["upload-limit"].flatMap(UploadLimit.init)
        if let maximum = limit?.maximumSize, length > maximum {
            throw FerryError(
                .dataLengthExceedsMaximum,
                "the server takes uploads of at most \(maximum) bytes (Upload-Limit), and this one has \(length)",
                failingURL: request.url.absoluteString
            )
        }
        var fields = ResumableUploadProtocol.creationFields(version)
        fields.append(("Content-Length", "0"))
        let created = try await exchange(
            TransportRequest(
                method: request.method,
                url: request.url,
                headers: merged(request.headers, fields),
                body: .bytes(ByteBuffer())
            ),
            deadline: deadline
        )
        guard created.status == 201 || created.status == 104,
            let location = ResumableUploadProtocol.location(created.headers, relativeTo: request.url)
        else {
            throw FerryError(
                .badServerResponse,
                "the server announced resumable uploads but answered \(created.status) without an upload Location to the creation request",
                failingURL: request.url.absoluteString
            )
        }
        return UploadResumption(
            location: location,
            version: version,
            offset: ResumableUploadProtocol.offset(created.headers) ?? 0,
            length: length,
            limit: created.headers["upload-limit"].flatMap(UploadLimit.init) ?? limit
        )
    }

    /// HEAD: the server's offset. Returns a result when the server says the upload is already complete
    /// (its final answer was lost; the HEAD's stands in for it).
    private func retrieveOffset(
        _ state: inout UploadResumption,
        request: Request,
        deadline: NIODeadline
    ) async throws -> DataLoader.Result? {
        let answer = try await exchange(
            TransportRequest(
                method: "HEAD",
                url: state.location,
                headers: Headers(ResumableUploadProtocol.baseFields(state.version).map { ($0.name, $0.value) })
            ),
            deadline: deadline
        )
        if answer.status == 404 || answer.status == 410 {
            throw FerryError(
                .badServerResponse,
                "the server no longer has the upload (\(answer.status)); start it again",
                failingURL: state.location.absoluteString
            )
        }
        guard (200..<300).contains(answer.status), let offset = ResumableUploadProtocol.offset(answer.headers),
            offset <= state.length
        else {
            throw FerryError(
                .networkConnectionLost,
                "the server answered \(answer.status) when asked for the upload's offset",
                failingURL: state.location.absoluteString
            )
        }
        state.offset = offset
        if offset == state.length, ResumableUploadProtocol.isComplete(answer.headers) == true {
            return DataLoader.Result(
                finalRequest: request,
                status: answer.status,
                headers: answer.headers,
                protocolName: answer.protocolName,
                body: ByteBuffer(),
                bodyLength: 0,
                redirectCount: 0
            )
        }
        return nil
    }

    private enum AppendStep {
        case finished(DataLoader.Result)
        /// The server took the append; the offset moved.
        case moved
        /// 409: the offset is now the server's.
        case conflict
    }

    /// One PATCH from the offset: to the end, or to `max-append-size`.
    private func append(
        _ state: inout UploadResumption,
        request: Request,
        body: Body,
        deadline: NIODeadline,
        events: Events,
        highestSent: inout Int64
    ) async throws -> AppendStep {
        let start = state.offset
        let count = state.limit?.appendLength(from: start, of: state.length) ?? state.length - start
        let complete = start + count == state.length
        var fields = ResumableUploadProtocol.appendFields(offset: start, complete: complete, state.version)
        fields.append(("Content-Length", String(count)))
        let gate = events.gate
        let sent = SentCounter(start: start, highest: highestSent)
        let length = state.length
        let didSend = events.didSend
        let stream = body.stream(from: start, count: count).map { @Sendable chunk -> ByteBuffer in
            if let gate, !gate.isOpen { try await gate.passThrough() }
            if let (delta, total) = sent.add(Int64(chunk.readableBytes)) { didSend(delta, total, length) }
            return chunk
        }
        let response = try await transport.send(
            TransportRequest(
                method: "PATCH",
                url: state.location,
                headers: Headers(fields.map { ($0.name, $0.value) }),
                body: .stream(length: count, TransportBodyStream(stream))
            ),
            deadline: deadline
        )
        highestSent = max(highestSent, sent.highest)
        let isComplete = ResumableUploadProtocol.isComplete(response.headers)
        if response.status == 409 {
            try await Downloader.drain(response.body)
            guard let offset = ResumableUploadProtocol.offset(response.headers), offset <= state.length else {
                throw FerryError(
                    .badServerResponse,
                    "the server refused the upload's offset (409) without naming its own",
                    failingURL: state.location.absoluteString
                )
            }
            state.offset = offset
            return .conflict
        }
        if !complete, (200..<300).contains(response.status), isComplete != true {
            try await Downloader.drain(response.body)
            state.offset = ResumableUploadProtocol.offset(response.headers) ?? start + count
            return .moved
        }
        if !complete, response.status == 404 || response.status == 410 {
            try await Downloader.drain(response.body)
            throw FerryError(
                .badServerResponse,
                "the server no longer has the upload (\(response.status)); start it again",
                failingURL: state.location.absoluteString
            )
        }
        // The final answer (or an error status, which is the response too).
        var collected = ByteBuffer()
        var bodyLength: Int64 = 0
        for try await chunk in response.body {
            bodyLength += Int64(chunk.readableBytes)
            guard collected.readableBytes + chunk.readableBytes <= maximumResponseBody else { continue }
            var chunk = chunk
            collected.writeBuffer(&chunk)
        }
        if (200..<300).contains(response.status) { state.offset = state.length }
        return .finished(
            DataLoader.Result(
                finalRequest: request,
                status: response.status,
                headers: response.headers,
                protocolName: response.protocolName,
                body: collected,
                bodyLength: bodyLength,
                redirectCount: 0
            )
        )
    }

    // MARK: Helpers

    private struct Answer {
        var status: Int
        var headers: Headers
        var protocolName: String
    }

    /// Sends a request whose answer has no body worth keeping.
    private func exchange(_ request: TransportRequest, deadline: NIODeadline) async throws -> Answer {
        let response = try await transport.send(request, deadline: deadline)
        try await Downloader.drain(response.body)
        return Answer(status: response.status, headers: response.headers, protocolName: response.protocolName)
    }

    /// The request's own fields, then the protocol's (which win).
    private func merged(_ headers: Headers, _ fields: [(name: String, value: String)]) -> Headers {
        var result = headers
        for field in fields { result[field.name] = field.value }
        return result
    }
}

/// Counts an append's bytes for progress: reports only bytes beyond the most ever sent, so progress never
/// goes back when an append starts again from the server's (lower) offset.
private final class SentCounter: Sendable {
    private let state: NIOLockedValueBox<(position: Int64, highest: Int64)>

    init(start: Int64, highest: Int64) {
        state = NIOLockedValueBox((start, highest))
    }

    var highest: Int64 { state.withLockedValue { $0.highest } }

    /// Adds `count`; the new bytes and the total when the total passed the highest so far.
    func add(_ count: Int64) -> (Int64, Int64)? {
        state.withLockedValue { state in
            state.position += count
            guard state.position > state.highest else { return nil }
            let delta = state.position - state.highest
            state.highest = state.position
            return (delta, state.highest)
        }
    }
}

/// A buffer as a sequence of 256 KiB slices.
private struct BufferChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let buffer: ByteBuffer

    func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    struct Iterator: AsyncIteratorProtocol {
        var buffer: ByteBuffer
        mutating func next() async throws -> ByteBuffer? {
            guard buffer.readableBytes > 0 else { return nil }
            return buffer.readSlice(length: Swift.min(buffer.readableBytes, 256 * 1024))
        }
    }
}
