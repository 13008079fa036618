public import Foundation

/// An HTTP request: what URLRequest is to URLSession.
///
/// Bodies are given to the task that sends the request (data, a file, or a stream), as with
/// URLSession's upload tasks, so a request is a small value that can be stored and sent to the daemon.
public struct Request: Sendable, Hashable, Codable, CustomReflectable {
    /// How a request may use the HTTP cache (Foundation's `URLRequest.CachePolicy`).
    public enum CachePolicy: String, Sendable, Hashable, Codable, CaseIterable {
        /// Follow the response's cache headers (the default).
        case useProtocolCachePolicy
        /// Always load from the origin, ignoring any cached response.
        case reloadIgnoringLocalCacheData
        /// Use a cached response whatever its age; load only when there is none.
        case returnCacheDataElseLoad
        /// Use a cached response whatever its age; fail when there is none.
        case returnCacheDataDontLoad
    }

    /// The fields, in one copy-on-write box (``CopyOnWrite``): a request is copied many times on its way
    /// through the layers (task, redirects, transport, metrics).
    private var box: CopyOnWrite<Fields>

    private struct Fields: Hashable {
        var url: URL
        var method: String = "GET"
        var headers: Headers = Headers()
        var timeoutInterval: Double = 60
        var cachePolicy: CachePolicy = .useProtocolCachePolicy
        var httpShouldHandleCookies: Bool = true
        var allowsCellularAccess: Bool = true
        var allowsExpensiveNetworkAccess: Bool = true
        var allowsConstrainedNetworkAccess: Bool = true
        var connections: Int = 1
        var minimumSegmentSize: Int64 = 1 << 20
        var expectedDigest: ContentDigest?
        var resumableUpload: Bool = false
        var assumesHTTP3Capable: Bool = false
    }

