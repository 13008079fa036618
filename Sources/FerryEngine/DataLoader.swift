public import FerryCore
public import NIOCore

/// Loads one response into memory (a data task's transfer): sends the request with its body, follows
/// redirects (asking first), and returns the body only when it is complete.
///
/// Like ``Downloader``, it knows nothing of sessions: the same code serves in-process sessions and the
/// daemon.
public struct DataLoader: Sendable {
    /// A loaded response.
    public struct Result: Sendable {
        /// The last request sent (after redirects).
        public var finalRequest: Request
        /// The status.
        public var status: Int
        /// The header fields.
        public var headers: Headers
        /// `http/1.1` or `h2`.
        public var protocolName: String
        /// The body (empty when the caller asked not to collect it).
        public var body: ByteBuffer
        /// The body's length, collected or not.
        public var bodyLength: Int64
        /// Redirects followed.
        public var redirectCount: Int
    }

    /// What to do with a response once its head has arrived (URLSession's response disposition).
    public enum ResponseDisposition: Sendable {
        /// Read the body.
        case allow
        /// Stop: the load fails with ``FerryError/Code/cancelled``.
        case cancel
        /// Write the body to the file at `path` instead, as a download (with a download's checks).
        case becomeDownload(path: String, events: Downloader.Events)
        /// Hand the connection over as a byte stream (``TransportResponse/detach``): HTTP/1.1 only, for a
        /// body still streaming in that is not chunked, or a 101 answer.
        case becomeStream
    }

    /// How a load ended.
    public enum Outcome: Sendable {
        /// The body was read (and collected, if asked).
        case loaded(Result)
        /// The response became a download (``ResponseDisposition/becomeDownload(path:events:)``).
        case downloaded(Downloader.Result)
        /// The response's connection became a byte stream (``ResponseDisposition/becomeStream``); the
        /// result has the head, and no body.
        case stream(ByteStreamConnection, Result)
    }

    /// The caller's say and view along the way.
    public struct Hooks: Sendable {
        /// Each redirect: the request to follow (possibly changed), or nil to stop there. Default: follow.
        public var willRedirect: @Sendable (Int, Headers, Request) async -> Request? = { _, _, proposed in proposed }
        /// A 401's challenge: a credential to send again with, or not. Default: nil, the 401 is the
        /// response.
        public var didReceiveChallenge: (@Sendable (AuthenticationChallenge) async -> ChallengeDisposition)?
        /// The final response head, before its body. Default: ``ResponseDisposition/allow``.
        /// Throwing fails the load with that error.
        public var didReceiveResponse: @Sendable (Int, Headers, Request) async throws -> ResponseDisposition = { _, _, _ in
            .allow
        }
        /// Each body chunk as it arrives; the next is read when this returns (backpressure).
        public var didReceive: @Sendable (ByteBuffer) async -> Void = { _ in }
        /// Whether to keep the body in ``Result/body`` (a delegate that sees every chunk may not need it).
        public var collect = true
        /// Whether a gzip or deflate Content-Encoding is undone before the body is handed on (data tasks,
        /// as URLSession's); the length checked against Content-Length is the bytes as sent.
        public var decodesContent = false
        /// Closed while the task is suspended.
        public var gate: TransferGate?
        /// A new body when the request must be sent again (a 307 or 308 redirect, an answered 401) and
        /// its body is a stream, which may not be readable twice. Returning nil fails the load with
        /// ``FerryError/Code/requestBodyStreamExhausted``; without this hook the body is sent again as it
        /// is (a sequence that starts over, such as a file's, is read again).
        public var newBodyStream: (@Sendable () async -> TransportRequestBody?)?

        /// The defaults: follow redirects, allow, collect.
        public init() {}
    }

    /// The most redirects followed before failing with ``FerryError/Code/httpTooManyRedirects``.
    public var maximumRedirects = 16
    /// The largest body kept; a larger one fails with ``FerryError/Code/dataLengthExceedsMaximum``.
    /// Default: no limit (as URLSession); use a download for large bodies.
    public var maximumBodyLength = Int.max
    /// Whether the first request is checked (``FerryCore/Request/validate(for:)``) before it is sent;
    /// false for a caller that has just checked it (a session task does, before it waits for the
    /// network). Redirects' requests are checked whatever this says.
    package var validatesRequest = true

