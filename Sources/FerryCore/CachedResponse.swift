public import Foundation

/// A response kept by the HTTP cache (CachedURLResponse): the head, the body as the server sent it
/// (still content-encoded), and what the cache needs to judge it later: when it was requested and
/// received, and the request's values of the fields its `Vary` names.
public struct CachedResponse: Sendable, Hashable, Codable {
    /// Where a response may be kept (URLCache.StoragePolicy).
    public enum StoragePolicy: String, Sendable, Hashable, Codable {
        /// In memory and on disk.
        case allowed
        /// In memory only.
        case allowedInMemoryOnly
        /// Not at all.
        case notAllowed
    }

    /// The URL the response is for (the request's, without a fragment).
    public var url: URL
    /// The status code.
    public var statusCode: Int
    /// The header fields as received (updated by a 304's).
    public var headers: Headers
    /// The body as received.
    public var data: Data
    /// Where it may be kept.
    public var storagePolicy: StoragePolicy
    /// When the request that fetched (or last validated) it was sent.
    public var requestDate: Date
    /// When that response arrived.
    public var responseDate: Date
    /// The request's value of each field the response's `Vary` names (lower-case names; a field the
    /// request lacked is absent). Empty without `Vary`.
    public var varyValues: [String: String]

    /// Creates a cached response.
    public init(
        url: URL,
        statusCode: Int,
        headers: Headers,
        data: Data,
        storagePolicy: StoragePolicy = .allowed,
        requestDate: Date,
        responseDate: Date,
        varyValues: [String: String] = [:]
    ) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.data = data
        self.storagePolicy = storagePolicy
        self.requestDate = requestDate
        self.responseDate = responseDate
        self.varyValues = varyValues
    }

    /// The response head.
    public var response: Response { Response(url: url, statusCode: statusCode, headers: headers) }

    /// Bytes it takes in a cache: its body plus its header fields.
    public var cost: Int {
        data.count + headers.fields.reduce(64 + url.absoluteString.utf8.count) {
            $0 + $1.name.utf8.count + $1.value.utf8.count + 4
        }
    }
}
