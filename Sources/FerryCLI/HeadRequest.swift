import FerryCore
import FerryEngine
import Foundation
import NIOCore

/// `ferry get -I URL`: a HEAD request whose response heads — the redirects', then the answer's — go to
/// stdout as curl writes them (`curl -sIL`). No file is written.
struct HeadRequest {
    let url: URL
    let headers: Headers
    let transport: any HTTPTransport
    var deadline = NIODeadline.distantFuture
    var maximumRedirects: Int?

    /// Sends the request, prints the heads, and returns the final status.
    /// - Throws: ``CLIFailure`` for a transfer that failed; an HTTP error status is printed, then
    ///   fails (exit 1), as every ferry transfer does.
    func run() async throws -> Int {
        var request = Request(url: url)
        request.method = "HEAD"
        for field in headers { request.headers.add(name: field.name, value: field.value) }
        var loader = DataLoader(transport: transport)
        if let maximumRedirects { loader.maximumRedirects = maximumRedirects }
        let context = TransferContext()
        let loaded: DataLoader.Result
        do {
            loaded = try await TransferContext.$current.withValue(context) {
                try await loader.load(request, deadline: deadline)
            }
        } catch let error as FerryError {
            throw CLIFailure(error, context: url.absoluteString)
        }
        Console.out(HeaderDumpTransport.render(context.recordedTransactions))
        guard loaded.status < 400 else {
            throw CLIFailure(
                "\(url.absoluteString): the server answered \(loaded.status)",
                status: .transferFailed,
                httpStatus: loaded.status
            )
        }
        return loaded.status
    }
}
