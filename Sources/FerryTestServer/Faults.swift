public import HTTPTypes

/// The fault-injection and response-shaping knobs of one request.
///
/// Each knob can be given as a query parameter (`?throttle=1000`) or as a request header named
/// `X-Ferry-` plus the knob with `-` for `_` (`X-Ferry-Throttle: 1000`); the query wins when both are
/// present. docs/TESTSERVER.md lists them with examples.
public struct Faults: Sendable, Hashable {
    /// `throttle=B`: send the body at no more than B bytes a second.
    public var throttle: Int64?
    /// `read_throttle=B`: read the request body at no more than B bytes a second (TCP then holds the
    /// client back, as a slow link or a slow server would).
    public var readThrottle: Int64?
    /// `close_after=N`: close the connection after N body bytes (the response stays incomplete).
    public var closeAfter: Int64?
    /// `reset_after=N`: over HTTP/2, reset the stream (RST_STREAM) after N body bytes, leaving the
    /// connection and its other streams alone; over HTTP/1.1 the same as `close_after`.
    public var resetAfter: Int64?
    /// `goaway=1`: over HTTP/2, once this response is complete, send GOAWAY naming this stream as the
    /// last one processed: the client's later streams on the connection are refused (RFC 9113 §6.8) and
    /// must go again on a new connection. Ignored over HTTP/1.1.
    public var goAway = false
    /// `stall_ms=T`: send nothing for T milliseconds, after the headers or after `stall_after` body bytes.
    public var stallMilliseconds: Int64?
    /// `stall_after=N`: where a stall begins, in body bytes (default 0: right after the headers).
    public var stallAfter: Int64 = 0
    /// `gate=G`: hold the body at `stall_after` bytes until ``TestServer/openGate(_:)`` opens the gate
    /// named G (at once if it is open already). Unlike `stall_ms` it does not depend on the clock: a test
    /// can act on a transfer known to be in progress, however slow the machine.
    public var gate: String?
    /// `head_gate=G`: hold the response headers until the gate named G opens (as `gate` holds the body):
    /// the request is received, and nothing of its answer is sent.
    public var headGate: String?
    /// `early_hints=N`: send N informational `103 Early Hints` answers (each with
    /// `Link: </hint-K.css>; rel=preload`, K = 1…N) before the response headers (at most 1,000).
    public var earlyHints: Int = 0
    /// `delay_ms=T`: wait T milliseconds before sending the response headers.
    public var delayMilliseconds: Int64?
    /// `fail=K`: the first K requests with this request's key get `fail_status` with `Retry-After`.
    public var failCount: Int = 0
    /// `fail_after=N`: the requests with this request's key after the first N get `fail_status` (a server
    /// that worked, then broke: what a cache's stale-if-error is for).
    public var failAfter: Int?
    /// `fail_status=S`: the status of those failures (default 503).
    public var failStatus: Int = 503
    /// `retry_after=S`: the Retry-After seconds sent with them (default 1; a negative value sends none).
    public var retryAfter: Int = 1
    /// `change_after=N`: the resource gets a new version (new content, ETag and Last-Modified) every N
    /// requests with this key: requests 1…N see version 0, N+1…2N version 1, and so on.
    public var changeAfter: Int?
    /// `key=K`: the name under which `fail` and `change_after` count requests (default: the request target).
    public var key: String?
    /// `only_first=K`: the body faults (throttle, close_after, stall, delay, ignore_range,
    /// bad_content_range, short_by) apply to the first K requests with this key only; later ones are
    /// served cleanly, as a recovered server would.
    public var onlyFirst: Int?
    /// `ignore_range=1`: answer 200 with the whole body whatever the Range header says.
    public var ignoreRange = false
    /// `bad_content_range=D`: answer a range request with the requested bytes but a Content-Range whose
    /// first and last byte are shifted by D.
    public var badContentRangeShift: Int64?
    /// `short_by=N`: declare the full Content-Length, send N bytes fewer, then close the connection.
    public var shortBy: Int64?
    /// `chunked=1`: no Content-Length; HTTP/1.1 chunked transfer encoding (HTTP/2: plain DATA frames).
    public var chunked = false
    /// `gzip=1`: `Content-Encoding: gzip` with the whole body compressed (Range is then ignored).
    public var gzip = false
    /// `set_cookie=V` (repeatable): a `Set-Cookie: V` header per value.
    public var setCookies: [String] = []
    /// `cache_control=V`: a `Cache-Control: V` header.
    public var cacheControl: String?
    /// `expires=S`: an `Expires` header S seconds from now (may be negative).
    public var expiresIn: Int64?
    /// `vary=V`: a `Vary: V` header.
    public var vary: String?
    /// `disposition=V`: a `Content-Disposition: V` header (`attachment; filename="report.pdf"`).
    public var contentDisposition: String?
    /// `header=NAME:VALUE` (repeatable): a response field as given, added after the others (a second
    /// `Expires`, an `Age` list, `Connection: x-named`): for what a client must do with fields no route sets.
    public var extraHeaders: [String] = []

