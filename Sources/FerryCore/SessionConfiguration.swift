/// How a session behaves: URLSessionConfiguration's values, each with Apple's default.
///
/// A value type, so a session copies it when created and later changes do not reach a running session,
/// as with URLSession. Codable, so a background session's configuration can be stored by the daemon.
///
/// Which values are honoured today is listed in docs/CONFIGURATION.md; the engine issue fills them in.
public struct SessionConfiguration: Sendable, Hashable, Codable, CustomReflectable {
    /// The three kinds of session (SPEC S1.1).
    public enum Kind: Sendable, Hashable, Codable {
        /// Persistent cache, cookies and credentials on disk, shared with the shared session.
        case `default`
        /// Cache, cookies and credentials in memory only, private to the session.
        case ephemeral
        /// Transfers run by the `ferryd` daemon and survive this process; the identifier names them.
        case background(identifier: String)
    }

    /// Where cookies live.
    public enum CookieStorage: String, Sendable, Hashable, Codable {
        /// The per-user store on disk, shared by default sessions.
        case shared
        /// A store in memory, private to the session (ephemeral sessions).
        case sessionPrivate
        /// No cookies are stored or sent.
        case none
    }

    /// Where credentials live.
    public enum CredentialStorage: String, Sendable, Hashable, Codable {
        /// The per-user store, shared by default sessions.
        case shared
        /// In memory, private to the session.
        case sessionPrivate
        /// None: every challenge goes to the delegate.
        case none
    }

    /// Which cookies are accepted (HTTPCookie.AcceptPolicy).
    public enum CookieAcceptPolicy: String, Sendable, Hashable, Codable {
        /// Accept every cookie.
        case always
        /// Accept none.
        case never
        /// Accept cookies only from the domain of the main document (Apple's default).
        case onlyFromMainDocumentDomain
    }

    /// Which HTTP versions a connection may speak.
    public enum HTTPVersionPreference: String, Sendable, Hashable, Codable {
        /// HTTP/1.1 for http://; over TLS whatever the server picks by ALPN.
        case automatic
        /// HTTP/1.1 only (curl's `--http1.1`).
        case http1Only
        /// HTTP/2 over TLS (curl's `--http2`); http:// stays HTTP/1.1.
        case http2
        /// HTTP/3 over QUIC only (curl's `--http3-only`): https URLs, no proxy; http:// is refused.
        case http3Only
        /// HTTP/3 first for https (on the port an `Alt-Svc: h3` named, else the URL's), HTTP/2 or 1.1
        /// over TCP when QUIC has not connected within 250 ms (RFC 8305's race) or through a proxy (curl's `--http3`).
        case http3
    }

    /// TLS protocol versions.
    public enum TLSVersion: String, Sendable, Hashable, Codable, Comparable {
        case tlsv10, tlsv11, tlsv12, tlsv13

        public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool {
            let order: [TLSVersion] = [.tlsv10, .tlsv11, .tlsv12, .tlsv13]
            return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
        }
    }

    /// The HTTP cache's place and size.
    public struct Cache: Sendable, Hashable, Codable {
        /// Bytes kept in memory; Apple's shared cache default is 512 KiB.
        public var memoryCapacity: Int
        /// Bytes kept on disk (0 for ephemeral sessions); Apple's shared default is 10 MB.
        public var diskCapacity: Int
        /// The directory of the disk cache; nil: the per-user default.
        public var directory: String?

        /// Creates a cache description.
        public init(memoryCapacity: Int, diskCapacity: Int, directory: String? = nil) {
            self.memoryCapacity = memoryCapacity
            self.diskCapacity = diskCapacity
            self.directory = directory
        }
    }

    /// An explicit proxy for every request of the session (except those its ``bypass`` list names);
    /// when nil, the environment's (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`, as curl
    /// reads them).
    public struct Proxy: Sendable, Hashable, Codable {
        /// The proxy protocol: `.http` (CONNECT for https), `.socks5` (names resolved here) or
        /// `.socks5h` (names resolved by the proxy).
        public typealias Kind = ProxyServer.Kind