    /// Printed and dumped as its fields, as before they were boxed.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: box.value).children, displayStyle: .struct)
    }

    /// The URL: http or https for the network (other schemes need a registered protocol handler).
    public var url: URL {
        get { box.value.url }
        _modify { yield &box.value.url }
    }
    /// The method, upper case by convention; default `GET`.
    public var method: String {
        get { box.value.method }
        _modify { yield &box.value.method }
    }
    /// Header fields; the session adds its configuration's additional headers where these lack them.
    public var headers: Headers {
        get { box.value.headers }
        _modify { yield &box.value.headers }
    }
    /// Seconds without any data before the request fails with ``FerryError/Code/timedOut``; default 60.
    public var timeoutInterval: Double {
        get { box.value.timeoutInterval }
        _modify { yield &box.value.timeoutInterval }
    }
    /// How the HTTP cache may be used; default ``CachePolicy/useProtocolCachePolicy``.
    public var cachePolicy: CachePolicy {
        get { box.value.cachePolicy }
        _modify { yield &box.value.cachePolicy }
    }
    /// Whether cookies are sent and stored for this request; default true.
    public var httpShouldHandleCookies: Bool {
        get { box.value.httpShouldHandleCookies }
        _modify { yield &box.value.httpShouldHandleCookies }
    }
    /// May use a metered ("cellular") connection; default true. The stricter of this and the session's wins.
    public var allowsCellularAccess: Bool {
        get { box.value.allowsCellularAccess }
        _modify { yield &box.value.allowsCellularAccess }
    }
    /// May use an expensive connection; default true.
    public var allowsExpensiveNetworkAccess: Bool {
        get { box.value.allowsExpensiveNetworkAccess }
        _modify { yield &box.value.allowsExpensiveNetworkAccess }
    }
    /// May use a constrained (low-data) connection; default true.
    public var allowsConstrainedNetworkAccess: Bool {
        get { box.value.allowsConstrainedNetworkAccess }
        _modify { yield &box.value.allowsConstrainedNetworkAccess }
    }
    /// Connections a download may use for this one resource (segmented download, SPEC S10.2): 1 to
    /// ``maximumConnections``; default 1. With more than one, a download asks for byte ranges over up
    /// to this many connections at once (still capped by the session's httpMaximumConnectionsPerHost),
    /// falling back to one connection when the server does not serve ranges or names no version
    /// (ETag or Last-Modified). Data and upload tasks ignore it.
    public var connections: Int {
        get { box.value.connections }
        _modify { yield &box.value.connections }
    }
    /// The fewest bytes a segment of a segmented download is given (default 1 MiB, at least
    /// ``smallestSegmentSize``): smaller resources use fewer connections.
    public var minimumSegmentSize: Int64 {
        get { box.value.minimumSegmentSize }
        _modify { yield &box.value.minimumSegmentSize }
    }
    /// The digest a download's body must have (SPEC S10.3); checked before success is reported. A
    /// mismatch fails the task with ``FerryError/Code/checksumMismatch`` and keeps the file for
    /// inspection (its path is in the message). Data and upload tasks ignore it.
    public var expectedDigest: ContentDigest? {
        get { box.value.expectedDigest }
        _modify { yield &box.value.expectedDigest }
    }
    /// Send an upload with the IETF resumable-upload protocol when the server supports it (SPEC S4.6,
    /// ``ResumableUploadProtocol``; detected with OPTIONS, else a plain upload): an interrupted upload
    /// continues from the server's offset, by itself after a network error, or later from resume data.
    /// Default false. Download and data tasks ignore it.
    public var resumableUpload: Bool {
        get { box.value.resumableUpload }
        _modify { yield &box.value.resumableUpload }
    }
    /// Try HTTP/3 for this request without waiting for the server to advertise it (URLSession's
    /// `assumesHTTP3Capable`): with the session's ``SessionConfiguration/HTTPVersionPreference/automatic``
    /// preference, an https request races QUIC against TCP as ``SessionConfiguration/HTTPVersionPreference/http3``
    /// does (TCP answers when QUIC cannot). Ignored through a proxy (QUIC does not go through one) and
    /// with `.http1Only`. Default false.
    public var assumesHTTP3Capable: Bool {
        get { box.value.assumesHTTP3Capable }
        _modify { yield &box.value.assumesHTTP3Capable }
    }

    /// The most connections one download may use.
    public static let maximumConnections = 32
    /// The smallest ``minimumSegmentSize`` allowed.
    public static let smallestSegmentSize: Int64 = 1024

    /// A GET request for `url`.
    public init(url: URL) {
        box = CopyOnWrite(Fields(url: url))
    }

    /// Checks what would put bad bytes on the wire: the URL's scheme and host, the method, the headers.
    /// - Throws: ``FerryError`` (``FerryError/Code/badURL``, ``FerryError/Code/unsupportedURL`` or
    ///   ``FerryError/Code/invalidHeader``) saying what to change.
    public func validate() throws {
        try validate(scheme: url.scheme?.asciiLowercased, among: Self.httpSchemes)
    }

    /// The schemes ``validate()`` takes (one array, not one made for every request).
    package static let httpSchemes = ["http", "https"]

    /// ``validate()`` for a URL whose scheme is one of `schemes` (`ws` and `wss` for a WebSocket).
    public func validate(schemes: [String]) throws {
        try validate(scheme: url.scheme?.asciiLowercased, among: schemes)
    }

    /// ``validate(schemes:)`` given the URL's scheme, lower-cased, as the caller found it already.
    package func validate(scheme: String?, among schemes: [String]) throws {
        guard let scheme else {
            throw FerryError(
                .badURL,
                "the URL has no scheme: write it as http://host/path",
                failingURL: url.absoluteString
            )
        }
        guard schemes.contains(scheme) else {
            throw FerryError(
                .unsupportedURL,
                "only \(schemes.joined(separator: " and ")) URLs can be used here, not \(scheme):",
                failingURL: url.absoluteString
            )
        }
        // (As written, without percent-decoding: only whether there is one matters here.)
        guard let host = url.host(percentEncoded: true), !host.isEmpty else {
            throw FerryError(.badURL, "the URL has no host", failingURL: url.absoluteString)
        }
        do {
            try Headers.validate(name: method, value: "")
        } catch {
            throw FerryError(.invalidOperation, "the method \(String(reflecting: method)) is not a valid token")
        }
        try headers.validate()
        guard (1...Self.maximumConnections).contains(connections) else {
            throw FerryError(
                .invalidOperation,
                "a download uses 1 to \(Self.maximumConnections) connections, not \(connections)"
            )
        }
        guard minimumSegmentSize >= Self.smallestSegmentSize else {
            throw FerryError(
                .invalidOperation,
                "the minimum segment size is at least \(Self.smallestSegmentSize) bytes, not \(minimumSegmentSize)"
            )
        }
    }
}

