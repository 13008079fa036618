import FerryCore
import FerryTestServer
import Foundation
import Testing

/// `ferry get --cache DIR`: a fresh entry is served without a request, a stale one is revalidated, and
/// `--json` says which (issue 17).
@Suite struct CacheCommandTests {
    struct Report: Decodable {
        var fetchType: String
        var bytes: Int64
    }

    func report(_ run: CLIRunner.Run) throws -> Report {
        try #require(JSONDecoder().decode([Report].self, from: Data(run.stdout.utf8)).first)
    }

    @Test func freshEntriesAreServedAndStaleOnesRevalidated() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let fresh = server.url("/bytes/70000?seed=5&cache_control=max-age%3D86400")
            var fetchTypes: [String] = []
            for name in ["a", "b"] {
                let run = try await cli.run(["get", "--cache", "http-cache", "--json", fresh, "-o", name])
                #expect(run.status == 0, "\(run.stderr)")
                fetchTypes.append(try report(run).fetchType)
                #expect(try fileSHA256(directory + "/" + name) == bytesSHA256(70000, seed: 5))
            }
            #expect(fetchTypes == ["network", "localCache"])
            #expect(server.counters.requests(path: "/bytes/70000") == 1)

            let stale = server.url("/bytes/800?seed=6&cache_control=max-age%3D0")
            fetchTypes = []
            for name in ["c", "d"] {
                let run = try await cli.run(["get", "--cache", "http-cache", "--json", stale, "-o", name])
                #expect(run.status == 0, "\(run.stderr)")
                fetchTypes.append(try report(run).fetchType)
                #expect(try fileSHA256(directory + "/" + name) == bytesSHA256(800, seed: 6))
            }
            #expect(fetchTypes == ["network", "revalidated"])
            #expect(server.counters.requests(path: "/bytes/800") == 2)

            // Without --cache nothing is read from it.
            let plain = try await cli.run(["get", "--json", fresh, "-o", "e"])
            #expect(try report(plain).fetchType == "network")
            #expect(server.counters.requests(path: "/bytes/70000") == 2)

            let background = try await cli.run(["get", "--background", "--cache", "http-cache", fresh])
            #expect(background.status == 2)
            #expect(background.stderr.contains("background downloads do not use the HTTP cache"))
        }
    }

    /// `-D` dumps the head of every delivered response, a cached one too (issue 39: a 4xx served from the
    /// cache printed no head), with the `Age` the cache gives it.
    @Test func dumpedHeadsIncludeResponsesServedFromTheCache() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let missing = server.url("/status/404?cache_control=max-age%3D86400")
            for _ in 0..<2 {
                let run = try await cli.run(["get", "--cache", "http-cache", "-D", "-", missing, "-o", "x"])
                #expect(run.status == 1)
                #expect(run.stdout.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(run.stdout)")
            }
            #expect(server.counters.requests(path: "/status/404") == 1)
            let cached = try await cli.run(["get", "--cache", "http-cache", "-D", "-", missing, "-o", "x"])
            #expect(cached.stdout.lowercased().contains("\r\nage: "), "\(cached.stdout)")
        }
    }
}
