public import Foundation

/// A cookie store as a value (RFC 6265bis §5.7 and §5.8.3): `Set-Cookie` lines in, the `Cookie` header
/// for a request out. No I/O: a session keeps one under its lock, a file store loads and saves one.
public struct CookieJar: Sendable, Hashable {
    /// Which cookies a store takes (HTTPCookie.AcceptPolicy).
    public enum AcceptPolicy: String, Sendable, Hashable, Codable {
        /// Every cookie the rules allow.
        case always
        /// None.
        case never
        /// Only cookies for the main document's domain (or its subdomains).
        case onlyFromMainDocumentDomain
    }

    /// Cookies a store keeps for one domain at most; the least recently used go first.
    public static let maximumPerDomain = 180
    /// Cookies a store keeps in all at most.
    public static let maximumTotal = 3000
    /// The longest time a cookie is kept, whatever its Max-Age or Expires say (§5.6.1: 400 days).
    public static let maximumLifetime: TimeInterval = 400 * 86_400

    /// Which cookies it takes.
    public var acceptPolicy: AcceptPolicy
    private var cookiesByKey: [Cookie.Key: Cookie] = [:]
    /// The order cookies were first stored in: what decides between two created in the same instant.
    private var creationOrder: [Cookie.Key: UInt64] = [:]
    private var nextOrder: UInt64 = 0
    private let suffixes: PublicSuffixList

    /// An empty store.
    public init(acceptPolicy: AcceptPolicy = .always, publicSuffixes: PublicSuffixList = .system) {
        self.acceptPolicy = acceptPolicy
        self.suffixes = publicSuffixes
    }

    public static func == (lhs: CookieJar, rhs: CookieJar) -> Bool {
        lhs.acceptPolicy == rhs.acceptPolicy && lhs.all == rhs.all
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(acceptPolicy)
        hasher.combine(cookiesByKey)
    }

    /// Every cookie, in the order a Cookie header would list them.
    public var all: [Cookie] { ordered(Array(cookiesByKey.values)) }

    // MARK: Receiving

    /// Takes the `Set-Cookie` fields of a response to `url`.
    /// - Parameters:
    ///   - mainDocument: the main document's URL, for ``AcceptPolicy/onlyFromMainDocumentDomain``.
    /// - Returns: the cookies stored (an expired one removes its match and is not returned).
    @discardableResult
    public mutating func receive(_ headers: Headers, from url: URL, now: Date, mainDocument: URL? = nil) -> [Cookie] {
        headers.values("set-cookie").compactMap { receive($0, from: url, now: now, mainDocument: mainDocument) }
    }

    /// Takes one `Set-Cookie` value received in a response to `url` (§5.7).
    /// - Parameter fromHTTP: false for a non-HTTP API, which may neither set nor replace HttpOnly cookies.
    /// - Returns: the cookie stored, or nil when it was ignored or removed one.
    @discardableResult
    public mutating func receive(
        _ setCookie: String,
        from url: URL,
        now: Date,
        mainDocument: URL? = nil,
        fromHTTP: Bool = true
    ) -> Cookie? {
        guard acceptPolicy != .never, let parsed = SetCookie(setCookie), let host = Self.canonicalHost(url) else {
            return nil
        }
        if acceptPolicy == .onlyFromMainDocumentDomain, let main = mainDocument.flatMap(Self.canonicalHost),
            !Self.domainMatches(host, main), !Self.domainMatches(main, host)
        {
            return nil
        }
        let attributes = Self.attributes(of: parsed, from: url, now: now)
        let (expiry, domainAttribute, pathAttribute) = (attributes.expiry, attributes.domain, attributes.path)
        let (secure, httpOnly, sameSite) = (attributes.secure, attributes.httpOnly, attributes.sameSite)
        var domain = domainAttribute ?? ""
        if !domain.isEmpty, domain.hasSuffix(".") {
            // A trailing dot names a different host than the request's.
            if domain != host { return nil }
        }
        if !domain.isEmpty, suffixes.isPublicSuffix(domain) {
            // For the public suffix itself (a request to `github.io`) it is a host cookie; for any other
            // host it would reach every site under the suffix: refused.
            guard domain == host else { return nil }
            domain = ""
        }
        let hostOnly: Bool
        if domain.isEmpty {
            hostOnly = true
            domain = host
        } else {
            guard Self.domainMatches(host, domain) else { return nil }
            hostOnly = false
        }
        let path = pathAttribute ?? Self.defaultPath(url)
        if secure, !Self.isSecure(url) { return nil }
        if httpOnly, !fromHTTP { return nil }
        if !Self.isSecure(url),
            cookiesByKey.values.contains(where: { existing in
                existing.isSecure && existing.name == parsed.name
                    && (Self.domainMatches(existing.domain, domain) || Self.domainMatches(domain, existing.domain))
                    && Self.pathMatches(path, existing.path)
            })
        {
            // An insecure origin cannot overwrite (or shadow) a secure cookie (§5.7 step 16).
            return nil
        }
        // Name prefixes (§4.1.3): __Secure- needs Secure; __Host- also a host-only cookie for "/".
        let loweredName = parsed.name.lowercased()
        if loweredName.hasPrefix("__secure-"), !secure { return nil }
        if loweredName.hasPrefix("__host-"), !secure || !hostOnly || path != "/" { return nil }
        var cookie = Cookie(
            name: parsed.name,
            value: parsed.value,
            domain: domain,
            isHostOnly: hostOnly,
            path: path,
            expires: expiry,
            isSecure: secure,
            isHTTPOnly: httpOnly,
            sameSite: sameSite,
            created: now
        )
        if let old = cookiesByKey[cookie.key] {
            if old.isHTTPOnly, !fromHTTP { return nil }
            cookie.created = old.created
        }
        if let expiry, expiry <= now {
            forget(cookie.key)
            return nil
        }
        store(cookie)
        evict(now: now, keeping: cookie.key)
        return cookie
    }

