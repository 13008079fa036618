import Ferry
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What a task's transfer took (Apple's `URLSessionTaskMetrics`), from Ferry's `TaskMetrics`.
open class URLSessionTaskMetrics: NSObject, @unchecked Sendable {
    /// One entry per request sent: the first, each redirect's, each answer from the cache.
    public let transactionMetrics: [URLSessionTaskTransactionMetrics]
    /// From the task's creation to its last byte.
    public let taskInterval: DateInterval
    /// Redirects followed.
    public let redirectCount: Int

    /// How a response was obtained.
    public enum ResourceFetchType: Int, Sendable {
        case unknown = 0
        case networkLoad = 1
        case serverPush = 2
        case localCache = 3
    }

    /// How the host's name was resolved. Ferry asks the system's resolver, which does not say, so a
    /// transaction reads `.unknown`.
    public enum DomainResolutionProtocol: Int, Sendable {
        case unknown = 0
        case udp = 1
        case tcp = 2
        case tls = 3
        case https = 4
    }

    init(_ metrics: TaskMetrics) {
        transactionMetrics = metrics.transactionMetrics.map(URLSessionTaskTransactionMetrics.init)
        taskInterval = metrics.taskInterval
        redirectCount = metrics.redirectCount
    }
}

/// One request's timing and connection (Apple's `URLSessionTaskTransactionMetrics`).
///
/// What Ferry does not measure reads as Apple's "unknown": header byte counts 0, the cipher suite nil,
/// `domainResolutionProtocol` `.unknown`; `isCellular`, `isExpensive`, `isConstrained` and `isMultipath`
/// are false (docs/FOUNDATION_NETWORKING.md).
open class URLSessionTaskTransactionMetrics: NSObject, @unchecked Sendable {
    public let request: URLRequest
    public let response: URLResponse?
    public let fetchStartDate: Date?
    public let domainLookupStartDate: Date?
    public let domainLookupEndDate: Date?
    public let connectStartDate: Date?
    public let secureConnectionStartDate: Date?
    public let secureConnectionEndDate: Date?
    public let connectEndDate: Date?
    public let requestStartDate: Date?
    public let requestEndDate: Date?
    public let responseStartDate: Date?
    public let responseEndDate: Date?
    /// `http/1.1`, `h2` (ALPN names).
    public let networkProtocolName: String?
    public let isProxyConnection: Bool
    public let isReusedConnection: Bool
    public let resourceFetchType: URLSessionTaskMetrics.ResourceFetchType
    public let countOfRequestBodyBytesSent: Int64
    /// The same as ``countOfRequestBodyBytesSent``: Ferry does not encode request bodies.
    public var countOfRequestBodyBytesBeforeEncoding: Int64 { countOfRequestBodyBytesSent }
    /// Not measured by Ferry: 0.
    public let countOfRequestHeaderBytesSent: Int64 = 0
    public let countOfResponseBodyBytesReceived: Int64
    /// The body bytes received (Ferry does not count the decoded size apart).
    public var countOfResponseBodyBytesAfterDecoding: Int64 { countOfResponseBodyBytesReceived }
    /// Not measured by Ferry: 0.
    public let countOfResponseHeaderBytesReceived: Int64 = 0
    /// The remote IP address.
    public let remoteAddress: String?
    /// The remote port.
    public let remotePort: Int?
    /// The local IP address.
    public let localAddress: String?
    /// The local port.
    public let localPort: Int?
    /// The TLS version, for https.
    public let negotiatedTLSProtocolVersion: tls_protocol_version_t?
    /// Not recorded by Ferry: nil.
    public let negotiatedTLSCipherSuite: tls_ciphersuite_t? = nil
    /// Linux has no cellular interfaces Ferry tells apart: false.
    public let isCellular = false
    /// Whether the network was metered: not told per transaction; false.
    public let isExpensive = false
    /// Whether the network was in low-data mode: false.
    public let isConstrained = false
    /// Ferry does not use Multipath TCP: false.
    public let isMultipath = false
    /// See ``URLSessionTaskMetrics/DomainResolutionProtocol``: `.unknown`.
    public let domainResolutionProtocol = URLSessionTaskMetrics.DomainResolutionProtocol.unknown

    init(_ metrics: TransactionMetrics) {
        request = FoundationBridge.urlRequest(metrics.request)
        response = metrics.response.map { FoundationBridge.response($0) }
        fetchStartDate = metrics.fetchStartDate
        domainLookupStartDate = metrics.domainLookupStartDate
        domainLookupEndDate = metrics.domainLookupEndDate
        connectStartDate = metrics.connectStartDate
        secureConnectionStartDate = metrics.secureConnectionStartDate
        secureConnectionEndDate = metrics.secureConnectionEndDate
        connectEndDate = metrics.connectEndDate
        requestStartDate = metrics.requestStartDate
        requestEndDate = metrics.requestEndDate
        responseStartDate = metrics.responseStartDate
        responseEndDate = metrics.responseEndDate
        networkProtocolName = metrics.networkProtocolName
        isProxyConnection = metrics.proxy != nil
        isReusedConnection = metrics.isReusedConnection ?? false
        resourceFetchType =
            switch metrics.resourceFetchType {
            case .networkLoad: .networkLoad
            case .localCache, .revalidated: .localCache
            }
        countOfRequestBodyBytesSent = metrics.countOfRequestBodyBytesSent
        countOfResponseBodyBytesReceived = metrics.countOfResponseBodyBytesReceived
        (remoteAddress, remotePort) = Self.split(metrics.remoteAddress)
        (localAddress, localPort) = Self.split(metrics.localAddress)
        negotiatedTLSProtocolVersion =
            switch metrics.negotiatedTLSProtocolVersion {
            case "TLSv1.3": .TLSv13
            case "TLSv1.2": .TLSv12
            case "TLSv1.1": .TLSv11
            case "TLSv1", "TLSv1.0": .TLSv10
            default: nil
            }
    }

    /// `host:port` (`[v6]:port`) as Apple's two fields.
    static func split(_ address: String?) -> (String?, Int?) {
        guard let address, let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            return (address, nil)
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}
