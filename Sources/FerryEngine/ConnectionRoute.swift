import FerryCore
import Foundation

/// A target and the proxy, if any, on the way: the pool's key covers both (a connection through a
/// proxy is never reused for a direct request, nor with other proxy credentials).
struct ConnectionRoute: Sendable {
    let target: HTTPTarget
    let proxy: ProxyServer?

    /// Plain http through an HTTP proxy: the request names the absolute URL, no tunnel.
    var usesAbsoluteForm: Bool { proxy?.kind == .http && !target.secure }

    /// `Basic …` for an HTTP proxy with credentials.
    var proxyAuthorization: String? {
        guard let proxy, proxy.kind == .http, let user = proxy.username else { return nil }
        let pair = "\(user):\(proxy.password ?? "")"
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }

    /// The pool's key for this route.
    var key: PoolKey {
        PoolKey(
            origin: target.origin,
            proxy: proxy.map { PoolKey.Proxy(server: $0.description, username: $0.username, password: $0.password) }
        )
    }
}

/// What a pooled connection leads to and how: the origin, and the proxy on the way with the credentials
/// it was opened with (a connection through a proxy is never reused for a direct request, nor with other
/// credentials). Every connection of one pool has its transport's TLS settings, so they are not part of
/// the key.
struct PoolKey: Hashable, Sendable, CustomStringConvertible {
    /// A scheme, host and port.
    struct Origin: Hashable, Sendable {
        /// https.
        let secure: Bool
        /// Lowercase, without IPv6 brackets.
        let host: String
        let port: Int
    }

    /// A proxy and the credentials given to it.
    struct Proxy: Hashable, Sendable {
        let server: String
        let username: String?
        let password: String?
    }

    let origin: Origin
    /// Nil: a direct connection.
    let proxy: Proxy?

    /// `https://host:port`, and the proxy's name when there is one (never its password).
    var description: String {
        let origin = "\(origin.secure ? "https" : "http")://\(origin.host):\(origin.port)"
        return proxy.map { origin + " via " + $0.server } ?? origin
    }
}

/// Where an `http://` or `https://` request goes and how its head names it.
struct HTTPTarget: Sendable {
    let url: String
    let host: String
    let port: Int
    /// https: over TLS.
    let secure: Bool
    /// The Host field: the host, bracketed if IPv6, with the port unless it is the scheme's default.
    let hostHeader: String
    /// The origin-form request target: path and query, percent-encoded as in the URL.
    let requestTarget: String
    /// The origin, as the pool keys it.
    let origin: PoolKey.Origin

    init(_ url: URL) throws {
        self.url = url.absoluteString
        let scheme = url.scheme?.asciiLowercased
        guard scheme == "http" || scheme == "https" else {
            throw FerryError(
                .unsupportedURL,
                "NetworkTransport carries only http:// and https:// URLs",
                failingURL: url.absoluteString
            )
        }
        secure = scheme == "https"
        // URL's own accessors, not URLComponents: parsing the URL again for every request was 4.5 % of
        // the caller's CPU in 20,000 sequential GETs (perf).
        let url = url.absoluteURL
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw FerryError(.badURL, "the URL has no host", failingURL: url.absoluteString)
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.host = bare
        let defaultPort = secure ? 443 : 80
        self.port = url.port ?? defaultPort
        // A byte search: String.contains(String) goes through NSString's range(of:), about 1 µs a
        // request (perf, 20,000 sequential GETs).
        let named = bare.utf8.contains(UInt8(ascii: ":")) ? "[\(bare)]" : bare
        self.hostHeader = port == defaultPort ? named : "\(named):\(port)"
        let path = url.path(percentEncoded: true)
        var target = path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        self.requestTarget = target
        self.origin = PoolKey.Origin(secure: secure, host: bare.asciiLowercased, port: port)
    }
}