    /// The longest stall or delay, and the furthest `expires`: a day and ten years (larger values would
    /// overflow time arithmetic; no test needs them).
    static let longestWaitMilliseconds: Int64 = 86_400_000
    static let furthestExpiry: Int64 = 10 * 366 * 86_400
    /// The largest `bad_content_range` shift (2^40), for the same reason.
    static let largestShift: Int64 = 1 << 40

    /// No faults.
    public init() {}

    /// Reads the knobs of a request from its query and headers.
    public init(query: Query, headers: HTTPFields) {
        func value(_ name: String) -> String? {
            if let fromQuery = query[name] { return fromQuery }
            let headerName = "x-ferry-" + name.replacingUnderscores
            return HTTPField.Name(headerName).flatMap { headers[$0] }
        }
        func values(_ name: String) -> [String] {
            let fromQuery = query.all(name)
            if !fromQuery.isEmpty { return fromQuery }
            guard let headerName = HTTPField.Name("x-ferry-" + name.replacingUnderscores) else { return [] }
            return headers[values: headerName]
        }
        func flag(_ name: String) -> Bool {
            guard let text = value(name) else { return false }
            return text.isEmpty || text == "1" || text == "true" || text == "yes"
        }
        self.throttle = value("throttle").flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
        self.readThrottle = value("read_throttle").flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
        self.closeAfter = value("close_after").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
        self.resetAfter = value("reset_after").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
        self.goAway = flag("goaway")
        self.stallMilliseconds = value("stall_ms").flatMap { Int64($0) }.flatMap {
            $0 > 0 ? min($0, Self.longestWaitMilliseconds) : nil
        }
        self.stallAfter = value("stall_after").flatMap { Int64($0) }.map { max(0, $0) } ?? 0
        self.gate = value("gate").flatMap { $0.isEmpty ? nil : $0 }
        self.headGate = value("head_gate").flatMap { $0.isEmpty ? nil : $0 }
        self.earlyHints = value("early_hints").flatMap { Int($0) }.map { max(0, min($0, 1_000)) } ?? 0
        self.delayMilliseconds = value("delay_ms").flatMap { Int64($0) }.flatMap {
            $0 > 0 ? min($0, Self.longestWaitMilliseconds) : nil
        }
        self.failCount = value("fail").flatMap { Int($0) }.map { max(0, $0) } ?? 0
        self.failStatus =
            value("fail_status").flatMap { Int($0) }.flatMap { (100...599).contains($0) ? $0 : nil } ?? 503
        self.retryAfter = value("retry_after").flatMap { Int($0) } ?? 1
        self.changeAfter = value("change_after").flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        self.key = value("key")
        self.onlyFirst = value("only_first").flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
        self.ignoreRange = flag("ignore_range")
        self.badContentRangeShift = value("bad_content_range").flatMap { Int64($0) }.flatMap {
            $0 != 0 ? max(-Self.largestShift, min($0, Self.largestShift)) : nil
        }
        self.shortBy = value("short_by").flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
        self.chunked = flag("chunked")
        self.gzip = flag("gzip")
        self.setCookies = values("set_cookie")
        self.cacheControl = value("cache_control")
        self.expiresIn = value("expires").flatMap { Int64($0) }.map {
            max(-Self.furthestExpiry, min($0, Self.furthestExpiry))
        }
        self.vary = value("vary")
        self.contentDisposition = value("disposition")
        self.failAfter = value("fail_after").flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
        self.extraHeaders = values("header").filter { ($0.firstIndex(of: ":") ?? $0.startIndex) > $0.startIndex }
    }
}

extension Faults {
    /// The name under which `fail`, `change_after` and `only_first` count a request: `key=`, else the
    /// request target.
    func counterKey(target: String?) -> String { key ?? (target ?? "/") }

    /// These faults without the ones that shape the body: what `only_first` leaves once its count is used.
    var withoutBodyFaults: Faults {
        var clean = self
        clean.throttle = nil
        clean.readThrottle = nil
        clean.closeAfter = nil
        clean.resetAfter = nil
        clean.stallMilliseconds = nil
        clean.stallAfter = 0
        clean.gate = nil
        clean.headGate = nil
        clean.delayMilliseconds = nil
        clean.ignoreRange = false
        clean.badContentRangeShift = nil
        clean.shortBy = nil
        return clean
    }
}

extension String {
    fileprivate var replacingUnderscores: String {
        String(self.map { $0 == "_" ? "-" : $0 })
    }
}