    /// What a `Set-Cookie`'s attributes say (§5.6), each as its last occurrence does.
    private struct Attributes {
        /// Max-Age wins over Expires; neither: a session cookie.
        var expiry: Date?
        var domain: String?
        var path: String?
        var secure: Bool
        var httpOnly: Bool
        var sameSite: Cookie.SameSite
    }

    private static func attributes(of parsed: SetCookie, from url: URL, now: Date) -> Attributes {
        var expires: Date?
        var maxAge: Date?
        var domain: String?
        var path: String?
        var secure = false
        var httpOnly = false
        var sameSite = Cookie.SameSite.default
        for (name, value) in parsed.attributes {
            switch name.lowercased() {
            case "expires":
                if let date = CookieDate.parse(value) { expires = min(date, now.addingTimeInterval(Self.maximumLifetime)) }
            case "max-age":
                guard let first = value.utf8.first, first == UInt8(ascii: "-") || (0x30...0x39).contains(first),
                    value.utf8.dropFirst().allSatisfy({ (0x30...0x39).contains($0) })
                else { continue }
                let seconds = Double(value) ?? (first == UInt8(ascii: "-") ? -1 : Self.maximumLifetime)
                maxAge =
                    seconds <= 0
                    ? Date.distantPast : now.addingTimeInterval(min(seconds, Self.maximumLifetime))
            case "domain":
                guard !value.isEmpty else { continue }
                let trimmed = value.hasPrefix(".") ? String(value.dropFirst()) : value
                domain = trimmed.lowercased()
            case "path":
                path = value.hasPrefix("/") ? value : Self.defaultPath(url)
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            case "samesite":
                sameSite = Cookie.SameSite(rawValue: value.lowercased()) ?? .default
            default:
                continue
            }
        }
        return Attributes(
            expiry: maxAge ?? expires,
            domain: domain,
            path: path,
            secure: secure,
            httpOnly: httpOnly,
            sameSite: sameSite
        )
    }

    /// Stores `cookie` as it is (an API's set), replacing the one with its name, domain and path.
    public mutating func set(_ cookie: Cookie, now: Date) {
        var cookie = cookie
        if let old = cookiesByKey[cookie.key] { cookie.created = old.created }
        if let expires = cookie.expires, expires <= now {
            forget(cookie.key)
            return
        }
        store(cookie)
        evict(now: now, keeping: cookie.key)
    }

    /// Replaces the persistent cookies (those with an expiry) with `cookies` — what a shared file holds
    /// now — keeping the session cookies; expired ones are left out.
    public mutating func replacePersistent(with cookies: [Cookie], now: Date) {
        for (key, cookie) in cookiesByKey where !cookie.isSessionOnly { forget(key) }
        for cookie in cookies {
            guard let expires = cookie.expires, expires > now else { continue }
            if let session = cookiesByKey[cookie.key], session.isSessionOnly { continue }
            store(cookie)
        }
    }

    /// Removes the cookie with `cookie`'s name, domain and path.
    public mutating func remove(_ cookie: Cookie) {
        forget(cookie.key)
    }

    /// Removes every cookie.
    public mutating func removeAll() {
        cookiesByKey = [:]
        creationOrder = [:]
    }

