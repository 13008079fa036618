public import Foundation

/// An HTTP request: what URLRequest is to URLSession.
///
/// Bodies are given to the task that sends the request (data, a file, or a stream), as with
/// URLSession's upload tasks, so a request is a small value that can be stored and sent to the daemon.
public struct Request: Sendable, Hashable, Codable {
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

    /// The URL: http or https for the network (other schemes need a registered protocol handler).
    public var url: URL
    /// The method, upper case by convention; default `GET`.
    public var method: String = "GET"
    /// Header fields; the session adds its configuration's additional headers where these lack them.
    public var headers = Headers()
    /// Seconds without any data before the request fails with ``FerryError/Code/timedOut``; default 60.
    public var timeoutInterval: Double = 60
    /// How the HTTP cache may be used; default ``CachePolicy/useProtocolCachePolicy``.
    public var cachePolicy: CachePolicy = .useProtocolCachePolicy
    /// Whether cookies are sent and stored for this request; default true.
    public var httpShouldHandleCookies = true
    /// May use a metered ("cellular") connection; default true. The stricter of this and the session's wins.
    public var allowsCellularAccess = true
    /// May use an expensive connection; default true.
    public var allowsExpensiveNetworkAccess = true
    /// May use a constrained (low-data) connection; default true.
    public var allowsConstrainedNetworkAccess = true

    /// A GET request for `url`.
    public init(url: URL) {
        self.url = url
    }

    /// Checks what would put bad bytes on the wire: the URL's scheme and host, the method, the headers.
    /// - Throws: ``FerryError`` (``FerryError/Code/badURL``, ``FerryError/Code/unsupportedURL`` or
    ///   ``FerryError/Code/invalidHeader``) saying what to change.
    public func validate() throws {
        guard let scheme = url.scheme?.lowercased() else {
            throw FerryError(
                .badURL,
                "the URL has no scheme: write it as http://host/path",
                failingURL: url.absoluteString
            )
        }
        guard scheme == "http" || scheme == "https" else {
            throw FerryError(
                .unsupportedURL,
                "only http and https URLs can be fetched, not \(scheme):",
                failingURL: url.absoluteString
            )
        }
        guard let host = url.host, !host.isEmpty else {
            throw FerryError(.badURL, "the URL has no host", failingURL: url.absoluteString)
        }
        do {
            try Headers.validate(name: method, value: "")
        } catch {
            throw FerryError(.invalidOperation, "the method \(String(reflecting: method)) is not a valid token")
        }
        try headers.validate()
    }
}

extension Request {
    private enum CodingKeys: String, CodingKey {
        case url, method, headers, timeoutInterval, cachePolicy, httpShouldHandleCookies, allowsCellularAccess
        case allowsExpensiveNetworkAccess, allowsConstrainedNetworkAccess
    }

    /// Decodes a request; every field but `url` may be left out and takes its default (scripts talking
    /// to the daemon write `{"url": "..."}`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(url: try container.decode(URL.self, forKey: .url))
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
    }
}
