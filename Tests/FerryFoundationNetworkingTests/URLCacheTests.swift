@testable import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// URLCache as a view of Ferry's cache: what a session stores is what the object shows, and what the
/// object stores a session serves.
@Suite struct URLCacheTests {
    private func get(_ session: URLSession, _ request: URLRequest) async -> (Int, (any Error)?) {
        let waiter = SamenessPrograms.Waiter<(Int, (any Error)?)>()
        session.dataTask(with: request) { data, _, error in waiter.finish((data?.count ?? -1, error)) }.resume()
        return await waiter.value()
    }

    @Test func anApplicationsCacheIsTheOneItsSessionsFillAndServeFrom() async throws {
        try await TestServer.withServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("urlcache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let cache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 10 << 20, diskPath: directory.path)
            #expect(cache.diskCapacity == 10 << 20)
            let configuration = URLSessionConfiguration.default
            configuration.urlCache = cache
            let session = URLSession(configuration: configuration)
            defer { session.finishTasksAndInvalidate() }
            let url = URL(string: server.url("/bytes/3000?seed=7&cache_control=max-age%3D600"))!
            #expect(await get(session, URLRequest(url: url)).0 == 3000)
            let stored = try #require(cache.cachedResponse(for: URLRequest(url: url)), "the session's response is in the object")
            #expect(stored.data.count == 3000)
            #expect((stored.response as? HTTPURLResponse)?.statusCode == 200)
            // Served from the cache: the server sends the body once.
            #expect(await get(session, URLRequest(url: url)).0 == 3000)
            #expect(server.counters.bodyBytesSent(path: "/bytes/3000") == 3000)

            // What the application stores, a session serves without the network.
            let other = URL(string: server.url("/bytes/10?seed=1"))!
            let response = HTTPURLResponse(url: other, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=600", "Content-Length": "5"])!
            cache.storeCachedResponse(CachedURLResponse(response: response, data: Data("stash".utf8)), for: URLRequest(url: other))
            var offline = URLRequest(url: other)
            offline.cachePolicy = .returnCacheDataDontLoad
            #expect(await get(session, offline).0 == 5)
            #expect(server.counters.bodyBytesSent(path: "/bytes/10") == 0)

            cache.removeAllCachedResponses()
            #expect(cache.cachedResponse(for: URLRequest(url: url)) == nil)
        }
    }

    @Test func sessionsOfOneEphemeralConfigurationShareItsCacheAndOthersDoNot() throws {
        let configuration = URLSessionConfiguration.ephemeral
        let cache = try #require(configuration.urlCache)
        #expect(cache !== URLCache.shared)
        #expect(cache.diskCapacity == 0, "an ephemeral cache writes nothing to disk")
        let copy = try #require(configuration.copy() as? URLSessionConfiguration)
        #expect(copy.urlCache === cache)
        #expect(URLSessionConfiguration.ephemeral.urlCache !== cache)
        #expect(URLSessionConfiguration.default.urlCache === URLCache.shared)
    }
}
