import FerryEngine
public import Foundation

extension Session {
    /// Uploads a file in chunks sent in parallel (SPEC S4.2–S4.5), to a server that speaks tus 1.0 with
    /// its concatenation extension: `request.url` is the tus endpoint (its headers go with every request).
    /// A fixed-size probe chunk first, then chunk sizes from the measured throughput (within the bounds of
    /// `options`), at most `options.maximumChunksInFlight` at once (and never more connections than the
    /// session's httpMaximumConnectionsPerHost); failed chunks are sent again after the others.
    ///
    /// In-process sessions only. Docs: docs/UPLOADS.md.
    /// - Returns: the body and response of the final (concatenation) request.
    /// - Throws: `FerryError`; `FerryError/Code/badServerResponse` when the server does not offer tus
    ///   concatenation.
    public func uploadInParallelChunks(
        for request: Request,
        fromFile fileURL: URL,
        options: ChunkPlanner.Options = ChunkPlanner.Options()
    ) async throws -> (Data, Response) {
        guard background == nil else {
            throw FerryError(
                .invalidOperation,
                "parallel chunked uploads run in-process; a background session sends a file as one upload"
            )
        }
        try checkUsable()
        let prepared = configuration.applyingAdditionalHeaders(to: request)
        let report = try await ParallelChunkedUploader(transport: transport, options: options).upload(
            prepared,
            file: fileURL.path,
            deadline: resourceDeadline()
        )
        let result = report.result
        return (
            Data(result.body.readableBytesView),
            Response(url: result.finalRequest.url, statusCode: result.status, headers: result.headers)
        )
    }
}
