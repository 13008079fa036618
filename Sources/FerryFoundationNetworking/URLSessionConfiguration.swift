import Ferry
import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A session's settings, as Apple's `URLSessionConfiguration`. A session copies its configuration when
/// it is made; later changes to this object do not reach it.
///
/// Every property is honoured, or refused: a task of a session whose configuration asks for something
/// Ferry does not do fails when resumed with `URLError.unsupportedURL` naming the property
/// (docs/FOUNDATION_NETWORKING.md lists them).
open class URLSessionConfiguration: NSObject, NSCopying, @unchecked Sendable {
    enum Kind {
        case `default`, ephemeral, background
    }

    let kind: Kind

    init(kind: Kind, identifier: String?) {
        self.kind = kind
        self.identifier = identifier
        super.init()
        let defaults = SessionConfiguration.default
        timeoutIntervalForRequest = defaults.timeoutIntervalForRequest
        timeoutIntervalForResource = defaults.timeoutIntervalForResource
        httpMaximumConnectionsPerHost = defaults.httpMaximumConnectionsPerHost
        waitsForConnectivity = kind == .background
        // The shared (per-user) stores; ``ephemeral`` gives its configuration stores of its own, and a
        // copy takes its original's.
        httpCookieStorage = HTTPCookieStorage.shared
        urlCredentialStorage = URLCredentialStorage.shared
        urlCache = URLCache.shared
    }

    /// A configuration with a persistent cache, cookies and credentials.
    open class var `default`: URLSessionConfiguration { URLSessionConfiguration(kind: .default, identifier: nil) }

    /// A configuration that writes nothing to disk: cache, cookies and credentials stay in the session.
    open class var ephemeral: URLSessionConfiguration {
        let made = URLSessionConfiguration(kind: .ephemeral, identifier: nil)
        // Stores of its own, in memory, shared by its copies and the sessions made from them.
        made.httpCookieStorage = HTTPCookieStorage(store: CookieStore())
        made.urlCredentialStorage = URLCredentialStorage(store: CredentialStore())
        let memory = SessionConfiguration.ephemeral.urlCache?.memoryCapacity ?? 512 * 1024
        made.urlCache = URLCache(cache: ResponseCache(memoryCapacity: memory, diskCapacity: 0, directory: nil))
        return made
    }