        /// The protocol.
        public var kind: Kind
        /// The proxy's host.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// Hosts reached directly, as in `no_proxy`.
        public var bypass: [String]
        /// Credentials: Basic for an HTTP proxy, RFC 1929 for SOCKS5.
        public var username: String?
        /// See ``username``.
        public var password: String?

        /// A proxy.
        public init(
            kind: Kind,
            host: String,
            port: Int,
            bypass: [String] = [],
            username: String? = nil,
            password: String? = nil
        ) {
            self.kind = kind
            self.host = host
            self.port = port
            self.bypass = bypass
            self.username = username
            self.password = password
        }

        /// The routing this proxy means: every scheme through it, but for ``bypass``.
        public var settings: ProxySettings {
            let server = ProxyServer(
                kind: kind,
                host: host,
                port: port,
                username: username,
                password: password
            )
            return ProxySettings(all: server, bypass: bypass)
        }
    }

    /// The settings, in one copy-on-write box (``CopyOnWrite``): a task reads its session's
    /// configuration for every request. Encoded as the settings themselves (the same keys as before the
    /// box: stored background sessions read back).
    private var box: CopyOnWrite<Fields>

    private struct Fields: Sendable, Hashable, Codable {
        var kind: Kind
        var requestCachePolicy: Request.CachePolicy = .useProtocolCachePolicy
        var timeoutIntervalForRequest: Double = 60
        var timeoutIntervalForResource: Double = 7 * 24 * 3600
        var allowsCellularAccess: Bool = true
        var allowsExpensiveNetworkAccess: Bool = true
        var allowsConstrainedNetworkAccess: Bool = true
        var waitsForConnectivity: Bool = false
        var isDiscretionary: Bool = false
        var bandwidthLimit: Int64?
        var sessionSendsLaunchEvents: Bool = true
        var proxy: Proxy?
        var protocolHandlers: ProtocolHandlerList = []
        var tlsMinimumSupportedProtocolVersion: TLSVersion = .tlsv12
        var tlsMaximumSupportedProtocolVersion: TLSVersion = .tlsv13
        var tls: TLSSettings = TLSSettings()
        var httpVersionPreference: HTTPVersionPreference = .automatic
        var httpShouldUsePipelining: Bool = false
        var httpShouldSetCookies: Bool = true
        var httpCookieAcceptPolicy: CookieAcceptPolicy = .onlyFromMainDocumentDomain
        var httpAdditionalHeaders: Headers = Headers()
        var httpMaximumConnectionsPerHost: Int = 6
        var httpCookieStorage: CookieStorage
        var urlCredentialStorage: CredentialStorage
        var urlCache: Cache?

        init(kind: Kind) {
            self.kind = kind
            switch kind {
            case .default, .background:
                httpCookieStorage = .shared
                urlCredentialStorage = .shared
                urlCache = Cache(memoryCapacity: 512 * 1024, diskCapacity: 10_000_000)
            case .ephemeral:
                httpCookieStorage = .sessionPrivate
                urlCredentialStorage = .sessionPrivate
                urlCache = Cache(memoryCapacity: 512 * 1024, diskCapacity: 0)
            }
            if case .background = kind {
                waitsForConnectivity = true
            }
        }
    }

