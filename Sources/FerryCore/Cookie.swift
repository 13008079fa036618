public import Foundation

/// An HTTP cookie as a client keeps it (RFC 6265bis §5.7, the storage model).
public struct Cookie: Sendable, Hashable, Codable {
    /// The SameSite attribute (§5.6.7).
    public enum SameSite: String, Sendable, Hashable, Codable {
        /// Sent with cross-site requests too (the server said so).
        case none
        /// Sent with top-level navigations across sites.
        case lax
        /// Sent with same-site requests only.
        case strict
        /// No SameSite attribute, or one this client does not know.
        case `default`
    }

    /// The name.
    public var name: String
    /// The value.
    public var value: String
    /// The host (host-only) or the domain it is sent to, lower case, without a leading dot.
    public var domain: String
    /// Sent to ``domain`` exactly, not to its subdomains (no Domain attribute).
    public var isHostOnly: Bool
    /// Sent with requests whose path is under this one.
    public var path: String
    /// When it expires; nil for a session cookie (kept until the session's store goes).
    public var expires: Date?
    /// Sent over secure connections (https) only.
    public var isSecure: Bool
    /// Not visible to non-HTTP APIs (kept and sent, never handed to scripts).
    public var isHTTPOnly: Bool
    /// Its SameSite attribute.
    public var sameSite: SameSite
    /// When it was first stored (the order among cookies of equal path length).
    public var created: Date
    /// When it was last sent or stored.
    public var lastAccess: Date

    /// A cookie with the given fields.
    public init(
        name: String,
        value: String,
        domain: String,
        isHostOnly: Bool = true,
        path: String = "/",
        expires: Date? = nil,
        isSecure: Bool = false,
        isHTTPOnly: Bool = false,
        sameSite: SameSite = .default,
        created: Date = Date()
    ) {
        self.name = name
        self.value = value
        self.domain = domain.lowercased()
        self.isHostOnly = isHostOnly
        self.path = path
        self.expires = expires
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.created = created
        self.lastAccess = created
    }

    /// A session cookie: kept only as long as its store.
    public var isSessionOnly: Bool { expires == nil }

    /// What identifies it in a store: a newer cookie with the same name, domain and path replaces it.
    public var key: Key { Key(name: name, domain: domain, path: path) }

    /// Name, domain and path.
    public struct Key: Sendable, Hashable {
        public var name: String
        public var domain: String
        public var path: String
    }

    /// `name=value` as a Cookie header carries it.
    public var pair: String { "\(name)=\(value)" }

    /// Whether it goes with a request to `url` at `now` (§5.8.3: domain, path, secure; not expired).
    /// - Parameter forHTTP: false for a non-HTTP API, which never sees HttpOnly cookies.
    public func matches(_ url: URL, now: Date, forHTTP: Bool = true) -> Bool {
        if let expires, expires <= now { return false }
        guard let host = CookieJar.canonicalHost(url) else { return false }
        if isHostOnly { guard host == domain else { return false } } else {
            guard CookieJar.domainMatches(host, domain) else { return false }
        }
        guard CookieJar.pathMatches(CookieJar.requestPath(url), path) else { return false }
        if isSecure, !CookieJar.isSecure(url) { return false }
        if isHTTPOnly, !forHTTP { return false }
        return true
    }
}

/// A `Set-Cookie` header value split as RFC 6265bis §5.6 says: the name-value pair, then the attributes
/// in order (the last of each kind counts).
public struct SetCookie: Sendable, Hashable {
    /// The name (never empty).
    public var name: String
    /// The value.
    public var value: String
    /// The attributes, names as sent, in order.
    public var attributes: [(name: String, value: String)]

    public static func == (lhs: SetCookie, rhs: SetCookie) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value
            && lhs.attributes.map { [$0.name, $0.value] } == rhs.attributes.map { [$0.name, $0.value] }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(value)
        for attribute in attributes {
            hasher.combine(attribute.name)
            hasher.combine(attribute.value)
        }
    }

    /// The longest name and value together, and the longest attribute value, a client keeps (§5.6).
    public static let maximumPairLength = 4096
    public static let maximumAttributeValueLength = 1024

    /// Parses one `Set-Cookie` value; nil when it is to be ignored (a control character, no name or no
    /// `=` before the first `;`, too long).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        // A CTL other than HTAB ignores the whole line.
        if bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { return nil }
        let pairEnd = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<pairEnd]
        // A pair without "=" or without a name is ignored, as RFC 6265 §5.2 and curl do (6265bis would
        // keep a nameless cookie; docs/COOKIES.md says why not here).
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        name = Self.trim(pair[..<equals])
        value = Self.trim(pair[pair.index(after: equals)...])
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= Self.maximumPairLength else { return nil }
        attributes = []
        guard pairEnd < bytes.endIndex else { return }
        for part in bytes[bytes.index(after: pairEnd)...].split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false) {
            let attributeName: String
            let attributeValue: String
            if let equals = part.firstIndex(of: UInt8(ascii: "=")) {
                attributeName = Self.trim(part[..<equals])
                attributeValue = Self.trim(part[part.index(after: equals)...])
            } else {
                attributeName = Self.trim(part)
                attributeValue = ""
            }
            guard attributeValue.utf8.count <= Self.maximumAttributeValueLength else { continue }
            attributes.append((attributeName, attributeValue))
        }
    }

    /// Leading and trailing spaces and tabs removed.
    private static func trim(_ bytes: ArraySlice<UInt8>) -> String {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }
}