    private let transport: any HTTPTransport

    /// A loader sending through `transport`.
    public init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Sends `request` and collects the response.
    /// - Parameters:
    ///   - body: the request body, if any (kept across 307 and 308 redirects).
    ///   - deadline: when the whole exchange must be over (the resource timeout).
    ///   - willRedirect: the caller's say on each redirect (default: follow).
    ///   - didReceive: each body chunk as it arrives (for delegates that see data incrementally).
    /// - Throws: ``FerryError``.
    public func load(
        _ request: Request,
        body: TransportRequestBody? = nil,
        deadline: NIODeadline,
        willRedirect: @escaping @Sendable (Int, Headers, Request) async -> Request? = { _, _, proposed in proposed },
        didReceive: @escaping @Sendable (ByteBuffer) -> Void = { _ in }
    ) async throws -> Result {
        var hooks = Hooks()
        hooks.willRedirect = willRedirect
        hooks.didReceive = { didReceive($0) }
        guard case .loaded(let result) = try await perform(request, body: body, deadline: deadline, hooks: hooks)
        else { preconditionFailure("only becomeDownload and becomeStream produce other outcomes") }
        return result
    }

    /// Sends `request` and handles the response as `hooks` say: read (and collect), cancel, or write it
    /// to a file as a download.
    /// - Throws: ``FerryError``.
    public func perform(
        _ request: Request,
        body: TransportRequestBody? = nil,
        deadline: NIODeadline,
        hooks: Hooks
    ) async throws -> Outcome {
        let outcome = try await open(
            request,
            body: body,
            deadline: deadline,
            willRedirect: hooks.willRedirect,
            didReceiveChallenge: hooks.didReceiveChallenge,
            newBodyStream: hooks.newBodyStream
        )
        let response = outcome.response
        switch try await hooks.didReceiveResponse(response.status, response.headers, outcome.request) {
        case .allow:
            break
        case .cancel:
            throw FerryError(
                .cancelled,
                "the response was refused when it arrived (disposition cancel)",
                failingURL: outcome.request.url.absoluteString
            )
        case .becomeDownload(let path, let events):
            let result = try await Downloader(transport: transport).continueAsDownload(
                response: response,
                request: outcome.request,
                originalRequest: request,
                redirects: outcome.redirects,
                to: path,
                deadline: deadline,
                events: events
            )
            return .downloaded(result)
        case .becomeStream:
            guard let detach = response.detach else {
                throw FerryError(
                    .invalidOperation,
                    "a response over \(response.protocolName) cannot become a stream: only an HTTP/1.1 connection of Ferry's transport can be handed over",
                    failingURL: outcome.request.url.absoluteString
                )
            }
            let connection: ByteStreamConnection
            do {
                connection = try await detach()
            } catch var error as FerryError {
                error.failingURL = error.failingURL ?? outcome.request.url.absoluteString
                throw error
            }
            let head = Result(
                finalRequest: outcome.request,
                status: response.status,
                headers: response.headers,
                protocolName: response.protocolName,
                body: ByteBuffer(),
                bodyLength: 0,
                redirectCount: outcome.redirects
            )
            return .stream(connection, head)
        }
        let limit = maximumBodyLength
        let url = outcome.request.url.absoluteString
        // A transfer cancelled on its own ends the exchange, which ends the body's reading.
        let endExchange = response.cancel ?? {}
        // A HEAD's answer, a 204 and a 304 have no body whatever their Content-Length says (RFC 9110
        // 6.4.1): the length describes the resource, not bytes to come.
        let bodiless = Headers.sameName(outcome.request.method, "HEAD") || response.status == 204 || response.status == 304
        let (collected, length) = try await DeadlineRace.run(until: deadline, url: url, over: transport) {
            try await TransferContext.withCancellationHandler {
                try await Self.read(response, hooks: hooks, limit: limit, url: url, bodiless: bodiless)
            } onCancel: {
                endExchange()
            }
        }
        // A connection that switched protocols and was not taken as a stream is closed now.
        if response.status == 101 { endExchange() }
        return .loaded(
            Result(
                finalRequest: outcome.request,
                status: response.status,
                headers: response.headers,
                protocolName: response.protocolName,
                body: collected,
                bodyLength: Int64(length),
                redirectCount: outcome.redirects
            )
        )
    }

