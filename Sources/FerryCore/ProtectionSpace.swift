/// What a credential is for (URLProtectionSpace): a host and port, the authentication scheme, and the
/// realm the server names.
public struct ProtectionSpace: Sendable, Hashable, Codable {
    /// The host, lower case.
    public var host: String
    /// The port.
    public var port: Int
    /// `basic` or `digest`.
    public var scheme: String
    /// The realm; nil when the server names none.
    public var realm: String?
    /// Whether the space is a proxy's (URLProtectionSpace's proxy type): its credentials go in
    /// Proxy-Authorization, or in SOCKS5's user name and password (scheme `socks5`).
    public var isProxy: Bool

    /// A protection space.
    public init(host: String, port: Int, scheme: String, realm: String?, isProxy: Bool = false) {
        self.host = host.lowercased()
        self.port = port
        self.scheme = scheme.lowercased()
        self.realm = realm
        self.isProxy = isProxy
    }

    /// The space of a proxy: `basic` for an HTTP proxy, `socks5` for a SOCKS one; any realm.
    public init(proxy: ProxyServer) {
        self.init(host: proxy.host, port: proxy.port, scheme: proxy.kind == .http ? "basic" : "socks5", realm: nil, isProxy: true)
    }

    private enum CodingKeys: String, CodingKey { case host, port, scheme, realm, isProxy }

    /// Decodes; a space stored before proxies had spaces is a server's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decode(String.self, forKey: .host)
        port = try container.decode(Int.self, forKey: .port)
        scheme = try container.decode(String.self, forKey: .scheme)
        realm = try container.decodeIfPresent(String.self, forKey: .realm)
        isProxy = try container.decodeIfPresent(Bool.self, forKey: .isProxy) ?? false
    }

    /// The space a challenge is for.
    public init(_ challenge: AuthenticationChallenge) {
        self.init(host: challenge.host, port: challenge.port, scheme: challenge.scheme, realm: challenge.realm)
    }
}
