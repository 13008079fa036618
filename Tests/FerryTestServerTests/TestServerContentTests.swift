import AsyncHTTPClient
import FerryTestServer
import Foundation
import Testing

@Suite struct TestServerContentTests {
    @Test func bytesAreTheDeterministicStream() async throws {
        try await withServerAndClient { server, client in
            let first = try await client.fetch(server.url("/bytes/300000?seed=7"))
            let second = try await client.fetch(server.url("/bytes/300000?seed=7"))
            #expect(first.status == 200)
            #expect(first.header("content-length") == "300000")
            #expect(Bytes(first.body) == Bytes(expectedBytes(300_000, seed: 7)))
            #expect(Bytes(second.body) == Bytes(first.body))
            #expect(first.header("etag") == "\"bytes-300000-7-v0\"")
            #expect(first.header("last-modified") == "Mon, 01 Jan 2024 00:00:00 GMT")
            let other = try await client.fetch(server.url("/bytes/300000?seed=8"))
            #expect(Bytes(other.body) != Bytes(first.body))
        }
    }

    /// Bodies far above the write buffer's high-water mark make the channel unwritable and writable
    /// again mid-write; the writer must neither stop early nor write the end twice (it once did).
    @Test func largeBodiesStreamWithBackpressure() async throws {
        try await withServerAndClient { server, client in
            let expected = Bytes(expectedBytes(24_000_000, seed: 5))
            for _ in 0..<2 {
                let response = try await client.fetch(server.url("/bytes/24000000?seed=5"))
                #expect(Bytes(response.body) == expected)
            }
            let raw = try await rawExchange(port: server.port, rawGET("/bytes/24000000?seed=5"))
            #expect(Bytes(raw.body) == expected)
            #expect(server.counters.bodyBytesSent(path: "/bytes/24000000") == 3 * 24_000_000)
        }
    }

    @Test func aRangePlusTheRestEqualsTheWhole() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/100000?seed=3")
            let whole = try await client.fetch(url).body
            let head = try await client.fetch(url, headers: [("Range", "bytes=0-12344")])
            let tail = try await client.fetch(url, headers: [("Range", "bytes=12345-")])
            #expect(head.status == 206)
            #expect(head.header("content-range") == "bytes 0-12344/100000")
            #expect(tail.status == 206)
            #expect(tail.header("content-range") == "bytes 12345-99999/100000")
            #expect(Bytes(head.body + tail.body) == Bytes(whole))
            let suffix = try await client.fetch(url, headers: [("Range", "bytes=-100")])
            #expect(Bytes(suffix.body) == Bytes(Array(whole.suffix(100))))
        }
    }

    @Test func anUnsatisfiableRangeGets416() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/1000"), headers: [("Range", "bytes=1000-")])
            #expect(response.status == 416)
            #expect(response.header("content-range") == "bytes */1000")
            #expect(response.body.isEmpty)
        }
    }

    @Test func headHasTheHeadersAndNoBody() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/5000?seed=1"), method: .HEAD)
            #expect(response.status == 200)
            #expect(response.header("content-length") == "5000")
            #expect(response.header("etag") == "\"bytes-5000-1-v0\"")
            #expect(response.body.isEmpty)
            #expect(server.counters.bodyBytesSent(path: "/bytes/5000") == 0)
        }
    }

    @Test func conditionalRequestsGet304() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/1000")
            let first = try await client.fetch(url)
            let etag = try #require(first.header("etag"))
            let lastModified = try #require(first.header("last-modified"))
            let byTag = try await client.fetch(url, headers: [("If-None-Match", etag)])
            #expect(byTag.status == 304)
            #expect(byTag.body.isEmpty)
            #expect(byTag.header("etag") == etag)
            let byDate = try await client.fetch(url, headers: [("If-Modified-Since", lastModified)])
            #expect(byDate.status == 304)
            let stale = try await client.fetch(url, headers: [("If-None-Match", "\"something-else\"")])
            #expect(stale.status == 200)
            #expect(stale.body.count == 1000)
        }
    }

    @Test func ifRangeServesTheRangeOnlyForTheSameVersion() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/1000?seed=5")
            let etag = try #require(try await client.fetch(url, method: .HEAD).header("etag"))
            let same = try await client.fetch(url, headers: [("Range", "bytes=500-"), ("If-Range", etag)])
            #expect(same.status == 206)
            #expect(Bytes(same.body) == Bytes(expectedBytes(500, seed: 5, offset: 500)))
            let changed = try await client.fetch(url, headers: [("Range", "bytes=500-"), ("If-Range", "\"old\"")])
            #expect(changed.status == 200)
            #expect(Bytes(changed.body) == Bytes(expectedBytes(1000, seed: 5)))
        }
    }

    @Test func filesComeFromTheRootDirectory() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let content = expectedBytes(1_500_000, seed: 11)
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("sub"),
            withIntermediateDirectories: true
        )
        try Data(content).write(to: root.appendingPathComponent("sub/data.bin"))
        var configuration = TestServer.Configuration()
        configuration.root = root.path
        try await withServerAndClient(configuration) { server, client in
            let whole = try await client.fetch(server.url("/files/sub/data.bin"))
            #expect(whole.status == 200)
            #expect(Bytes(whole.body) == Bytes(content))
            let etag = try #require(whole.header("etag"))
            let part = try await client.fetch(
                server.url("/files/sub/data.bin"),
                headers: [("Range", "bytes=1000000-"), ("If-Range", etag)]
            )
            #expect(part.status == 206)
            #expect(Bytes(part.body) == Bytes(Array(content[1_000_000...])))
            #expect(try await client.fetch(server.url("/files/sub/missing")).status == 404)
            #expect(try await client.fetch(server.url("/files/sub/%2E%2E/sub/data.bin")).status == 400)
            #expect(try await client.fetch(server.url("/files/sub")).status == 404)
        }
    }

    @Test func statusRouteServesAnErrorPage() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/status/404"))
            #expect(response.status == 404)
            #expect(String(decoding: response.body, as: UTF8.self).contains("error page"))
            let noContent = try await client.fetch(server.url("/status/204"))
            #expect(noContent.status == 204)
            #expect(noContent.body.isEmpty)
            #expect(try await client.fetch(server.url("/status/503")).status == 503)
            #expect(try await client.fetch(server.url("/nowhere")).status == 404)
            #expect(try await client.fetch(server.url("/bytes/10"), method: .DELETE).status == 405)
        }
    }

    @Test func countersCountConnectionsRequestsAndBytes() async throws {
        try await withServerAndClient { server, client in
            for _ in 0..<3 { _ = try await client.fetch(server.url("/bytes/4096")) }
            _ = try await client.fetch(server.url("/bytes/10"), headers: [("Range", "bytes=0-4")])
            let counters = server.counters
            #expect(counters.connectionsAccepted == 1, "keep-alive: one connection for sequential requests")
            #expect(counters.requestsServed == 4)
            #expect(counters.requests(path: "/bytes/4096") == 3)
            #expect(counters.bodyBytesSent(path: "/bytes/4096") == 3 * 4096)
            #expect(counters.bodyBytesSent(path: "/bytes/10") == 5)
            server.resetCounters()
            #expect(server.counters.requestsServed == 0)
        }
    }
}
