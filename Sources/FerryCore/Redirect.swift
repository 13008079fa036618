public import Foundation

/// The request that follows a redirect response (RFC 9110 §15.4), as URLSession builds it before asking
/// the delegate's `willPerformHTTPRedirection`.
public enum Redirect {
    /// The statuses that redirect when they carry a Location.
    public static let statuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The next request, or nil when `status` is not a redirect or there is no usable Location.
    /// - Parameters:
    ///   - request: the request that got the redirect.
    ///   - status: the response status.
    ///   - location: the Location header, absolute or relative to the request's URL.
    /// - Returns: the new request: 301 and 302 turn POST into GET, 303 turns everything but HEAD into
    ///   GET (dropping the body's headers); 307 and 308 keep method and body. Credentials and cookies set
    ///   by hand are dropped when the origin changes.
    ///   - allowing: which targets may be followed: http and https, and for a session with protocol
    ///     handlers also the URLs one of them loads.
    public static func follow(
        _ request: Request,
        status: Int,
        location: String?,
        allowing isAllowed: (URL) -> Bool = Redirect.isHTTP
    ) -> Request? {
        guard statuses.contains(status), let location,
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            isAllowed(target)
        else { return nil }
        var next = request
        next.url = target
        let method = request.method.uppercased()
        let becomesGET = (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST")
        if becomesGET {
            next.method = "GET"
            for name in ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"] {
                next.headers[name] = nil
            }
        }
        if request.url.httpOrigin != target.httpOrigin {
            for name in ["Authorization", "Cookie", "Proxy-Authorization"] { next.headers[name] = nil }
        }
        return next
    }

    /// Whether `url` is http or https.
    public static func isHTTP(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return scheme == "http" || scheme == "https"
    }

    /// Whether a redirect keeps the request body (307 and 308 do; the others drop it or have none).
    public static func keepsBody(status: Int, method: String) -> Bool {
        status == 307 || status == 308
    }
}

extension URL {
    /// The origin as one string, `scheme://host:port` with the scheme and host lower-cased and the
    /// scheme's default port filled in (443 for https, else 80; no scheme counts as http): equal for
    /// the same origin (RFC 6454).
    public var httpOrigin: String {
        let origin = httpOriginParts
        return "\(origin.scheme)://\(origin.host):\(origin.port)"
    }

    /// ``httpOrigin``'s parts, apart (for a key that need not be one new string per request).
    package var httpOriginParts: (scheme: String, host: String, port: Int) {
        let scheme = self.scheme?.asciiLowercased ?? "http"
        return (scheme, host?.asciiLowercased ?? "", port ?? (scheme == "https" ? 443 : 80))
    }
}
