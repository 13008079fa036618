public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

/// Apple's `URLProtocol`: a subclass answers requests itself instead of the network. This is how mocking
/// libraries and custom schemes work.
///
/// A session consults its configuration's `protocolClasses` in order, and ``URLSession/shared`` also the
/// classes given to ``registerClass(_:)`` (the latest first), as Apple's sessions do; the first class
/// whose `canInit` answers true loads the request. Subclasses of FoundationNetworking's `URLProtocol`
/// (from a library that imports FoundationNetworking only) may be listed in `protocolClasses` too.
/// Background sessions refuse custom protocol classes, as Apple's do.
///
/// The protocol reports through ``client``: a response, data, then finished or failed; or a redirect,
/// which the task delegate may change or refuse before the task loads the new request.
open class URLProtocol: NSObject, @unchecked Sendable {
    private let fields: Mutex<Fields>

    private struct Fields: @unchecked Sendable {
        var request: URLRequest
        var cachedResponse: CachedURLResponse?
        var client: (any URLProtocolClient)?
        var task: URLSessionTask?
    }

    /// A protocol object for `request`. The session makes these: an application does not.
    public required init(request: URLRequest, cachedResponse: CachedURLResponse?, client: (any URLProtocolClient)?) {
        fields = Mutex(Fields(request: request, cachedResponse: cachedResponse, client: client))
        super.init()
    }

    /// A protocol object for `task`'s current request (the initializer the session uses).
    public required convenience init(task: URLSessionTask, cachedResponse: CachedURLResponse?, client: (any URLProtocolClient)?) {
        let request = task.currentRequest ?? task.originalRequest ?? URLRequest(url: URL(fileURLWithPath: "/"))
        self.init(request: request, cachedResponse: cachedResponse, client: client)
        fields.withLock { $0.task = task }
    }

    /// Where the protocol reports what it loads.
    open var client: (any URLProtocolClient)? {
        get { fields.withLock { $0.client } }
        set { fields.withLock { $0.client = newValue } }
    }

    /// The request being loaded (the canonical form of the task's current request).
    open var request: URLRequest { fields.withLock { $0.request } }

    /// A cached response for the request; FerryFoundationNetworking hands protocols none.
    open var cachedResponse: CachedURLResponse? { fields.withLock { $0.cachedResponse } }

    /// The task being loaded, when the protocol was made for one.
    open var task: URLSessionTask? { fields.withLock { $0.task } }

    // MARK: For subclasses

    /// Whether this class loads `request`. Subclasses override it; this one answers false.
    open class func canInit(with request: URLRequest) -> Bool { false }

    /// Whether this class loads `task`: by default, whether it loads the task's current request.
    open class func canInit(with task: URLSessionTask) -> Bool {
        guard let request = task.currentRequest else { return false }
        return canInit(with: request)
    }

    /// The canonical form of `request` (the one the protocol loads): by default, `request` unchanged.
    open class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Whether two requests are the same for caching: by default, whether they are equal.
    open class func requestIsCacheEquivalent(_ a: URLRequest, to b: URLRequest) -> Bool { a == b }

    /// Starts loading ``request``; report through ``client``. Subclasses override it: this one fails
    /// the load, naming the class that did not.
    open func startLoading() {
        let error = URLError(
            .unsupportedURL,
            userInfo: [NSLocalizedDescriptionKey: "\(type(of: self)) does not override URLProtocol.startLoading()"]
        )
        client?.urlProtocol(self, didFailWithError: error)
    }

    /// Stops loading: the task was cancelled, redirected or finished. Subclasses override it.
    open func stopLoading() {}

    // MARK: Request properties

    /// The property stored under `key` in `request` (FoundationNetworking's store, whose limits it has).
    open class func property(forKey key: String, in request: URLRequest) -> Any? {
        FoundationNetworking.URLProtocol.property(forKey: key, in: request)
    }

    /// Stores `value` under `key` in `request`.
    open class func setProperty(_ value: Any, forKey key: String, in request: NSMutableURLRequest) {
        FoundationNetworking.URLProtocol.setProperty(value, forKey: key, in: request)
    }

    /// Removes the property stored under `key` in `request`.
    open class func removeProperty(forKey key: String, in request: NSMutableURLRequest) {
        FoundationNetworking.URLProtocol.removeProperty(forKey: key, in: request)
    }

    // MARK: Registration

    private static let registered = Mutex<[AnyClass]>([])

    /// Makes `protocolClass` (a subclass of this class) known to ``URLSession/shared``, ahead of the
    /// classes registered before it. False when it is not a `URLProtocol` subclass.
    @discardableResult
    open class func registerClass(_ protocolClass: AnyClass) -> Bool {
        guard protocolClass is URLProtocol.Type else { return false }
        registered.withLock { classes in
            classes.removeAll { $0 === protocolClass }
            classes.insert(protocolClass, at: 0)
        }
        return true
    }

    /// Forgets a class given to ``registerClass(_:)``.
    open class func unregisterClass(_ protocolClass: AnyClass) {
        registered.withLock { classes in classes.removeAll { $0 === protocolClass } }
    }

    /// The registered classes, the latest first.
    static var registeredClasses: [AnyClass] { registered.withLock { $0 } }
}

/// How a ``URLProtocol`` reports what it loads (Apple's `URLProtocolClient`). The session is the client:
/// a protocol calls these from any thread, in the order things happened.
public protocol URLProtocolClient: NSObjectProtocol {
    /// The request was redirected to `request`; `redirectResponse` is the response that said so.
    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse)
    /// The protocol's `cachedResponse` is valid: it is the answer.
    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse)
    /// The response's head.
    func urlProtocol(_ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy)
    /// Some of the body.
    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data)
    /// The body is complete.
    func urlProtocolDidFinishLoading(_ protocol: URLProtocol)
    /// The load failed.
    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error)
    /// The server asks for credentials: the task delegate answers through the challenge's sender.
    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge)
    /// A challenge given earlier no longer needs an answer.
    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge)
}