    /// Reads (and collects, if asked) the body of `response`; returns it and its length as sent.
    private static func read(
        _ response: TransportResponse,
        hooks: Hooks,
        limit: Int,
        url: String,
        bodiless: Bool
    ) async throws -> (ByteBuffer, Int) {
        let declared = bodiless ? nil : response.headers.contentLength.map { Int(clamping: $0) }
        if let declared, declared > limit {
            throw FerryError(
                .dataLengthExceedsMaximum,
                "the body is \(declared) bytes, more than the \(limit) allowed",
                failingURL: url
            )
        }
        // A body that was whole before it was read is kept as it is (no copy); others are gathered.
        let whole = response.body.completeBody
        var collected =
            whole != nil ? ByteBuffer() : ByteBufferAllocator().buffer(capacity: hooks.collect ? min(declared ?? 0, 16 << 20) : 0)
        // Content-Length counts the bytes as sent; the limit, what is kept.
        var length = 0
        var kept = 0
        let decoder = hooks.decodesContent ? ContentDecoder(headers: response.headers) : nil
        for try await sent in response.body {
            if let gate = hooks.gate, !gate.isOpen { try await gate.passThrough() }
            length += sent.readableBytes
            // Decoded a piece at a time (ContentDecoder.pieceSize): memory follows what is kept, not
            // what one read inflates to.
            decoder?.feed(sent)
            var plain: ByteBuffer? = decoder == nil ? sent : nil
            while let chunk = try plain ?? decoder?.next() {
                plain = nil
                guard kept + chunk.readableBytes <= limit else {
                    throw FerryError(
                        .dataLengthExceedsMaximum,
                        "the body is larger than the \(limit) bytes allowed",
                        failingURL: url
                    )
                }
                kept += chunk.readableBytes
                guard chunk.readableBytes > 0 else { break }
                await hooks.didReceive(chunk)
                if hooks.collect {
                    if whole != nil, collected.readableBytes == 0 {
                        collected = chunk
                    } else {
                        var chunk = chunk
                        collected.writeBuffer(&chunk)
                    }
                }
            }
        }
        if let declared, length != declared {
            throw FerryError(
                .networkConnectionLost,
                "the server announced \(declared) bytes but sent \(length)",
                failingURL: url
            )
        }
        do {
            try decoder?.finish()
        } catch var error as FerryError {
            error.failingURL = url
            throw error
        }
        return (collected, kept)
    }

    /// Sends `request`, follows redirects, and returns the final response with its body unread (for
    /// callers that stream the body themselves, such as `bytes(for:)`).
    /// - Throws: ``FerryError``.
    public func open(
        _ request: Request,
        body: TransportRequestBody? = nil,
        deadline: NIODeadline,
        willRedirect: @escaping @Sendable (Int, Headers, Request) async -> Request? = { _, _, proposed in proposed },
        didReceiveChallenge: (@Sendable (AuthenticationChallenge) async -> ChallengeDisposition)? = nil,
        newBodyStream: (@Sendable () async -> TransportRequestBody?)? = nil
    ) async throws -> (request: Request, redirects: Int, response: TransportResponse) {
        if validatesRequest { try request.validate(for: transport) }
        let outcome = try await RedirectFollower(transport: transport, maximumRedirects: maximumRedirects).send(
            request,
            body: body,
            extraHeaders: [],
            deadline: deadline,
            willRedirect: willRedirect,
            didReceiveChallenge: didReceiveChallenge,
            newBodyStream: newBodyStream
        )
        return (outcome.request, outcome.redirects, outcome.response)
    }
}
