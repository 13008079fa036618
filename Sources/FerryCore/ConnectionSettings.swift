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

    /// Direct connections, default TLS.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case tls, minimumTLSVersion, maximumTLSVersion, httpVersion, proxies, resolve, connectTimeout
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
        for server in [proxies.http, proxies.https].compactMap({ $0 }) where !(1...65535).contains(server.port) {
            throw FerryError(.invalidOperation, "the proxy port \(server.port) is not a port number")
        }
        if tls.clientCertificatePEM != nil, tls.clientPrivateKeyPEM == nil {
            throw FerryError(.invalidOperation, "a client certificate needs its private key")
        }
    }
}
