import Ferry
import FerryCore
import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Apple's `URLCache` as a view of Ferry's RFC 9111 cache: what a session stores and serves is what this
/// object reads and writes.
///
/// - ``shared`` is the per-user cache default sessions use (`$XDG_CACHE_HOME/ferry/http` on disk).
/// - `URLCache(memoryCapacity:diskCapacity:diskPath:)` makes a cache of its own: a relative `diskPath`
///   is a directory under `$XDG_CACHE_HOME/ferry/`, an absolute one is used as it is. Sessions whose
///   configuration names it share it.
/// - An ephemeral configuration has a cache of its own in memory.
///
/// A session's cache must be one of these objects: this module declares its own class, as
/// FoundationNetworking's is not a view of Ferry's cache.
open class URLCache: NSObject, @unchecked Sendable {
    /// How a response may be stored.
    public typealias StoragePolicy = FoundationNetworking.URLCache.StoragePolicy

    /// The Ferry cache this object shows.
    private(set) var cache: ResponseCache

    init(cache: ResponseCache) {
        self.cache = cache
        super.init()
    }

    /// A cache of its own with these capacities; `diskPath` as described above (nil: the per-user
    /// directory's own cache).
    public convenience init(memoryCapacity: Int, diskCapacity: Int, diskPath path: String?) {
        self.init(cache: Self.responseCache(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, path: path))
    }

    /// A cache of its own with these capacities in `directory` (nil: the per-user directory).
    public convenience init(memoryCapacity: Int, diskCapacity: Int, directory: URL? = nil) {
        self.init(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, diskPath: directory?.path)
    }

    private static func responseCache(memoryCapacity: Int, diskCapacity: Int, path: String?) -> ResponseCache {
        var directory = path
        if let relative = path, !relative.hasPrefix("/") {
            let base = ResponseCache.defaultDirectory(ProcessInfo.processInfo.environment).map { ($0 as NSString).deletingLastPathComponent }
            directory = base.map { $0 + "/" + relative }
        }
        return ResponseCache.forConfiguration(.init(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory))
    }

    private static let sharedCache: URLCache = {
        let description = SessionConfiguration.default.urlCache ?? .init(memoryCapacity: 512 * 1024, diskCapacity: 10_000_000)
        return URLCache(cache: ResponseCache.forConfiguration(description))
    }()

    /// The per-user cache of default sessions.
    open class var shared: URLCache { sharedCache }

    // MARK: Capacities

    /// Bytes kept in memory at most. Setting it makes a new cache of that size (same directory) for
    /// sessions made afterwards; the entries in memory are not carried over.
    open var memoryCapacity: Int {
        get { cache.memoryCapacity }
        set { cache = Self.resized(cache, memory: newValue, disk: cache.diskCapacity) }
    }

    /// Bytes kept on disk at most. Setting it works as ``memoryCapacity``'s setter.
    open var diskCapacity: Int {
        get { cache.diskCapacity }
        set { cache = Self.resized(cache, memory: cache.memoryCapacity, disk: newValue) }
    }

    private static func resized(_ cache: ResponseCache, memory: Int, disk: Int) -> ResponseCache {
        guard let directory = cache.directory else { return ResponseCache(memoryCapacity: memory, diskCapacity: 0, directory: nil) }
        return ResponseCache.forConfiguration(.init(memoryCapacity: memory, diskCapacity: disk, directory: directory))
    }

    /// Bytes in memory now.
    open var currentMemoryUsage: Int { cache.currentMemoryUsage }
    /// Bytes on disk now.
    open var currentDiskUsage: Int { cache.currentDiskUsage }

    // MARK: Entries

    /// The stored response for `request` (its `Vary` fields matched), if any.
    open func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let url = request.url else { return nil }
        return cache.cachedResponse(for: url, headers: Self.headers(of: request)).map(FoundationBridge.cachedResponse)
    }

    /// Stores `cachedResponse` for `request` (an HTTP response only).
    open func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard let url = request.url, let response = FoundationBridge.ferryResponse(cachedResponse.response) else { return }
        let policy: CachedResponse.StoragePolicy =
            switch cachedResponse.storagePolicy {
            case .allowed: .allowed
            case .allowedInMemoryOnly: .allowedInMemoryOnly
            default: .notAllowed
            }
        guard policy != .notAllowed else { return }
        let now = Date()
        let vary = HTTPCacheRules.varyValues(requestHeaders: Self.headers(of: request), responseHeaders: response.headers) ?? [:]
        cache.store(
            CachedResponse(
                url: url,
                statusCode: response.statusCode,
                headers: response.headers,
                data: cachedResponse.data,
                storagePolicy: policy,
                requestDate: now,
                responseDate: now,
                varyValues: vary
            )
        )
    }

    /// Removes what is stored for `request`'s URL.
    open func removeCachedResponse(for request: URLRequest) {
        guard let url = request.url else { return }
        cache.removeCachedResponses(for: url)
    }

    /// Removes every stored response.
    open func removeAllCachedResponses() {
        cache.removeAllCachedResponses()
    }

    /// Removes the responses stored since `date`. Ferry's cache keeps no index by date, so this removes
    /// every stored response (a cache can always be refilled; keeping one that should go cannot be undone).
    open func removeCachedResponses(since date: Date) {
        cache.removeAllCachedResponses()
    }

    /// Stores `cachedResponse` for `dataTask`'s current request.
    open func storeCachedResponse(_ cachedResponse: CachedURLResponse, for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        storeCachedResponse(cachedResponse, for: request)
    }

    /// The stored response for `dataTask`'s current request.
    open func getCachedResponse(for dataTask: URLSessionDataTask, completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void) {
        completionHandler(dataTask.currentRequest.flatMap { cachedResponse(for: $0) })
    }

    /// Removes what is stored for `dataTask`'s current request.
    open func removeCachedResponse(for dataTask: URLSessionDataTask) {
        guard let request = dataTask.currentRequest else { return }
        removeCachedResponse(for: request)
    }

    private static func headers(of request: URLRequest) -> Headers {
        var headers = Headers()
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
        return headers
    }
}
