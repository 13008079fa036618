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

    init(_ metrics: TaskMetrics) {
        transactionMetrics = metrics.transactionMetrics.map(URLSessionTaskTransactionMetrics.init)
        taskInterval = metrics.taskInterval
        redirectCount = metrics.redirectCount
    }
}

/// One request's timing and connection (Apple's `URLSessionTaskTransactionMetrics`).
open class URLSessionTaskTransactionMetrics: NSObject, @unchecked Sendable {
    /// How the response was obtained.
    public enum ResourceFetchType: Int, Sendable {
        case unknown = 0
        case networkLoad = 1
        case serverPush = 2
        case localCache = 3
    }

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
    public let resourceFetchType: ResourceFetchType
    public let countOfRequestBodyBytesSent: Int64
    public let countOfResponseBodyBytesReceived: Int64
    /// The remote address as `host:port`.
    public let remoteAddress: String?
    /// The local address as `host:port`.
    public let localAddress: String?
    /// The TLS version, e.g. `TLSv1.3`.
    public let negotiatedTLSProtocolVersion: String?

    init(_ metrics: TransactionMetrics) {
        request = FoundationBridge.urlRequest(metrics.request)
        response = metrics.response.map { FoundationBridge.response($0, protocolName: metrics.networkProtocolName) }
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
        remoteAddress = metrics.remoteAddress
        localAddress = metrics.localAddress
        negotiatedTLSProtocolVersion = metrics.negotiatedTLSProtocolVersion
    }
}