    /// A configuration whose download tasks and uploads from a file run in ferryd, and go on while
    /// this process is suspended, killed or crashed (docs/BACKGROUND.md). A session made again with the
    /// same identifier re-attaches and receives the events that happened meanwhile.
    open class func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        URLSessionConfiguration(kind: .background, identifier: identifier)
    }

    /// The background session's identifier; nil for other kinds.
    public let identifier: String?
    /// How requests use the cache, unless a request says otherwise.
    open var requestCachePolicy: NSURLRequest.CachePolicy = .useProtocolCachePolicy
    /// How long a request may wait for more data, in seconds.
    open var timeoutIntervalForRequest: TimeInterval = 60
    /// How long a whole transfer may take, in seconds.
    open var timeoutIntervalForResource: TimeInterval = 604_800
    /// A hint of the traffic's kind; Linux has no such classes and Ferry sends every kind alike.
    open var networkServiceType: NSURLRequest.NetworkServiceType = .default
    /// Whether requests may use a metered network (ferry's `NetworkPolicy`).
    open var allowsCellularAccess = true
    /// Whether requests may use an expensive (metered) network.
    open var allowsExpensiveNetworkAccess = true
    /// Whether requests may use a constrained (low data) network.
    open var allowsConstrainedNetworkAccess = true
    /// Whether a task waits for a network it may use instead of failing at once.
    open var waitsForConnectivity = false
    /// Whether ferryd may hold background tasks for good conditions (on mains power, unmetered).
    open var isDiscretionary = false
    /// Has no meaning on Linux: must stay nil.
    open var sharedContainerIdentifier: String?
    /// Whether ferryd runs this user's launch command for a background session's events
    /// (`ferry launch-command`; docs/BACKGROUND.md), Linux's handleEventsForBackgroundURLSession.
    open var sessionSendsLaunchEvents = true
    /// An explicit proxy: `HTTPEnable`/`HTTPProxy`/`HTTPPort`, `HTTPSEnable`/`HTTPSProxy`/`HTTPSPort`,
    /// `SOCKSEnable`/`SOCKSProxy`/`SOCKSPort`, `ExceptionsList`. HTTP and HTTPS must name the same proxy.
    open var connectionProxyDictionary: [AnyHashable: Any]?
    /// Ferry does not pipeline; true is refused.
    open var httpShouldUsePipelining = false
    /// Whether requests carry stored cookies and responses' cookies are stored.
    open var httpShouldSetCookies = true
    /// Which cookies are accepted.
    open var httpCookieAcceptPolicy: HTTPCookie.AcceptPolicy = .onlyFromMainDocumentDomain
    /// Fields added to every request that does not set them itself.
    open var httpAdditionalHeaders: [AnyHashable: Any]?
    /// Connections to one host at once.
    open var httpMaximumConnectionsPerHost = 6
    /// The cookie store: ``HTTPCookieStorage/shared`` (Ferry's per-user store) for default and
    /// background configurations, a store of its own in memory for an ephemeral one (shared by the
    /// sessions made from it and its copies), or nil (no cookies).
    open var httpCookieStorage: HTTPCookieStorage?
    /// The credential store: ``URLCredentialStorage/shared`` (Ferry's per-user store) for default and
    /// background configurations, a store of its own in memory for an ephemeral one, or nil.
    open var urlCredentialStorage: URLCredentialStorage?
    /// The HTTP cache: ``URLCache/shared`` (Ferry's per-user RFC 9111 cache) for default configurations,
    /// one of its own in memory for an ephemeral one, a `URLCache(memoryCapacity:diskCapacity:diskPath:)`
    /// of the application's, or nil (no cache).
    open var urlCache: URLCache?
    /// No meaning on Linux; kept as set.
    open var shouldUseExtendedBackgroundIdleMode = false

    /// How Apple's Multipath TCP would use several interfaces.
    public enum MultipathServiceType: Int, Sendable {
        /// One path (the default, and the only one Ferry offers).
        case none = 0
        /// Apple: move to another interface when one degrades.
        case handover = 1
        /// Apple: the interface with the lowest latency.
        case interactive = 2
        /// Apple: every interface at once.
        case aggregate = 3
    }

    /// `.none` only: Ferry does not use Multipath TCP, and another value is refused when a session is
    /// made (the session's tasks fail with a message that says so).
    open var multipathServiceType: MultipathServiceType = .none
    /// false only: Ferry resolves names with the system resolver, which does not validate DNSSEC for
    /// it, so true is refused when a session is made rather than left unenforced.
    open var requiresDNSSECValidation = false
    /// The lowest TLS version offered (TLS 1.2 by default). DTLS versions are refused.
    open var tlsMinimumSupportedProtocolVersion: tls_protocol_version_t = .TLSv12
    /// The highest TLS version offered (TLS 1.3 by default). DTLS versions are refused.
    open var tlsMaximumSupportedProtocolVersion: tls_protocol_version_t = .TLSv13
    /// `URLProtocol` subclasses that load requests instead of the network, consulted in order (this
    /// module's, or FoundationNetworking's). Empty by default: the built-in schemes need no class here.
    /// A background session refuses any, as Apple's does.
    open var protocolClasses: [AnyClass]? = []

    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = URLSessionConfiguration(kind: kind, identifier: identifier)
        copy.requestCachePolicy = requestCachePolicy
        copy.timeoutIntervalForRequest = timeoutIntervalForRequest
        copy.timeoutIntervalForResource = timeoutIntervalForResource
        copy.networkServiceType = networkServiceType
        copy.allowsCellularAccess = allowsCellularAccess
        copy.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        copy.allowsConstrainedNetworkAccess = allowsConstrainedNetworkAccess
        copy.waitsForConnectivity = waitsForConnectivity
        copy.isDiscretionary = isDiscretionary
        copy.sharedContainerIdentifier = sharedContainerIdentifier
        copy.sessionSendsLaunchEvents = sessionSendsLaunchEvents
        copy.connectionProxyDictionary = connectionProxyDictionary
        copy.httpShouldUsePipelining = httpShouldUsePipelining
        copy.httpShouldSetCookies = httpShouldSetCookies
        copy.httpCookieAcceptPolicy = httpCookieAcceptPolicy
        copy.httpAdditionalHeaders = httpAdditionalHeaders
        copy.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
        copy.httpCookieStorage = httpCookieStorage
        copy.urlCredentialStorage = urlCredentialStorage
        copy.urlCache = urlCache
        copy.shouldUseExtendedBackgroundIdleMode = shouldUseExtendedBackgroundIdleMode
        copy.multipathServiceType = multipathServiceType
        copy.requiresDNSSECValidation = requiresDNSSECValidation
        copy.protocolClasses = protocolClasses
        copy.tlsMinimumSupportedProtocolVersion = tlsMinimumSupportedProtocolVersion
        copy.tlsMaximumSupportedProtocolVersion = tlsMaximumSupportedProtocolVersion
        return copy
    }

    /// Ferry's configuration for this one, or why it cannot be honoured.
    func ferryConfiguration() -> Result<SessionConfiguration, URLError> {
        var ferry: SessionConfiguration
        switch kind {
        case .default: ferry = .default
        case .ephemeral: ferry = .ephemeral
        case .background: ferry = .background(identifier: identifier ?? "")
        }
        func refuse(_ what: String) -> Result<SessionConfiguration, URLError> {
            .failure(URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "URLSessionConfiguration.\(what)"]))
        }
        ferry.requestCachePolicy = FoundationBridge.cachePolicy(requestCachePolicy)
        ferry.timeoutIntervalForRequest = timeoutIntervalForRequest
        ferry.timeoutIntervalForResource = timeoutIntervalForResource
        ferry.allowsCellularAccess = allowsCellularAccess
        ferry.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        ferry.allowsConstrainedNetworkAccess = allowsConstrainedNetworkAccess
        ferry.waitsForConnectivity = waitsForConnectivity
        ferry.isDiscretionary = isDiscretionary
        ferry.sessionSendsLaunchEvents = sessionSendsLaunchEvents
        ferry.httpShouldSetCookies = httpShouldSetCookies
        switch httpCookieAcceptPolicy {
        case .always: ferry.httpCookieAcceptPolicy = .always
        case .never: ferry.httpCookieAcceptPolicy = .never
        case .onlyFromMainDocumentDomain: ferry.httpCookieAcceptPolicy = .onlyFromMainDocumentDomain
        @unknown default: return refuse("httpCookieAcceptPolicy (\(httpCookieAcceptPolicy.rawValue))")
        }
        ferry.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
        func version(_ apple: tls_protocol_version_t) -> SessionConfiguration.TLSVersion? {
            switch apple {
            case .TLSv10: .tlsv10
            case .TLSv11: .tlsv11
            case .TLSv12: .tlsv12
            case .TLSv13: .tlsv13
            default: nil
            }
        }
        guard let lowest = version(tlsMinimumSupportedProtocolVersion), let highest = version(tlsMaximumSupportedProtocolVersion) else {
            return refuse("tlsMinimum/MaximumSupportedProtocolVersion: DTLS is not a version Ferry speaks over TCP")
        }
        guard lowest <= highest else {
            return refuse("tlsMinimumSupportedProtocolVersion is above tlsMaximumSupportedProtocolVersion")
        }
        ferry.tlsMinimumSupportedProtocolVersion = lowest
        ferry.tlsMaximumSupportedProtocolVersion = highest
        if httpShouldUsePipelining { return refuse("httpShouldUsePipelining = true: Ferry does not pipeline requests") }
        if sharedContainerIdentifier != nil { return refuse("sharedContainerIdentifier: Linux has no app containers") }
        if multipathServiceType != .none {
            return refuse("multipathServiceType: Ferry does not use Multipath TCP; leave it .none")
        }
        if requiresDNSSECValidation {
            return refuse("requiresDNSSECValidation = true: Ferry's resolver (the system's) does not validate DNSSEC")
        }
        for protocolClass in protocolClasses ?? [] {
            guard URLProtocolLoader.ProtocolClass(protocolClass) != nil else {
                return refuse("protocolClasses: \(protocolClass) is not a subclass of URLProtocol")
            }
            if kind == .background {
                return refuse("protocolClasses: background sessions run in ferryd and cannot use URLProtocol subclasses (as on Apple's platforms)")
            }
        }
        if let fields = httpAdditionalHeaders {
            for (name, value) in fields {
                guard let name = name as? String else { return refuse("httpAdditionalHeaders: a name that is not a String") }
                ferry.httpAdditionalHeaders.add(name: name, value: "\(value)")
            }
        }
        switch httpCookieStorage {
        case nil: ferry.httpCookieStorage = .none
        case let storage? where storage === HTTPCookieStorage.shared: ferry.httpCookieStorage = .shared
        case .some:
            // A store of its own (an ephemeral configuration's): the session is given that store.
            guard kind != .background else {
                return refuse("httpCookieStorage: a background session's cookies are ferryd's (HTTPCookieStorage.shared) or none")
            }
            ferry.httpCookieStorage = .sessionPrivate
        }
        switch urlCredentialStorage {
        case nil: ferry.urlCredentialStorage = .none
        case let storage? where storage === URLCredentialStorage.shared: ferry.urlCredentialStorage = .shared
        case .some:
            // A store of its own (an ephemeral configuration's): the session is given that store.
            guard kind != .background else {
                return refuse("urlCredentialStorage: a background session's credentials are ferryd's (URLCredentialStorage.shared) or none")
            }
            ferry.urlCredentialStorage = .sessionPrivate
        }
        // A URLCache object is a view of a Ferry cache, which the session is given (URLSession.init).
        if let cache = urlCache {
            ferry.urlCache = .init(memoryCapacity: cache.memoryCapacity, diskCapacity: cache.diskCapacity, directory: cache.cache.directory)
        } else {
            ferry.urlCache = nil
        }
        if let proxies = connectionProxyDictionary {
            switch FoundationBridge.proxy(proxies) {
            case .success(let proxy): ferry.proxy = proxy
            case .failure(let why): return refuse("connectionProxyDictionary: \(why)")
            }
        }
        return .success(ferry)
    }
}
