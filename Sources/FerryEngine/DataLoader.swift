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
        /// The body.
        public var body: ByteBuffer
        /// Redirects followed.
        public var redirectCount: Int
    }

    /// The most redirects followed before failing with ``FerryError/Code/httpTooManyRedirects``.
    public var maximumRedirects = 16
    /// The largest body kept; a larger one fails with ``FerryError/Code/dataLengthExceedsMaximum``.
    /// Default: no limit (as URLSession); use a download for large bodies.
    public var maximumBodyLength = Int.max

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
        try request.validate()
        let outcome = try await RedirectFollower(transport: transport, maximumRedirects: maximumRedirects).send(
            request,
            body: body,
            extraHeaders: [],
            deadline: deadline,
            willRedirect: willRedirect
        )
        let limit = maximumBodyLength
        let response = outcome.response
        let url = outcome.request.url.absoluteString
        let collected = try await DeadlineRace.run(until: deadline, url: url) {
            let declared = response.headers.contentLength.map { Int(clamping: $0) }
            if let declared, declared > limit {
                throw FerryError(
                    .dataLengthExceedsMaximum,
                    "the body is \(declared) bytes, more than the \(limit) allowed",
                    failingURL: url
                )
            }
            var collected = ByteBufferAllocator().buffer(capacity: min(declared ?? 0, 16 << 20))
            for try await chunk in response.body {
                guard collected.readableBytes + chunk.readableBytes <= limit else {
                    throw FerryError(
                        .dataLengthExceedsMaximum,
                        "the body is larger than the \(limit) bytes allowed",
                        failingURL: url
                    )
                }
                var chunk = chunk
                didReceive(chunk)
                collected.writeBuffer(&chunk)
            }
            if let declared, collected.readableBytes != declared {
                throw FerryError(
                    .networkConnectionLost,
                    "the server announced \(declared) bytes but sent \(collected.readableBytes)",
                    failingURL: url
                )
            }
            return collected
        }
        return Result(
            finalRequest: outcome.request,
            status: response.status,
            headers: response.headers,
            protocolName: response.protocolName,
            body: collected,
            redirectCount: outcome.redirects
        )
    }
}
