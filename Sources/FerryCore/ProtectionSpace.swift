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

    /// A protection space.
    public init(host: String, port: Int, scheme: String, realm: String?) {
        self.host = host.lowercased()
        self.port = port
        self.scheme = scheme.lowercased()
        self.realm = realm
    }

    /// The space a challenge is for.
    public init(_ challenge: AuthenticationChallenge) {
        self.init(host: challenge.host, port: challenge.port, scheme: challenge.scheme, realm: challenge.realm)
    }
}