    /// Printed and dumped as its fields, as before they were boxed.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: box.value).children, displayStyle: .struct)
    }

    public init(from decoder: any Decoder) throws {
        box = CopyOnWrite(try Fields(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try box.value.encode(to: encoder)
    }

    /// The kind of session.
    public private(set) var kind: Kind {
        get { box.value.kind }
        _modify { yield &box.value.kind }
    }
    /// The background identifier, for background sessions.
    public var identifier: String? {
        if case .background(let identifier) = kind { return identifier }
        return nil
    }

    /// The cache policy of requests that do not set one; default `.useProtocolCachePolicy`.
    public var requestCachePolicy: Request.CachePolicy {
        get { box.value.requestCachePolicy }
        _modify { yield &box.value.requestCachePolicy }
    }
    /// Seconds without data before a request fails (idle timeout); default 60.
    public var timeoutIntervalForRequest: Double {
        get { box.value.timeoutIntervalForRequest }
        _modify { yield &box.value.timeoutIntervalForRequest }
    }
    /// Seconds a whole transfer may take, retries included; default 7 days.
    public var timeoutIntervalForResource: Double {
        get { box.value.timeoutIntervalForResource }
        _modify { yield &box.value.timeoutIntervalForResource }
    }
    /// May use a metered network, Linux's stand-in for cellular (NetworkManager's metered value, or
    /// `ferry daemon network --metered yes`); default true. False: a task waits while the network is
    /// metered (background sessions, and in-process ones with ``waitsForConnectivity``) or fails at once
    /// with ``FerryError/Code/notConnectedToInternet``. The request's own value is combined with this
    /// one: false on either side wins.
    public var allowsCellularAccess: Bool {
        get { box.value.allowsCellularAccess }
        _modify { yield &box.value.allowsCellularAccess }
    }
    /// May use an expensive network; on Linux the same as ``allowsCellularAccess`` (metered).
    public var allowsExpensiveNetworkAccess: Bool {
        get { box.value.allowsExpensiveNetworkAccess }
        _modify { yield &box.value.allowsExpensiveNetworkAccess }
    }
    /// May use a constrained (low-data) network. Linux has no such notion: only
    /// `ferry daemon network --constrained yes` makes the network constrained.
    public var allowsConstrainedNetworkAccess: Bool {
        get { box.value.allowsConstrainedNetworkAccess }
        _modify { yield &box.value.allowsConstrainedNetworkAccess }
    }
    /// In-process sessions: a task the network does not allow now (offline, or metered or constrained
    /// against its policy) waits, and its delegate hears taskIsWaitingForConnectivity once, instead of
    /// failing at once. Default false; background sessions always wait.
    public var waitsForConnectivity: Bool {
        get { box.value.waitsForConnectivity }
        _modify { yield &box.value.waitsForConnectivity }
    }
    /// Background sessions: let ferryd defer the tasks: they start after the others, and only on an
    /// unmetered network and, where power is known, on mains power (S6.10). Default false.
    public var isDiscretionary: Bool {
        get { box.value.isDiscretionary }
        _modify { yield &box.value.isDiscretionary }
    }
    /// All the session's transfers together at most this many bytes a second, shared by priority; nil
    /// (the default): unlimited. In a background session each task gets it as its own limit (ferryd's
    /// daemon-wide limit is `ferry limit --global`).
    public var bandwidthLimit: Int64? {
        get { box.value.bandwidthLimit }
        _modify { yield &box.value.bandwidthLimit }
    }
    /// Launch the client when a background session has events and no client is attached; default true.
    public var sessionSendsLaunchEvents: Bool {
        get { box.value.sessionSendsLaunchEvents }
        _modify { yield &box.value.sessionSendsLaunchEvents }
    }
    /// An explicit proxy; default nil (the environment's).
    public var proxy: Proxy? {
        get { box.value.proxy }
        _modify { yield &box.value.proxy }
    }
    /// Loaders for requests the program handles itself, consulted in order before the network
    /// (URLSessionConfiguration.protocolClasses; ``ProtocolHandler``). In-process sessions only: a
    /// background configuration with handlers fails ``validate()``.
    public var protocolHandlers: ProtocolHandlerList {
        get { box.value.protocolHandlers }
        _modify { yield &box.value.protocolHandlers }
    }
    /// The lowest TLS version accepted; default TLS 1.2.
    public var tlsMinimumSupportedProtocolVersion: TLSVersion {
        get { box.value.tlsMinimumSupportedProtocolVersion }
        _modify { yield &box.value.tlsMinimumSupportedProtocolVersion }
    }
    /// The highest TLS version offered; default TLS 1.3.
    public var tlsMaximumSupportedProtocolVersion: TLSVersion {
        get { box.value.tlsMaximumSupportedProtocolVersion }
        _modify { yield &box.value.tlsMaximumSupportedProtocolVersion }
    }
    /// Extra trust roots, a client identity, public-key pins, or (explicitly) no verification.
    public var tls: TLSSettings {
        get { box.value.tls }
        _modify { yield &box.value.tls }
    }
    /// Which HTTP versions to use over TLS; default: what the server offers (ALPN).
    public var httpVersionPreference: HTTPVersionPreference {
        get { box.value.httpVersionPreference }
        _modify { yield &box.value.httpVersionPreference }
    }
    /// Send HTTP/1.1 requests pipelined; default false.
    public var httpShouldUsePipelining: Bool {
        get { box.value.httpShouldUsePipelining }
        _modify { yield &box.value.httpShouldUsePipelining }
    }
    /// Send and store cookies; default true.
    public var httpShouldSetCookies: Bool {
        get { box.value.httpShouldSetCookies }
        _modify { yield &box.value.httpShouldSetCookies }
    }
    /// Which cookies to accept; default `.onlyFromMainDocumentDomain`.
    public var httpCookieAcceptPolicy: CookieAcceptPolicy {
        get { box.value.httpCookieAcceptPolicy }
        _modify { yield &box.value.httpCookieAcceptPolicy }
    }
    /// Headers added to every request that does not already have a field of the same name.
    public var httpAdditionalHeaders: Headers {
        get { box.value.httpAdditionalHeaders }
        _modify { yield &box.value.httpAdditionalHeaders }
    }
    /// Connections to one host at a time; default 6.
    public var httpMaximumConnectionsPerHost: Int {
        get { box.value.httpMaximumConnectionsPerHost }
        _modify { yield &box.value.httpMaximumConnectionsPerHost }
    }
    /// ``httpCookieAcceptPolicy`` as a cookie jar takes it.
    public var cookieJarAcceptPolicy: CookieJar.AcceptPolicy {
        switch httpCookieAcceptPolicy {
        case .always: .always
        case .never: .never
        case .onlyFromMainDocumentDomain: .onlyFromMainDocumentDomain
        }
    }
    /// Where cookies live: shared for default sessions, private for ephemeral ones.
    public var httpCookieStorage: CookieStorage {
        get { box.value.httpCookieStorage }
        _modify { yield &box.value.httpCookieStorage }
    }
    /// Where credentials live: shared for default sessions, private for ephemeral ones.
    public var urlCredentialStorage: CredentialStorage {
        get { box.value.urlCredentialStorage }
        _modify { yield &box.value.urlCredentialStorage }
    }
    /// The HTTP cache: memory and disk for default sessions, memory only for ephemeral ones; nil: none.
    public var urlCache: Cache? {
        get { box.value.urlCache }
        _modify { yield &box.value.urlCache }
    }

    private init(kind: Kind) {
        box = CopyOnWrite(Fields(kind: kind))
    }

    /// Persistent cache, cookies and credentials.
    public static var `default`: SessionConfiguration { SessionConfiguration(kind: .default) }

    /// Nothing written to disk; private to the session.
    public static var ephemeral: SessionConfiguration { SessionConfiguration(kind: .ephemeral) }

    /// Transfers run by `ferryd` under `identifier`; check it with ``validate()``.
    public static func background(identifier: String) -> SessionConfiguration {
        SessionConfiguration(kind: .background(identifier: identifier))
    }

    /// Whether `identifier` can name a background session: 1 to 255 printable ASCII characters (space to
    /// `~`) other than `/` and `%`. ASCII keeps a character one byte, so the limit is the same in the
    /// control API's schema (which counts characters) and in file names (which count bytes); without `%`
    /// an identifier reads the same before and after percent-decoding in the API's paths.
    public static func isValidBackgroundIdentifier(_ identifier: String) -> Bool {
        (1...255).contains(identifier.utf8.count)
            && identifier.utf8.allSatisfy {
                (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "%")
            }
    }

    /// Checks the values against each other.
    /// - Throws: ``FerryError`` (``FerryError/Code/invalidOperation`` or ``FerryError/Code/invalidHeader``)
    ///   saying which value to change.
    public func validate() throws {
        if case .background = kind, !protocolHandlers.isEmpty {
            throw FerryError(
                .invalidOperation,
                "background sessions cannot use protocol handlers: ferryd runs their transfers and cannot run this program's code (use a default session for requests a handler loads)"
            )
        }
        if case .background(let identifier) = kind {
            guard Self.isValidBackgroundIdentifier(identifier) else {
                throw FerryError(
                    .invalidOperation,
                    "a background identifier must be 1 to 255 printable ASCII characters other than '/' and '%', e.g. com.example.sync"
                )
            }
        }
        guard timeoutIntervalForRequest > 0, timeoutIntervalForResource > 0 else {
            throw FerryError(.invalidOperation, "timeouts must be positive numbers of seconds")
        }
        guard httpMaximumConnectionsPerHost >= 1 else {
            throw FerryError(.invalidOperation, "httpMaximumConnectionsPerHost must be at least 1")
        }
        guard tlsMinimumSupportedProtocolVersion <= tlsMaximumSupportedProtocolVersion else {
            throw FerryError(.invalidOperation, "the minimum TLS version is above the maximum")
        }
        if let bandwidthLimit, bandwidthLimit <= 0 {
            throw FerryError(.invalidOperation, "bandwidthLimit is bytes a second, above 0; nil for none")
        }
        if case .background = kind, httpShouldSetCookies, httpCookieStorage == .sessionPrivate {
            // ferryd applies a cookie file; a store in this process's memory cannot travel there.
            throw FerryError(
                .invalidOperation,
                "a background session keeps cookies in the shared store, whose file ferryd applies; set httpCookieStorage to .shared or .none"
            )
        }
        if let urlCache, urlCache.memoryCapacity < 0 || urlCache.diskCapacity < 0 {
            throw FerryError(.invalidOperation, "cache capacities cannot be negative")
        }
        try httpAdditionalHeaders.validate()
        guard !httpShouldUsePipelining else {
            // Refused rather than ignored: HTTP/1.1 pipelining is broken in too many servers and proxies to
            // turn on, and HTTP/2 (which Ferry speaks over TLS) multiplexes instead.
            throw FerryError(
                .invalidOperation,
                "HTTP/1.1 pipelining is not supported (HTTP/2 multiplexes requests instead); leave httpShouldUsePipelining false"
            )
        }
    }

    /// The headers of `request` completed with ``httpAdditionalHeaders`` where the request lacks a field
    /// of the same name (the request's own fields win), then with ``defaultHeaders`` where neither has
    /// one (some servers refuse a request without a User-Agent).
    public func applyingAdditionalHeaders(to request: Request) -> Request {
        // (Names compared in place: a set of lowercased names cost a small request several strings.)
        let given = request.headers
        var request = request
        // Room for every field added here, and the one a data task adds after (Accept-Encoding): the
        // fields grew twice for a plain GET.
        request.headers.reserveCapacity(given.fields.count + httpAdditionalHeaders.fields.count + Self.defaultHeaders.fields.count + 1)
        for field in httpAdditionalHeaders where !given.contains(field.name) {
            request.headers.add(name: field.name, value: field.value)
        }
        for field in Self.defaultHeaders where !given.contains(field.name) && !httpAdditionalHeaders.contains(field.name) {
            request.headers.add(name: field.name, value: field.value)
        }
        return request
    }

    /// What the library sends when neither the request nor ``httpAdditionalHeaders`` says otherwise:
    /// `User-Agent: Ferry/VERSION` and `Accept: */*`.
    public static let defaultHeaders: Headers = {
        var headers = Headers()
        headers.add(name: "User-Agent", value: "Ferry/\(FerryVersion.current)")
        headers.add(name: "Accept", value: "*/*")
        return headers
    }()
}
