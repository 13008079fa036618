import Ferry
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Conversions between Apple's value types and Ferry's, in one place: requests, responses, errors,
/// cache policies, proxies and cached responses.
enum FoundationBridge {
    // MARK: Requests

    /// Ferry's request for `request` (its body is taken apart by the caller), or the URLError Apple
    /// gives for a request without a usable URL.
    static func request(_ request: URLRequest, configuration: SessionConfiguration? = nil) -> Result<Request, URLError> {
        guard let url = request.url else {
            return .failure(URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "the request has no URL"]))
        }
        // (ASCII case and the host as written: whether there is one is all that matters here, and
        // neither a lower-cased copy nor a percent-decoded host is made for every request.)
        let scheme = url.scheme?.asciiLowercased
        let known = scheme == "http" || scheme == "https" || scheme == "ws" || scheme == "wss"
        guard known, url.host(percentEncoded: true) != nil else {
            return .failure(
                URLError(
                    .unsupportedURL,
                    userInfo: [
                        NSLocalizedDescriptionKey: "unsupported URL",
                        NSURLErrorFailingURLErrorKey: url,
                        "NSErrorFailingURLStringKey": url.absoluteString,
                    ]
                )
            )
        }
        var ferry = Request(url: url)
        ferry.method = request.httpMethod ?? "GET"
        var headers = Headers()
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
        ferry.headers = headers
        ferry.timeoutInterval = request.timeoutInterval
        ferry.cachePolicy = cachePolicy(request.cachePolicy)
        ferry.httpShouldHandleCookies = request.httpShouldHandleCookies
        ferry.allowsCellularAccess = request.allowsCellularAccess
        return .success(ferry)
    }

    /// Apple's request for Ferry's `request` (without a body: Ferry keeps bodies apart).
    static func urlRequest(_ request: Request) -> URLRequest {
        var apple = URLRequest(url: request.url)
        apple.httpMethod = request.method
        for field in request.headers { apple.addValue(field.value, forHTTPHeaderField: field.name) }
        apple.timeoutInterval = request.timeoutInterval
        apple.cachePolicy = cachePolicy(request.cachePolicy)
        apple.httpShouldHandleCookies = request.httpShouldHandleCookies
        apple.allowsCellularAccess = request.allowsCellularAccess
        return apple
    }

    /// `changed` (the delegate's answer to a redirect) over `proposed`: Ferry's own request fields
    /// (segments, digests) are kept, what Apple's request carries is taken from `changed`.
    static func request(_ changed: URLRequest, over proposed: Request) -> Request {
        guard case .success(var ferry) = request(changed) else { return proposed }
        ferry.connections = proposed.connections
        ferry.minimumSegmentSize = proposed.minimumSegmentSize
        ferry.expectedDigest = proposed.expectedDigest
        ferry.resumableUpload = proposed.resumableUpload
        return ferry
    }

    static func cachePolicy(_ policy: NSURLRequest.CachePolicy) -> Request.CachePolicy {
        switch policy {
        case .useProtocolCachePolicy: .useProtocolCachePolicy
        case .returnCacheDataElseLoad: .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: .returnCacheDataDontLoad
        // Ferry's cache is the only local cache: ignoring it is ignoring every local one.
        default: .reloadIgnoringLocalCacheData
        }
    }

    static func cachePolicy(_ policy: Request.CachePolicy) -> NSURLRequest.CachePolicy {
        switch policy {
        case .useProtocolCachePolicy: .useProtocolCachePolicy
        case .reloadIgnoringLocalCacheData: .reloadIgnoringLocalCacheData
        case .returnCacheDataElseLoad: .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: .returnCacheDataDontLoad
        }
    }

    // MARK: Responses

    /// Apple's response for Ferry's, its fields kept as they came (``HTTPURLResponse`` joins fields of
    /// one name with ", " when asked, as FoundationNetworking and Darwin do).
    static func response(_ response: Response) -> HTTPURLResponse {
        HTTPURLResponse(url: response.url, statusCode: response.statusCode, fields: response.headers)
    }

    /// Ferry's response for Apple's (for a cached response the delegate changed).
    static func ferryResponse(_ response: URLResponse) -> Response? {
        guard let http = response as? HTTPURLResponse, let url = http.url else { return nil }
        return Response(url: url, statusCode: http.statusCode, headers: headers(http.allHeaderFields))
    }

    /// Ferry's fields for an `allHeaderFields` dictionary (any response's, or an archive's): the
    /// entries whose names are strings, values as text.
    static func headers(_ fields: [AnyHashable: Any]) -> Headers {
        var headers = Headers()
        for (name, value) in fields {
            if let name = name as? String { headers.add(name: name, value: "\(value)") }
        }
        return headers
    }

    static func cachedResponse(_ cached: CachedResponse) -> CachedURLResponse {
        let response = self.response(Response(url: cached.url, statusCode: cached.statusCode, headers: cached.headers))
        let policy: URLCache.StoragePolicy =
            switch cached.storagePolicy {
            case .allowed: .allowed
            case .allowedInMemoryOnly: .allowedInMemoryOnly
            case .notAllowed: .notAllowed
            }
        return CachedURLResponse(response: response, data: cached.data, userInfo: nil, storagePolicy: policy)
    }

    /// The delegate's answer to willCacheResponse, over what Ferry proposed.
    static func cachedResponse(_ answer: CachedURLResponse, over proposed: CachedResponse) -> CachedResponse {
        var result = proposed
        result.data = answer.data
        if let response = ferryResponse(answer.response) {
            result.statusCode = response.statusCode
            result.headers = response.headers
        }
        switch answer.storagePolicy {
        case .allowed: result.storagePolicy = .allowed
        case .allowedInMemoryOnly: result.storagePolicy = .allowedInMemoryOnly
        case .notAllowed: result.storagePolicy = .notAllowed
        @unknown default: result.storagePolicy = .notAllowed
        }
        return result
    }

    // MARK: Errors

    /// Apple's error for Ferry's: the same code where URLError has it (Ferry's own codes become
    /// `.unknown`), Ferry's message as the description, the failing URL, the resume data, and Ferry's
    /// error under `NSUnderlyingErrorKey`.
    static func error(_ error: FerryError, url: URL? = nil) -> URLError {
        let code = (error.code.rawValue < 0 ? URLError.Code(rawValue: error.code.rawValue) : nil) ?? .unknown
        var info: [String: Any] = [NSLocalizedDescriptionKey: error.message, NSUnderlyingErrorKey: error as NSError]
        // The engine's failing URL, else the task's (a cancellation names none): Apple sets both keys.
        if let failing = error.failingURL ?? url?.absoluteString {
            // NSURLErrorFailingURLStringErrorKey's value (deprecated on Linux, still set by Apple).
            info["NSErrorFailingURLStringKey"] = failing
            if let url = URL(string: failing) { info[NSURLErrorFailingURLErrorKey] = url }
        }
        if let resume = error.resumeData { info[NSURLSessionDownloadTaskResumeData] = resume.encoded() }
        return URLError(code, userInfo: info)
    }

    /// Apple's error for whatever the engine threw: a ``FerryError`` as ``error(_:url:)`` makes it,
    /// anything else as it is.
    static func error(from error: any Error, url: URL?) -> any Error {
        (error as? FerryError).map { self.error($0, url: url) } ?? error
    }

    /// A `URLError` of `code` with `message` and the failing URL under both of Apple's keys.
    static func error(_ code: URLError.Code, _ message: String, url: URL?) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let url {
            info["NSErrorFailingURLStringKey"] = url.absoluteString
            info[NSURLErrorFailingURLErrorKey] = url
        }
        return URLError(code, userInfo: info)
    }

    // MARK: Proxies

    /// Ferry's proxy for a `connectionProxyDictionary`, or why it cannot be honoured.
    static func proxy(_ dictionary: [AnyHashable: Any]) -> Result<SessionConfiguration.Proxy?, ProxyRefusal> {
        func string(_ key: String) -> String? { dictionary[key].map { "\($0)" } }
        func enabled(_ key: String) -> Bool {
            switch dictionary[key] {
            case let flag as Bool: flag
            case let number as NSNumber: number.boolValue
            case let number as Int: number != 0
            case let text as String: text == "1" || text.lowercased() == "true"
            default: false
            }
        }
        let known: Set<String> = [
            "HTTPEnable", "HTTPProxy", "HTTPPort", "HTTPSEnable", "HTTPSProxy", "HTTPSPort",
            "SOCKSEnable", "SOCKSProxy", "SOCKSPort", "ExceptionsList",
        ]
        for key in dictionary.keys {
            guard let name = key as? String, known.contains(name) else { return .failure(ProxyRefusal("the key \(key) is not supported")) }
        }
        func server(_ prefix: String) -> (host: String, port: Int)? {
            guard enabled("\(prefix)Enable") || (dictionary["\(prefix)Enable"] == nil && string("\(prefix)Proxy") != nil),
                let host = string("\(prefix)Proxy"), !host.isEmpty
            else { return nil }
            return (host, string("\(prefix)Port").flatMap { Int($0) } ?? (prefix == "SOCKS" ? 1080 : 8080))
        }
        let bypass = (dictionary["ExceptionsList"] as? [String]) ?? []
        let http = server("HTTP")
        let https = server("HTTPS")
        if let socks = server("SOCKS") {
            guard http == nil, https == nil else { return .failure(ProxyRefusal("a SOCKS proxy and an HTTP proxy at once")) }
            return .success(SessionConfiguration.Proxy(kind: .socks5, host: socks.host, port: socks.port, bypass: bypass))
        }
        if let http, let https, http != https {
            return .failure(ProxyRefusal("different proxies for http and https (Ferry uses one proxy for both)"))
        }
        guard let one = http ?? https else { return .success(nil) }
        return .success(SessionConfiguration.Proxy(kind: .http, host: one.host, port: one.port, bypass: bypass))
    }

    struct ProxyRefusal: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
