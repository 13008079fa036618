import HTTPTypes
import NIOCore

/// Where a response body's bytes come from.
enum BodySource {
    /// Bytes in memory.
    case buffer(ByteBuffer)
    /// The deterministic stream of `/bytes`.
    case generated(DeterministicBytes)
    /// A regular file, read in chunks off the event loop.
    case file(FileBody)
}

/// A response decided by a route, before any byte is written: status, headers, which bytes of which
/// source, and the faults to apply while sending it. ``ResponseWriter`` carries it out.
struct ResponsePlan {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var source: BodySource
    /// The bytes of `source` to send (for a buffer: offsets into it).
    var range: ByteRange
    /// Whether a Content-Length is declared (false: chunked in HTTP/1.1).
    var declaresLength: Bool
    /// HEAD and 304: headers only.
    var omitsBody: Bool
    var faults: Faults

    /// A response whose body is `buffer` (possibly empty).
    init(status: HTTPResponse.Status, headers: HTTPFields = [:], buffer: ByteBuffer, faults: Faults = Faults()) {
        self.status = status
        self.headers = headers
        self.source = .buffer(buffer)
        self.range = ByteRange(start: 0, end: Int64(buffer.readableBytes))
        self.declaresLength = true
        self.omitsBody = false
        self.faults = faults
    }

    init(
        status: HTTPResponse.Status,
        headers: HTTPFields,
        source: BodySource,
        range: ByteRange,
        declaresLength: Bool,
        omitsBody: Bool,
        faults: Faults
    ) {
        self.status = status
        self.headers = headers
        self.source = source
        self.range = range
        self.declaresLength = declaresLength
        self.omitsBody = omitsBody
        self.faults = faults
    }

    /// A short plain-text response.
    static func text(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = [:]) -> ResponsePlan {
        var headers = headers
        headers[.contentType] = "text/plain; charset=utf-8"
        return ResponsePlan(status: status, headers: headers, buffer: ByteBuffer(string: text))
    }
}
