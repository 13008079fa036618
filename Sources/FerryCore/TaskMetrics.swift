public import Foundation

/// What a finished task measured (URLSessionTaskMetrics, SPEC S3).
///
/// A field Ferry cannot measure honestly is nil, never estimated: docs/ARCHITECTURE.md lists which
/// and why.
public struct TaskMetrics: Sendable, Hashable {
    /// When the task was resumed and when it completed.
    public var taskInterval: DateInterval
    /// Redirects followed.
    public var redirectCount: Int
    /// One entry per request sent, in order: redirects and retries each have their own.
    public var transactionMetrics: [TransactionMetrics]

    /// Creates metrics.
    public init(taskInterval: DateInterval, redirectCount: Int, transactionMetrics: [TransactionMetrics]) {
        self.taskInterval = taskInterval
        self.redirectCount = redirectCount
        self.transactionMetrics = transactionMetrics
    }
}

/// One request and its response (URLSessionTaskTransactionMetrics).
public struct TransactionMetrics: Sendable, Hashable {
    /// Where the response came from.
    public enum FetchType: String, Sendable, Hashable {
        /// Fetched over the network.
        case networkLoad
        /// Served from the cache without asking the server.
        case localCache
        /// Served from the cache after the server said it was current (a 304 to a conditional request).
        case revalidated
    }

    /// The request as sent.
    public var request: Request
    /// The response head, nil when none arrived.
    public var response: Response?
    /// When the task began fetching this resource (before waiting for a connection slot).
    public var fetchStartDate: Date?
    /// Name lookup, not reported by the transport: nil.
    public var domainLookupStartDate: Date?
    /// See ``domainLookupStartDate``.
    public var domainLookupEndDate: Date?
    /// When a new connection began to be opened (TCP connect; name lookup included); nil for a reused
    /// connection and for HTTP/2 (AsyncHTTPClient does not report it).
    public var connectStartDate: Date?
    /// See ``connectStartDate``.
    public var connectEndDate: Date?
    /// When the TLS handshake of a new https connection began (after TCP connected); nil for http, a
    /// reused connection, and HTTP/2.
    public var secureConnectionStartDate: Date?
    /// See ``secureConnectionStartDate``.
    public var secureConnectionEndDate: Date?
    /// When the request head had been written to the connection.
    public var requestStartDate: Date?
    /// When the last byte of the request (head and body) had been written.
    public var requestEndDate: Date?
    /// When the response head arrived.
    public var responseStartDate: Date?
    /// When the last byte of the response body arrived (nil if the body was not read to its end).
    public var responseEndDate: Date?
    /// `http/1.1` or `h2`; nil when no response arrived.
    public var networkProtocolName: String?
    /// Whether the connection had carried an earlier exchange; nil for HTTP/2 (not reported there).
    public var isReusedConnection: Bool?
    /// The connection's TLS version (`TLSv1.3`); nil for plain http.
    public var negotiatedTLSProtocolVersion: String?
    /// The address and port connected to (`93.184.216.34:443`, `[::1]:8443`); a proxy's, through one.
    public var remoteAddress: String?
    /// This side's address and port.
    public var localAddress: String?
    /// The proxy the exchange went through (`http://proxy:3128`); nil when direct.
    public var proxy: String?
    /// Network or cache.
    public var resourceFetchType: FetchType
    /// Request body bytes handed to the connection.
    public var countOfRequestBodyBytesSent: Int64
    /// Response body bytes received.
    public var countOfResponseBodyBytesReceived: Int64

    /// Creates metrics for `request`, every date unset.
    public init(request: Request, resourceFetchType: FetchType = .networkLoad) {
        self.request = request
        self.resourceFetchType = resourceFetchType
        self.countOfRequestBodyBytesSent = 0
        self.countOfResponseBodyBytesReceived = 0
    }
}
