/// How a task's connections are made: TLS trust and identity, versions, proxies, fixed addresses.
///
/// The control API carries it with each background task (``ControlAPI/TaskCreation/connection``) and
/// ferryd stores it, so a task connects as the client that created it would — its CA's contents, its
/// proxy (from its own environment or flags) — never with ferryd's environment.
public struct ConnectionSettings: Sendable, Hashable, Codable {
    /// Trust, client identity, pins.
    public var tls = TLSSettings()
    /// The lowest TLS version; nil: 1.2.
    public var minimumTLSVersion: SessionConfiguration.TLSVersion?
    /// The highest TLS version; nil: 1.3.
    public var maximumTLSVersion: SessionConfiguration.TLSVersion?
    /// HTTP/1.1 only, HTTP/2, or whatever ALPN picks; nil: automatic.
    public var httpVersion: SessionConfiguration.HTTPVersionPreference?
    /// The proxies; direct when empty.
    public var proxies = ProxySettings()
    /// Fixed addresses for `host:port` (curl's `--resolve`).
    public var resolve: [String: String] = [:]
    /// Seconds a new connection may take; nil: the request timeout.
    public var connectTimeout: Double?
    /// The cookies the task sends and keeps on every hop; nil: none.
    public var cookies: CookieSettings?
    /// Only IPv4 or only IPv6 addresses of a host (curl's `-4`, `-6`); nil: either.
    public var addressFamily: AddressFamily?

    /// IPv4 or IPv6.
    public enum AddressFamily: String, Sendable, Hashable, Codable {
        case ipv4
        case ipv6
    }

    /// Direct connections, default TLS.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case tls, minimumTLSVersion, maximumTLSVersion, httpVersion, proxies, resolve, connectTimeout, cookies
        case addressFamily
    }

    /// Decodes, with the defaults for absent fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tls = try container.decodeIfPresent(TLSSettings.self, forKey: .tls) ?? TLSSettings()
        minimumTLSVersion = try container.decodeIfPresent(SessionConfiguration.TLSVersion.self, forKey: .minimumTLSVersion)
        maximumTLSVersion = try container.decodeIfPresent(SessionConfiguration.TLSVersion.self, forKey: .maximumTLSVersion)
        httpVersion = try container.decodeIfPresent(SessionConfiguration.HTTPVersionPreference.self, forKey: .httpVersion)
        proxies = try container.decodeIfPresent(ProxySettings.self, forKey: .proxies) ?? ProxySettings()
        resolve = try container.decodeIfPresent([String: String].self, forKey: .resolve) ?? [:]
        connectTimeout = try container.decodeIfPresent(Double.self, forKey: .connectTimeout)
        cookies = try container.decodeIfPresent(CookieSettings.self, forKey: .cookies)
        addressFamily = try container.decodeIfPresent(AddressFamily.self, forKey: .addressFamily)
    }

    /// Checks the values against each other.
    /// - Throws: ``FerryError`` with ``FerryError/Code/invalidOperation`` saying which to change.
    public func validate() throws {
        if let minimumTLSVersion, let maximumTLSVersion, minimumTLSVersion > maximumTLSVersion {
            throw FerryError(.invalidOperation, "the minimum TLS version is above the maximum")
        }
        if let connectTimeout, !(connectTimeout > 0 && connectTimeout <= 3600) {
            throw FerryError(.invalidOperation, "connectTimeout must be a number of seconds above 0, at most an hour")
        }
        for server in [proxies.http, proxies.https].compactMap({ $0 }) {
            guard (1...65535).contains(server.port) else {
                throw FerryError(.invalidOperation, "the proxy port \(server.port) is not a port number")
            }
            guard !server.host.isEmpty else { throw FerryError(.invalidOperation, "a proxy needs a host name or address") }
        }
        if tls.clientCertificatePEM != nil, tls.clientPrivateKeyPEM == nil {
            throw FerryError(.invalidOperation, "a client certificate needs its private key")
        }
        try cookies?.validate()
    }
}

/// Where a background task's cookies live, recorded with the task (S1.3: the daemon has no session
/// object). Tasks with equal settings share one store in ferryd.
public struct CookieSettings: Sendable, Hashable, Codable {
    /// A persistent cookie file shared with the client (CookieStore's JSON, e.g. the user's
    /// `cookies.json`): cookies are read from it and written to it, so the client sees what background
    /// responses set. Nil: a store in ferryd's memory.
    public var file: String?
    /// A Netscape cookie file (curl's `-b FILE`) whose cookies the store starts with.
    public var load: String?
    /// A Netscape cookie file (curl's `-c FILE`) written with every cookie when a run of the task ends.
    public var jar: String?
    /// Which cookies are kept.
    public var acceptPolicy: CookieJar.AcceptPolicy
    /// Tells stores in ferryd's memory apart: tasks share one only when every setting, this included,
    /// is the same (the CLI gives each command a scope of its own, as each curl run has its own cookies).
    public var scope: String?

    /// Cookie settings; every path absolute.
    public init(
        file: String? = nil,
        load: String? = nil,
        jar: String? = nil,
        acceptPolicy: CookieJar.AcceptPolicy = .always,
        scope: String? = nil
    ) {
        self.file = file
        self.load = load
        self.jar = jar
        self.acceptPolicy = acceptPolicy
        self.scope = scope
    }

    private enum CodingKeys: String, CodingKey { case file, load, jar, acceptPolicy, scope }

    /// Decodes, with `always` when no policy is given.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        file = try container.decodeIfPresent(String.self, forKey: .file)
        load = try container.decodeIfPresent(String.self, forKey: .load)
        jar = try container.decodeIfPresent(String.self, forKey: .jar)
        acceptPolicy = try container.decodeIfPresent(CookieJar.AcceptPolicy.self, forKey: .acceptPolicy) ?? .always
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
    }

    /// Checks that every path is absolute and has no NUL.
    public func validate() throws {
        for (name, path) in [("file", file), ("load", load), ("jar", jar)] {
            guard let path else { continue }
            guard path.utf8.first == UInt8(ascii: "/"), !path.utf8.contains(0) else {
                throw FerryError(.invalidOperation, "cookies.\(name) must be an absolute path, not '\(path)'")
            }
        }
    }
}
