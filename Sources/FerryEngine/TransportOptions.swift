public import FerryCore

/// Settings of the standard transports, taken from a session's configuration or the CLI's flags.
public struct TransportOptions: Sendable {
    /// Seconds without a byte before a read fails (the request idle timeout); default 60.
    public var idleTimeout: Double = 60
    /// Seconds a new connection (TCP and TLS) may take; nil: the idle timeout (curl's `--connect-timeout`).
    public var connectTimeout: Double?
    /// Connections per host kept open for reuse; default 6.
    public var maximumConnectionsPerHost = 6
    /// The lowest TLS version; default 1.2.
    public var minimumTLSVersion: SessionConfiguration.TLSVersion = .tlsv12
    /// The highest TLS version; default 1.3.
    public var maximumTLSVersion: SessionConfiguration.TLSVersion = .tlsv13
    /// With ``SessionConfiguration/HTTPVersionPreference/http3``: how long a QUIC handshake may run
    /// before TCP starts for the request (RFC 8305's race; the handshake goes on for the requests after).
    /// nil (the default): 250 ms for an origin nothing said speaks HTTP/3, 3 s for one whose `Alt-Svc`
    /// did. A closed UDP port is known at once, whatever this says.
    public var http3HeadStart: Duration?
    /// Where `Alt-Svc` answers are kept (curl's `--alt-svc FILE`; ferryd's own file): with it, an
    /// origin whose answer offered HTTP/3 is tried over HTTP/3 first (TCP when QUIC does not
    /// connect), even without ``SessionConfiguration/HTTPVersionPreference/http3``; nil: none kept
    /// beyond the transport's life.
    public var altServices: AltServiceStore?
    /// Trust, identity, pins.
    public var tls = TLSSettings()
    /// HTTP/1.1 only, HTTP/2, or whatever ALPN picks.
    public var httpVersion: SessionConfiguration.HTTPVersionPreference = .automatic
    /// Which requests go through which proxy; nil (the default): the process environment's, read when
    /// the transport is made (``StandardTransport`` refuses a malformed one).
    public var proxies: ProxySettings?
    /// Asked about each new TLS connection's certificate chain after Ferry's own evaluation (the
    /// session delegate's server-trust challenge); nil: the evaluation decides.
    public var serverTrustEvaluator: (@Sendable (ServerTrustChallenge) async -> ServerTrustDisposition)?
    /// Credentials for a proxy that was given none (the session's credential store, URLSession's
    /// proxy protection spaces): asked once per request; nil answers send none.
    public var proxyCredential: (@Sendable (ProxyServer) -> Credential?)?
    /// Fixed addresses for `host:port` pairs, as curl's `--resolve HOST:PORT:ADDR` (the name is still
    /// sent in Host and SNI and checked against the certificate).
    public var resolve: [String: String] = [:]
    /// Connect only to IPv4 or only to IPv6 addresses (curl's `-4`, `-6`); nil: either.
    public var addressFamily: ConnectionSettings.AddressFamily?

    /// Every connection goes to this unix-domain socket instead of the URL's host and port (curl's
    /// `--unix-socket`); the URL still gives the Host field and the path. ferryd's control client uses it.
    public var unixSocketPath: String?

    /// Extra certificates to trust besides the system's (PEM), e.g. a test server's.
    public var additionalTrustRootsPEM: [String] {
        get { tls.additionalTrustRootsPEM }
        set { tls.additionalTrustRootsPEM = newValue }
    }

    /// The defaults.
    public init() {}

    /// The options a session configuration asks for.
    public init(_ configuration: SessionConfiguration) {
        idleTimeout = configuration.timeoutIntervalForRequest
        maximumConnectionsPerHost = configuration.httpMaximumConnectionsPerHost
        minimumTLSVersion = configuration.tlsMinimumSupportedProtocolVersion
        maximumTLSVersion = configuration.tlsMaximumSupportedProtocolVersion
        tls = configuration.tls
        httpVersion = configuration.httpVersionPreference
        proxies = configuration.proxy?.settings
    }

    /// The options for a task's recorded connection settings (explicit proxies: never the environment).
    public init(_ connection: ConnectionSettings) {
        tls = connection.tls
        minimumTLSVersion = connection.minimumTLSVersion ?? .tlsv12
        maximumTLSVersion = connection.maximumTLSVersion ?? .tlsv13
        httpVersion = connection.httpVersion ?? .automatic
        proxies = connection.proxies
        resolve = connection.resolve
        connectTimeout = connection.connectTimeout
        addressFamily = connection.addressFamily
    }

    /// What a background task records of these options: its proxies resolved now (the environment's,
    /// unless explicit), so ferryd connects as this process would.
    /// - Throws: ``FerryError`` when the environment's proxy variables are malformed.
    public func connectionSettings(environment: [String: String]) throws -> ConnectionSettings {
        var connection = ConnectionSettings()
        connection.tls = tls
        connection.minimumTLSVersion = minimumTLSVersion
        connection.maximumTLSVersion = maximumTLSVersion
        connection.httpVersion = httpVersion
        connection.proxies = try proxies ?? ProxySettings.fromEnvironment(environment)
        connection.resolve = resolve
        connection.connectTimeout = connectTimeout
        connection.addressFamily = addressFamily
        return connection
    }

    /// The address to connect to for `host` and `port`: a `resolve` entry, or the host itself.
    func address(host: String, port: Int) -> String {
        resolve["\(host.lowercased()):\(port)"] ?? host
    }
}