extension Request {
    private enum CodingKeys: String, CodingKey {
        case url, method, headers, timeoutInterval, cachePolicy, httpShouldHandleCookies, allowsCellularAccess
        case allowsExpensiveNetworkAccess, allowsConstrainedNetworkAccess
        case connections, minimumSegmentSize, expectedDigest, resumableUpload, assumesHTTP3Capable
    }

    /// Decodes a request; every field but `url` may be left out and takes its default (scripts talking
    /// to the daemon write `{"url": "..."}`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // A URL in its encoded form only: one that URL(string:) would rewrite (a raw space, ^ or {, which
        // it percent-encodes) is refused, so what was sent is what is fetched, and what is checked.
        let text = try container.decode(String.self, forKey: .url)
        guard let url = URL(string: text), url.absoluteString == text else {
            throw DecodingError.dataCorruptedError(
                forKey: .url,
                in: container,
                debugDescription: "\(String(reflecting: text)) is not a URL in its encoded form (RFC 3986): percent-encode characters such as spaces, ^ or {"
            )
        }
        self.init(url: url)
        method = try container.decodeIfPresent(String.self, forKey: .method) ?? method
        headers = try container.decodeIfPresent(Headers.self, forKey: .headers) ?? headers
        timeoutInterval = try container.decodeIfPresent(Double.self, forKey: .timeoutInterval) ?? timeoutInterval
        cachePolicy = try container.decodeIfPresent(CachePolicy.self, forKey: .cachePolicy) ?? cachePolicy
        httpShouldHandleCookies =
            try container.decodeIfPresent(Bool.self, forKey: .httpShouldHandleCookies) ?? httpShouldHandleCookies
        allowsCellularAccess =
            try container.decodeIfPresent(Bool.self, forKey: .allowsCellularAccess) ?? allowsCellularAccess
        allowsExpensiveNetworkAccess =
            try container.decodeIfPresent(Bool.self, forKey: .allowsExpensiveNetworkAccess)
            ?? allowsExpensiveNetworkAccess
        allowsConstrainedNetworkAccess =
            try container.decodeIfPresent(Bool.self, forKey: .allowsConstrainedNetworkAccess)
            ?? allowsConstrainedNetworkAccess
        connections = try container.decodeIfPresent(Int.self, forKey: .connections) ?? connections
        minimumSegmentSize =
            try container.decodeIfPresent(Int64.self, forKey: .minimumSegmentSize) ?? minimumSegmentSize
        expectedDigest = try container.decodeIfPresent(ContentDigest.self, forKey: .expectedDigest)
        resumableUpload = try container.decodeIfPresent(Bool.self, forKey: .resumableUpload) ?? false
        assumesHTTP3Capable = try container.decodeIfPresent(Bool.self, forKey: .assumesHTTP3Capable) ?? false
    }

    /// Encodes the request, leaving out the download options at their defaults (stored requests stay
    /// readable by a Ferry that predates them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(method, forKey: .method)
        try container.encode(headers, forKey: .headers)
        try container.encode(timeoutInterval, forKey: .timeoutInterval)
        try container.encode(cachePolicy, forKey: .cachePolicy)
        try container.encode(httpShouldHandleCookies, forKey: .httpShouldHandleCookies)
        try container.encode(allowsCellularAccess, forKey: .allowsCellularAccess)
        try container.encode(allowsExpensiveNetworkAccess, forKey: .allowsExpensiveNetworkAccess)
        try container.encode(allowsConstrainedNetworkAccess, forKey: .allowsConstrainedNetworkAccess)
        if connections != 1 { try container.encode(connections, forKey: .connections) }
        if minimumSegmentSize != 1 << 20 { try container.encode(minimumSegmentSize, forKey: .minimumSegmentSize) }
        try container.encodeIfPresent(expectedDigest, forKey: .expectedDigest)
        if resumableUpload { try container.encode(resumableUpload, forKey: .resumableUpload) }
        if assumesHTTP3Capable { try container.encode(assumesHTTP3Capable, forKey: .assumesHTTP3Capable) }
    }
}
