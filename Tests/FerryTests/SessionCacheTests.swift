import Ferry
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// The HTTP cache of in-process sessions (issue 17): each behaviour is checked by the requests the test
/// server actually received, and by the fetch type the task's metrics report.
@Suite struct SessionCacheTests {
    /// What one data task got.
    struct Fetched {
        var body: Data
        var status: Int
        var fetchTypes: [TransactionMetrics.FetchType]
        var error: FerryError?
    }

    /// A delegate that keeps the body, the metrics and the error, and answers willCacheResponse.
    final class Collector: DataDelegate, Sendable {
        let willCache: @Sendable (CachedResponse) -> CachedResponse?
        let state = Mutex<(body: Data, metrics: TaskMetrics?, error: FerryError?, status: Int)>((Data(), nil, nil, 0))

        init(willCache: @escaping @Sendable (CachedResponse) -> CachedResponse? = { $0 }) {
            self.willCache = willCache
        }

        func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
            state.withLock { $0.status = response.statusCode }
            return .allow
        }

        func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
            state.withLock { $0.body.append(data) }
        }

        func session(_ session: Session, dataTask: DataTask, willCacheResponse proposed: CachedResponse) async
            -> CachedResponse?
        { willCache(proposed) }

        func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
            state.withLock { $0.metrics = metrics }
        }

        func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
            state.withLock { $0.error = error }
        }
    }

    /// A default configuration whose disk cache is a fresh directory (not the user's).
    func configuration(_ directory: URL, memory: Int = 1 << 20) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.urlCache = .init(memoryCapacity: memory, diskCapacity: 10 << 20, directory: directory.path)
        configuration.httpShouldSetCookies = false
        return configuration
    }

    func fetch(
        _ session: Session,
        _ url: String,
        method: String = "GET",
        headers: [(String, String)] = [],
        policy: Request.CachePolicy = .useProtocolCachePolicy,
        willCache: @escaping @Sendable (CachedResponse) -> CachedResponse? = { $0 }
    ) async -> Fetched {
        var request = request(url)
        request.method = method
        request.cachePolicy = policy
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let collector = Collector(willCache: willCache)
        let task = session.dataTask(with: request)
        task.delegate = collector
        task.resume()
        await task.waitUntilFinished()
        return collector.state.withLock { state in
            Fetched(
                body: state.body,
                status: state.status,
                fetchTypes: state.metrics?.transactionMetrics.map(\.resourceFetchType) ?? [],
                error: state.error
            )
        }
    }

    /// Runs `body` with a server and a session whose cache lives in a temporary directory.
    func withCachingSession(
        memory: Int = 1 << 20,
        _ body: (TestServer, Session, URL) async throws -> Void
    ) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestServer.withServer { server in
            let session = try makeSession(configuration(directory, memory: memory), trusting: server)
            defer { session.invalidateAndCancel() }
            try await body(server, session, directory)
        }
    }

    @Test func aFreshResponseIsServedWithoutAskingTheServer() async throws {
        try await withCachingSession { server, session, _ in
            let url = server.url("/bytes/3000?seed=4&cache_control=max-age%3D86400")
            let first = await fetch(session, url)
            let second = await fetch(session, url)
            #expect(server.counters.requests(path: "/bytes/3000") == 1)
            #expect(first.fetchTypes == [.networkLoad])
            #expect(second.fetchTypes == [.localCache])
            #expect(second.body == first.body && second.body.count == 3000 && second.status == 200)
        }
    }

    @Test func expiresGivesFreshnessAndAPastExpiresIsValidated() async throws {
        try await withCachingSession { server, session, _ in
            let fresh = server.url("/bytes/100?seed=1&expires=120")
            _ = await fetch(session, fresh)
            #expect(await fetch(session, fresh).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/100") == 1)

            // Expired: asked again with If-None-Match; the 304 serves the stored body.
            let stale = server.url("/bytes/200?seed=1&expires=-10")
            let first = await fetch(session, stale)
            let second = await fetch(session, stale)
            #expect(server.counters.requests(path: "/bytes/200") == 2)
            #expect(second.fetchTypes == [.revalidated])
            #expect(second.status == 200 && second.body == first.body && second.body.count == 200)
        }
    }

    @Test func lastModifiedAloneGivesHeuristicFreshness() async throws {
        try await withCachingSession { server, session, _ in
            // /bytes sends Last-Modified (long ago) and no Cache-Control: 10 % of that age is fresh.
            let url = server.url("/bytes/500?seed=2")
            _ = await fetch(session, url)
            #expect(await fetch(session, url).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/500") == 1)
        }
    }

    @Test func noStoreIsNeverStoredAndNoCacheIsAlwaysValidated() async throws {
        try await withCachingSession { server, session, _ in
            let noStore = server.url("/bytes/10?cache_control=no-store")
            _ = await fetch(session, noStore)
            #expect(await fetch(session, noStore).fetchTypes == [.networkLoad])
            #expect(server.counters.requests(path: "/bytes/10") == 2)
            #expect(session.cache?.cachedResponses(for: URL(string: noStore)!).isEmpty == true)

            let noCache = server.url("/bytes/11?cache_control=no-cache%2C%20max-age%3D600")
            _ = await fetch(session, noCache)
            #expect(await fetch(session, noCache).fetchTypes == [.revalidated])
            #expect(await fetch(session, noCache).fetchTypes == [.revalidated])
            #expect(server.counters.requests(path: "/bytes/11") == 3)
        }
    }

    @Test func aChangedResourceReplacesTheStoredOne() async throws {
        try await withCachingSession { server, session, _ in
            // change_after=1: every request gets a new version, so validation brings a 200 with it.
            let url = server.url("/bytes/64?seed=3&cache_control=max-age%3D0&change_after=1")
            let first = await fetch(session, url)
            let second = await fetch(session, url)
            #expect(second.fetchTypes == [.networkLoad])
            #expect(second.body != first.body)
            let stored = try #require(session.cache?.cachedResponse(for: URL(string: url)!))
            #expect(stored.data == second.body)
            #expect(server.counters.requests(path: "/bytes/64") == 2)
        }
    }

    @Test func mustRevalidateRefusesStaleUseThatMaxStaleWouldAllow() async throws {
        try await withCachingSession { server, session, _ in
            let lenient = server.url("/bytes/20?cache_control=max-age%3D0")
            _ = await fetch(session, lenient)
            let stale = await fetch(session, lenient, headers: [("Cache-Control", "max-stale=3600")])
            #expect(stale.fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/20") == 1)

            let strict = server.url("/bytes/21?cache_control=max-age%3D0%2C%20must-revalidate")
            _ = await fetch(session, strict)
            let validated = await fetch(session, strict, headers: [("Cache-Control", "max-stale=3600")])
            #expect(validated.fetchTypes == [.revalidated])
            #expect(server.counters.requests(path: "/bytes/21") == 2)
        }
    }

    @Test func privateResponsesAreKeptByThisPrivateCache() async throws {
        try await withCachingSession { server, session, _ in
            let url = server.url("/bytes/30?cache_control=private%2C%20max-age%3D86400")
            _ = await fetch(session, url)
            #expect(await fetch(session, url).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/30") == 1)
        }
    }

    @Test func varyKeepsOneEntryPerVariant() async throws {
        try await withCachingSession { server, session, _ in
            let url = server.url("/echo?cache_control=max-age%3D86400&vary=Accept-Language")
            let english = await fetch(session, url, headers: [("Accept-Language", "en")])
            let french = await fetch(session, url, headers: [("Accept-Language", "fr")])
            let englishAgain = await fetch(session, url, headers: [("Accept-Language", "en")])
            let frenchAgain = await fetch(session, url, headers: [("Accept-Language", "fr")])
            #expect(server.counters.requests(path: "/echo") == 2)
            #expect(englishAgain.fetchTypes == [.localCache] && frenchAgain.fetchTypes == [.localCache])
            #expect(englishAgain.body == english.body && frenchAgain.body == french.body)
            #expect(english.body != french.body)
            #expect(session.cache?.cachedResponses(for: URL(string: url)!).count == 2)
        }
    }

    @Test func anUnsafeRequestInvalidatesWhatItChanged() async throws {
        try await withCachingSession { server, session, _ in
            let url = server.url("/echo?cache_control=max-age%3D86400")
            _ = await fetch(session, url)
            #expect(await fetch(session, url).fetchTypes == [.localCache])
            _ = await fetch(session, url, method: "POST")
            #expect(await fetch(session, url).fetchTypes == [.networkLoad])
            #expect(server.counters.requests(path: "/echo") == 3)
        }
    }

    @Test func theFourRequestCachePolicies() async throws {
        try await withCachingSession { server, session, _ in
            let url = server.url("/bytes/40?cache_control=max-age%3D0")
            _ = await fetch(session, url)
            // Ignoring the cache: the network, without conditionals.
            #expect(await fetch(session, url, policy: .reloadIgnoringLocalCacheData).fetchTypes == [.networkLoad])
            #expect(server.counters.requests(path: "/bytes/40") == 2)
            // Stale, yet served whatever its age.
            #expect(await fetch(session, url, policy: .returnCacheDataElseLoad).fetchTypes == [.localCache])
            #expect(await fetch(session, url, policy: .returnCacheDataDontLoad).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/40") == 2)
            // The protocol's rules: stale, so validated.
            #expect(await fetch(session, url).fetchTypes == [.revalidated])
            #expect(server.counters.requests(path: "/bytes/40") == 3)

            // Nothing stored: load, or fail without a request.
            let absent = server.url("/bytes/41")
            #expect(await fetch(session, absent, policy: .returnCacheDataElseLoad).fetchTypes == [.networkLoad])
            let missing = server.url("/bytes/42")
            let refused = await fetch(session, missing, policy: .returnCacheDataDontLoad)
            #expect(refused.error?.code == .resourceUnavailable)
            #expect(server.counters.requests(path: "/bytes/42") == 0)
            // only-if-cached: 504, as RFC 9111 §5.2.1.7 and URLSession answer.
            let onlyIfCached = await fetch(session, missing, headers: [("Cache-Control", "only-if-cached")])
            #expect(onlyIfCached.error == nil && onlyIfCached.status == 504)
            #expect(server.counters.requests(path: "/bytes/42") == 0)
        }
    }

    @Test func theConfigurationsPolicyAppliesToRequestsThatKeepTheDefault() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = configuration(directory)
        configuration.requestCachePolicy = .returnCacheDataDontLoad
        try await TestServer.withServer { server in
            let session = try makeSession(configuration, trusting: server)
            defer { session.invalidateAndCancel() }
            let url = server.url("/bytes/90?cache_control=max-age%3D0")
            #expect(await fetch(session, url).error?.code == .resourceUnavailable)
            #expect(server.counters.requests(path: "/bytes/90") == 0)
            // A request's own policy wins; what it stores the configuration's then serves, stale as it is.
            #expect(await fetch(session, url, policy: .reloadIgnoringLocalCacheData).fetchTypes == [.networkLoad])
            #expect(await fetch(session, url).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/90") == 1)
        }
    }

    @Test func willCacheResponseMayRefuseOrChangeTheEntry() async throws {
        try await withCachingSession { server, session, directory in
            let refused = server.url("/bytes/50?cache_control=max-age%3D86400")
            _ = await fetch(session, refused, willCache: { _ in nil })
            let disk = ResponseCache(memoryCapacity: 0, diskCapacity: 10 << 20, directory: directory.path)
            #expect(disk.cachedResponses(for: URL(string: refused)!).isEmpty)
            #expect(await fetch(session, refused).fetchTypes == [.networkLoad])
            #expect(server.counters.requests(path: "/bytes/50") == 2)

            // Memory only: served from the cache, yet no file on disk.
            let memoryOnly = server.url("/bytes/51?cache_control=max-age%3D86400")
            _ = await fetch(session, memoryOnly) { proposed in
                var changed = proposed
                changed.storagePolicy = .allowedInMemoryOnly
                return changed
            }
            #expect(await fetch(session, memoryOnly).fetchTypes == [.localCache])
            #expect(server.counters.requests(path: "/bytes/51") == 1)
            #expect(disk.cachedResponses(for: URL(string: memoryOnly)!).isEmpty)
        }
    }

    @Test func aCachedRedirectIsFollowedWithoutAskingTheServer() async throws {
        try await withCachingSession { server, session, _ in
            // Each hop is its own entry: the 301 and the page it leads to. Both are fresh for a day, as in
            // every test here: a loaded machine has taken over a minute between two fetches.
            let url = server.url("/redirect/1?code=301&cache_control=max-age%3D86400&to=/bytes/60%3Fcache_control%3Dmax-age%253D86400")
            let first = await fetch(session, url)
            let second = await fetch(session, url)
            #expect(first.fetchTypes == [.networkLoad, .networkLoad])
            #expect(second.fetchTypes == [.localCache, .localCache])
            #expect(second.body.count == 60 && server.counters.requests(path: "/bytes/60") == 1)
        }
    }

    @Test func theDiskCacheOutlivesTheSession() async throws {
        try await withCachingSession(memory: 0) { server, session, directory in
            let url = server.url("/bytes/4096?seed=9&cache_control=max-age%3D86400")
            let first = await fetch(session, url)
            // Another cache over the same directory (another process, say) finds it.
            let other = ResponseCache(memoryCapacity: 0, diskCapacity: 10 << 20, directory: directory.path)
            let stored = try #require(other.cachedResponse(for: URL(string: url)!))
            #expect(stored.data == first.body && stored.statusCode == 200)
            #expect(other.currentDiskUsage > 4096)
            other.removeAllCachedResponses()
            #expect(other.currentDiskUsage == 0)
            #expect(await fetch(session, url).fetchTypes == [.networkLoad])
        }
    }
}
