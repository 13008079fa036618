import AsyncHTTPClient
import FerryTestServer
import Foundation
import Testing

/// Each fault knob does what docs/TESTSERVER.md says. Timing checks are lower bounds only (a slow
/// machine makes them longer, never shorter), so they cannot flake under load.
@Suite struct TestServerFaultTests {
    @Test func throttleLimitsTheRate() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/30000?seed=2&throttle=30000"))
            #expect(Bytes(response.body) == Bytes(expectedBytes(30_000, seed: 2)))
            // 30,000 bytes at 30,000 B/s cannot arrive in much under a second.
            #expect(response.seconds >= 0.85, "took \(response.seconds) s")
        }
    }

    @Test func throttleWorksAsAHeaderToo() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/10000"), headers: [("X-Ferry-Throttle", "20000")])
            #expect(response.body.count == 10_000)
            #expect(response.seconds >= 0.4, "took \(response.seconds) s")
        }
    }

    @Test func closeAfterCutsTheConnection() async throws {
        try await TestServer.withServer { server in
            let response = try await rawExchange(
                port: server.port,
                rawGET("/bytes/1000000?seed=4&close_after=70000")
            )
            #expect(response.statusLine == "HTTP/1.1 200 OK")
            #expect(response.header("content-length") == "1000000")
            #expect(Bytes(response.body) == Bytes(expectedBytes(70_000, seed: 4)))
        }
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/1000000?close_after=70000"))
            #expect(response.bodyError != nil, "a client sees the cut as an error")
        }
    }

    @Test func closeAfterTheWholeBodyEndsTheConnectionAfterwards() async throws {
        try await TestServer.withServer { server in
            // Keep-alive asked for, yet the server closes once the complete response is out.
            let response = try await rawExchange(
                port: server.port,
                "GET /bytes/100?close_after=100 HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            #expect(Bytes(response.body) == Bytes(expectedBytes(100, seed: 0)))
        }
    }

    @Test func shortByDeclaresMoreThanItSends() async throws {
        try await TestServer.withServer { server in
            let response = try await rawExchange(port: server.port, rawGET("/bytes/5000?seed=4&short_by=1000"))
            #expect(response.header("content-length") == "5000")
            #expect(Bytes(response.body) == Bytes(expectedBytes(4000, seed: 4)))
        }
    }

    @Test func chunkedIsChunkedOnTheWire() async throws {
        try await TestServer.withServer { server in
            let response = try await rawExchange(port: server.port, rawGET("/bytes/3000?seed=2&chunked=1"))
            #expect(response.header("content-length") == nil)
            #expect(response.header("transfer-encoding") == "chunked")
            // Undo the chunking by hand: size line, data, CRLF, ..., then the zero-size last chunk.
            var decoded: [UInt8] = []
            var rest = response.body[...]
            while let lineEnd = rest.firstRange(of: Array("\r\n".utf8)) {
                let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? -1
                rest = rest[lineEnd.upperBound...]
                if size <= 0 { break }
                decoded += rest.prefix(size)
                rest = rest.dropFirst(size + 2)
            }
            #expect(Bytes(decoded) == Bytes(expectedBytes(3000, seed: 2)))
        }
    }

    @Test func stallHoldsTheBodyBack() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/1000?seed=1&stall_ms=500"))
            #expect(Bytes(response.body) == Bytes(expectedBytes(1000, seed: 1)))
            #expect(response.seconds >= 0.45, "took \(response.seconds) s")
            let midway = try await client.fetch(server.url("/bytes/1000?seed=1&stall_ms=500&stall_after=400"))
            #expect(Bytes(midway.body) == Bytes(expectedBytes(1000, seed: 1)))
            #expect(midway.seconds >= 0.45, "took \(midway.seconds) s")
        }
    }

    @Test func aGateHoldsTheBodyUntilItIsOpened() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/1000?seed=1&stall_after=400&gate=g1")
            let fetch = Task { try await client.fetch(url) }
            while server.counters.bodyBytesSent(path: "/bytes/1000") < 400 {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Held however long we wait: the gate is not a timer.
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.counters.bodyBytesSent(path: "/bytes/1000") == 400)
            server.openGate("g1")
            let response = try await fetch.value
            #expect(Bytes(response.body) == Bytes(expectedBytes(1000, seed: 1)))
            // Open for good: the next request passes at once.
            let again = try await client.fetch(url)
            #expect(Bytes(again.body) == Bytes(expectedBytes(1000, seed: 1)))
        }
    }

    @Test func delayHoldsTheHeadersBack() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/10?delay_ms=400"))
            #expect(response.status == 200)
            #expect(response.seconds >= 0.35, "took \(response.seconds) s")
        }
    }

    @Test func failFailsTheFirstRequestsOfAKey() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/10?fail=2&key=k1")
            let first = try await client.fetch(url)
            let second = try await client.fetch(url)
            let third = try await client.fetch(url)
            #expect(first.status == 503)
            #expect(first.header("retry-after") == "1")
            #expect(second.status == 503)
            #expect(third.status == 200)
            #expect(third.body.count == 10)
            let custom = try await client.fetch(server.url("/bytes/10?fail=1&key=k2&fail_status=500&retry_after=-1"))
            #expect(custom.status == 500)
            #expect(custom.header("retry-after") == nil)
            // Another key has its own count.
            #expect(try await client.fetch(server.url("/bytes/10?fail=1&key=k3")).status == 503)
        }
    }

    @Test func changeAfterMakesANewVersion() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/bytes/2000?seed=9&change_after=2&key=v")
            let first = try await client.fetch(url)
            let second = try await client.fetch(url)
            let third = try await client.fetch(url)
            #expect(first.header("etag") == second.header("etag"))
            #expect(Bytes(first.body) == Bytes(expectedBytes(2000, seed: 9)))
            #expect(third.header("etag") != first.header("etag"))
            #expect(third.header("last-modified") != first.header("last-modified"))
            #expect(Bytes(third.body) == Bytes(expectedBytes(2000, seed: 9, version: 1)))
            #expect(Bytes(third.body) != Bytes(first.body))
            // A resumer holding the old ETag gets the whole new version, not a mixed file.
            let resumed = try await client.fetch(
                url,
                headers: [("Range", "bytes=1000-"), ("If-Range", try #require(first.header("etag")))]
            )
            #expect(resumed.status == 200)
            #expect(Bytes(resumed.body) == Bytes(expectedBytes(2000, seed: 9, version: 1)))
        }
    }

    @Test func onlyFirstLimitsBodyFaultsToTheFirstRequests() async throws {
        try await TestServer.withServer { server in
            let target = "/bytes/5000?seed=3&close_after=1000&only_first=1&key=o1"
            let cut = try await rawExchange(port: server.port, rawGET(target))
            #expect(cut.body.count == 1000)
            let clean = try await rawExchange(port: server.port, rawGET(target))
            #expect(Bytes(clean.body) == Bytes(expectedBytes(5000, seed: 3)))
        }
    }

    @Test func ignoreRangeAnswersWithTheWhole() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(
                server.url("/bytes/1000?seed=6&ignore_range=1"),
                headers: [("Range", "bytes=500-")]
            )
            #expect(response.status == 200)
            #expect(response.header("content-range") == nil)
            #expect(Bytes(response.body) == Bytes(expectedBytes(1000, seed: 6)))
        }
    }

    @Test func badContentRangeLiesAboutTheOffset() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(
                server.url("/bytes/1000?seed=6&bad_content_range=7"),
                headers: [("Range", "bytes=100-199")]
            )
            #expect(response.status == 206)
            #expect(response.header("content-range") == "bytes 107-206/1000")
            #expect(Bytes(response.body) == Bytes(expectedBytes(100, seed: 6, offset: 100)))
        }
    }

    @Test func chunkedHasNoContentLength() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/100000?seed=2&chunked=1"))
            #expect(response.header("content-length") == nil)
            #expect(response.header("transfer-encoding")?.lowercased() == "chunked")
            #expect(Bytes(response.body) == Bytes(expectedBytes(100_000, seed: 2)))
        }
    }

    @Test func gzipCompressesTheBody() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/status/200?gzip=1"))
            #expect(response.header("content-encoding") == "gzip")
            let page = String(decoding: try Gzip.decompress(response.body), as: UTF8.self)
            #expect(page.contains("error page"))
            let bytes = try await client.fetch(server.url("/bytes/50000?seed=3&gzip=1"))
            #expect(bytes.header("etag") == "\"bytes-50000-3-v0-gzip\"")
            #expect(Bytes(try Gzip.decompress(bytes.body)) == Bytes(expectedBytes(50_000, seed: 3)))
        }
    }

    @Test func cachingAndCookieHeadersAreAdded() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(
                server.url(
                    "/bytes/10?cache_control=max-age%3D60%2C%20public&vary=Accept-Language&expires=3600"
                        + "&set_cookie=a%3D1%3B%20Path%3D%2F&set_cookie=b%3D2"
                )
            )
            #expect(response.header("cache-control") == "max-age=60, public")
            #expect(response.header("vary") == "Accept-Language")
            #expect(response.headers["set-cookie"] == ["a=1; Path=/", "b=2"])
            let expires = try #require(response.header("expires"))
            let date = try #require(response.header("date"))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            let gap = try #require(formatter.date(from: expires)).timeIntervalSince(
                try #require(formatter.date(from: date))
            )
            #expect(abs(gap - 3600) <= 2)
        }
    }
}
