import FerryCore
import FerryEngine
import Foundation
import NIOCore
import Synchronization

/// One `ferry put` upload in this process: a file as the body, or a multipart form (`--form`), with
/// progress and an optional rate limit. The response body goes to stdout (as curl prints it).
struct ForegroundUpload {
    /// The body.
    enum Source {
        /// A file's bytes.
        case file(String)
        /// `name=value` and `name=@path` fields.
        case form([String])
        /// Standard input (`ferry put - URL`): chunked from a pipe, with its length from a file.
        case standardInput
    }

    /// What an upload reports (`--json`).
    struct Report: Codable {
        var url: String
        var method: String
        var status: Int
        var bytesSent: Int64
        var seconds: Double
        var response: String?
    }

    let url: URL
    let method: String
    let headers: Headers
    let source: Source
    let mode: Mode
    let limit: Int64?
    let quiet: Bool
    let transport: any HTTPTransport
    /// When the upload must be over (`--max-time`).
    var deadline = NIODeadline.distantFuture

    /// How a file is sent.
    enum Mode {
        /// One request.
        case plain
        /// The resumable-upload protocol when the server speaks it (else one request).
        case resumable
        /// tus chunks, this many at once.
        case chunks(Int)
    }

    func run() async throws -> (Report, ByteBuffer) {
        // --limit-rate: the engine's throttle pays for every request body chunk, whichever way the
        // file goes (one request, resumable, tus chunks).
        let context = TransferContext(throttle: limit.map { TaskThrottle(bytesPerSecond: $0, pool: nil, weight: 0.5) })
        return try await TransferContext.$current.withValue(context) { try await send() }
    }

    private func send() async throws -> (Report, ByteBuffer) {
        var request = Request(url: url)
        request.method = method
        for field in headers { request.headers.add(name: field.name, value: field.value) }
        let raw: TransportRequestBody
        let name: String
        do {
            switch source {
            case .file(let path):
                raw = try TransportRequestBody.file(path: CLI.absolute(path))
                name = (path as NSString).lastPathComponent
            case .standardInput:
                raw = .stream(length: StandardInputChunks.knownLength, TransportBodyStream(StandardInputChunks()))
                name = "stdin"
            case .form(let fields):
                var form = MultipartFormData()
                for field in fields { try form.append(Self.field(field)) }
                raw = form.makeBody()
                name = "form"
                if !request.headers.contains("content-type") {
                    request.headers.add(name: "Content-Type", value: form.contentType)
                }
            }
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
        guard case .stream(let length, let stream) = raw else { preconditionFailure("file and form bodies stream") }

        let display = ProgressDisplay(name: name, quiet: quiet)
        let sent = Mutex<Int64>(0)
        let counted = stream.map { @Sendable (chunk: ByteBuffer) async -> ByteBuffer in
            let delta = Int64(chunk.readableBytes)
            let total = sent.withLock { total in
                total += delta
                return total
            }
            display.update(done: total, total: length)
            return chunk
        }
        let started = ProgressDisplay.now()
        if case .file(let path) = source, let length,
            let loaded = try await sendFile(request, path: CLI.absolute(path), length: length, display: display)
        {
            display.finish()
            let report = Report(
                url: url.absoluteString,
                method: method,
                status: loaded.status,
                bytesSent: length,
                seconds: ProgressDisplay.now() - started,
                response: String(validating: loaded.body.readableBytesView, as: UTF8.self)
            )
            return (report, loaded.body)
        }
        let loader = DataLoader(transport: transport)
        let outcome: DataLoader.Outcome
        do {
            outcome = try await loader.perform(
                request,
                body: .stream(length: length, TransportBodyStream(counted)),
                deadline: deadline,
                hooks: DataLoader.Hooks()
            )
        } catch let error as FerryError {
            display.finish()
            throw CLIFailure(error, context: url.absoluteString)
        }
        display.finish()
        guard case .loaded(let loaded) = outcome else { preconditionFailure("no download disposition was asked for") }
        let report = Report(
            url: url.absoluteString,
            method: method,
            status: loaded.status,
            bytesSent: sent.withLock { $0 },
            seconds: ProgressDisplay.now() - started,
            response: String(validating: loaded.body.readableBytesView, as: UTF8.self)
        )
        return (report, loaded.body)
    }

    /// A file sent resumably or in chunks (``mode``); nil for a plain upload (or a server without the
    /// resumable protocol, where nothing was sent yet).
    private func sendFile(
        _ request: Request,
        path: String,
        length: Int64,
        display: ProgressDisplay
    ) async throws -> DataLoader.Result? {
        do {
            switch mode {
            case .plain:
                return nil
            case .resumable:
                var events = ResumableUploader.Events()
                events.didSend = { _, total, expected in display.update(done: total, total: expected) }
                let outcome = try await ResumableUploader(transport: transport).upload(
                    request,
                    body: .file(path: path, length: length),
                    resumingFrom: nil,
                    filePath: path,
                    deadline: deadline,
                    events: events
                )
                guard case .finished(let result) = outcome else { return nil }
                return result
            case .chunks(let count):
                var options = ChunkPlanner.Options()
                options.maximumChunksInFlight = count
                let report = try await ParallelChunkedUploader(transport: transport, options: options).upload(
                    request,
                    file: path,
                    deadline: deadline
                ) { _, total in display.update(done: total, total: length) }
                return report.result
            }
        } catch let error as FerryError {
            display.finish()
            throw CLIFailure(error, context: url.absoluteString)
        }
    }

    /// A `--form` field in curl's syntax, its file path made absolute.
    static func field(_ text: String) throws -> FormField {
        do {
            var field = try FormField(curlSyntax: text)
            field.file = field.file.map(CLI.absolute)
            return field
        } catch let error as FerryError {
            throw CLIFailure("--form: \(error.message)", status: .usage)
        }
    }
}