    /// Removes expired cookies, and with `endingSession` the session cookies too.
    public mutating func removeExpired(now: Date, endingSession: Bool = false) {
        for (key, cookie) in cookiesByKey {
            let keep = cookie.expires.map { $0 > now } ?? !endingSession
            if !keep { forget(key) }
        }
    }

    // MARK: Sending

    /// The cookies for a request to `url` at `now`, in the order the header lists them: longer paths
    /// first, then the earlier created (§5.8.3).
    public func cookies(for url: URL, now: Date, forHTTP: Bool = true) -> [Cookie] {
        guard !cookiesByKey.isEmpty else { return [] }
        return ordered(cookiesByKey.values.filter { $0.matches(url, now: now, forHTTP: forHTTP) })
    }

    /// The `Cookie` header value for a request to `url`, or nil when no cookie goes with it. Marks the
    /// cookies sent as used now.
    public mutating func cookieHeader(for url: URL, now: Date) -> String? {
        let sent = cookies(for: url, now: now)
        guard !sent.isEmpty else { return nil }
        for cookie in sent { cookiesByKey[cookie.key]?.lastAccess = now }
        return sent.map(\.pair).joined(separator: "; ")
    }

    // MARK: Rules (§5.1)

    private func ordered(_ cookies: [Cookie]) -> [Cookie] {
        cookies.sorted { lhs, rhs in
            if lhs.path.utf8.count != rhs.path.utf8.count { return lhs.path.utf8.count > rhs.path.utf8.count }
            if lhs.created != rhs.created { return lhs.created < rhs.created }
            return (creationOrder[lhs.key] ?? 0) < (creationOrder[rhs.key] ?? 0)
        }
    }

    /// Stores `cookie`, first stored now unless it replaces one.
    private mutating func store(_ cookie: Cookie) {
        if creationOrder[cookie.key] == nil {
            creationOrder[cookie.key] = nextOrder
            nextOrder += 1
        }
        cookiesByKey[cookie.key] = cookie
    }

    /// Forgets the cookie stored under `key`.
    private mutating func forget(_ key: Cookie.Key) {
        cookiesByKey[key] = nil
        creationOrder[key] = nil
    }

    /// Keeps within the limits, dropping expired cookies first, then the least recently used (never the
    /// one just stored).
    private mutating func evict(now: Date, keeping key: Cookie.Key) {
        let domain = key.domain
        let sameDomain = cookiesByKey.values.filter { $0.domain == domain }
        if sameDomain.count > Self.maximumPerDomain {
            drop(sameDomain, over: Self.maximumPerDomain, now: now, keeping: key)
        }
        if cookiesByKey.count > Self.maximumTotal {
            drop(Array(cookiesByKey.values), over: Self.maximumTotal, now: now, keeping: key)
        }
    }

    private mutating func drop(_ candidates: [Cookie], over limit: Int, now: Date, keeping key: Cookie.Key) {
        let order = candidates.filter { $0.key != key }.sorted { lhs, rhs in
            let lhsExpired = lhs.expires.map { $0 <= now } ?? false
            let rhsExpired = rhs.expires.map { $0 <= now } ?? false
            if lhsExpired != rhsExpired { return lhsExpired }
            return lhs.lastAccess < rhs.lastAccess
        }
        for cookie in order.prefix(candidates.count - limit) { forget(cookie.key) }
    }

    /// The request's host, lower case, without a trailing dot kept apart: nil without a host.
    static func canonicalHost(_ url: URL) -> String? {
        guard let host = url.host, !host.isEmpty else { return nil }
        var lowered = host.lowercased()
        if lowered.hasPrefix("["), lowered.hasSuffix("]") { lowered = String(lowered.dropFirst().dropLast()) }
        return lowered
    }

    /// §5.1.3: `host` is `domain`, or a name (not an IP address) ending in "." + `domain`.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        guard host.hasSuffix("." + domain) else { return false }
        return !isIPAddress(host)
    }

    private static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in !part.isEmpty && part.allSatisfy(\.isNumber) }
    }

    /// The path a request's cookies are matched against: its URL path, "/" when empty.
    static func requestPath(_ url: URL) -> String {
        let path = url.path(percentEncoded: true)
        return path.isEmpty ? "/" : path
    }

    /// §5.1.4: the request path up to, not including, its last "/" ("/" when there is none past the first).
    static func defaultPath(_ url: URL) -> String {
        let path = url.path(percentEncoded: true)
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// §5.1.4: `requestPath` is `cookiePath`, or under it.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// Whether the URL's scheme is a secure one (https, wss).
    static func isSecure(_ url: URL) -> Bool {
        ["https", "wss"].contains(url.scheme?.lowercased() ?? "")
    }
}
