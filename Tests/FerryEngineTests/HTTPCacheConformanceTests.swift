import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import Testing

/// The cache to the letter of RFC 9111 and RFC 5861 (issue 39): each rule checked by what the server
/// received (its request count for the path) and what the client got (status, fields with `Age`, body).
/// Every path is the test's own, so the counts are too.
@Suite struct HTTPCacheConformanceTests {
    static func header(_ line: String) -> String { "header=" + CacheHarness.encoded(line) }
    static func cacheControl(_ value: String) -> String { "cache_control=" + CacheHarness.encoded(value) }

    // MARK: Expires and Age (RFC 9111 §5.3, §5.1, §4.2.3)

    /// Two `Expires` fields make the field invalid, and an invalid `Expires` means already expired: the
    /// second GET is validated with the server, not served as fresh.
    @Test func twoExpiresFieldsMeanExpired() async throws {
        try await CacheHarness.with { cache in
            let future = HTTPDate.format(Date().addingTimeInterval(86_400))
            let url = "/bytes/3901?\(Self.header("Expires: " + future))&\(Self.header("Expires: " + future))"
            _ = try await cache.send(url)
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3901") == 2)
            #expect(second.status == 200 && second.body.count == 3901)
            #expect(second.fetchTypes == [.revalidated])
        }
    }

    /// Dates outside RFC 9110 §5.6.7's grammar, each a departure from one of its rules: an `Expires`
    /// so written is already past, whatever it seems to say.
    static let invalidDates: [String] = {
        let valid = HTTPDate.format(Date().addingTimeInterval(86_400 * 30))  // e.g. "Sun, 27 Dec 2026 14:00:00 GMT"
        let parts = valid.split(separator: " ").map(String.init)  // [day-name",", day, month, year, time, "GMT"]
        let (day, month, year, time) = (parts[1], parts[2], parts[3], parts[4])
        let dayName = String(parts[0].dropLast())
        return [
            "\(dayName), \(day) \(month) \(year.suffix(2)) \(time) GMT",  // a 2-digit year in IMF-fixdate
            "\(dayName), \(day) \(month) \(year) \(time) UTC",  // another zone
            "\(dayName), \(day) \(month) \(year) \(time) AEST",
            "\(dayName), \(day) \(month) \(year) \(time) +0000",
            "\(dayName), \(day) \(month) \(year) \(time) gmt",  // GMT is case-sensitive
            "\(dayName) \(day) \(month) \(year) \(time) GMT",  // no comma
            "\(dayName),  \(day) \(month) \(year) \(time) GMT",  // doubled space
            "\(dayName), \(day)-\(month)-\(year) \(time) GMT",  // dashes in date1
            "\(dayName), \(day) \(month) \(year) \(time.dropFirst()) GMT",  // a 1-digit hour
            "\(dayName), \(Int(day)!) \(month) \(year) \(time) GMT",  // a 1-digit day (when below 10) or unchanged
            "\(dayName), \(day) \(month.uppercased()) \(year) \(time) GMT",  // month names are case-sensitive
            "\(dayName), \(day) \(month) \(year) \(time.prefix(5)) GMT",  // no seconds
            "\(dayName), \(day) \(month) \(year) 24:00:00 GMT",  // hour out of range
            "\(dayName), 31 Feb \(year) \(time) GMT",  // no such day
            "Someday, \(day) \(month) \(year) \(time) GMT",  // not a day name
            "\(dayName), \(day) \(month) \(year) \(time) GMT extra",  // trailing text
            "0", "-1", "",  // not dates at all (caches treat them as already expired)
        ].filter { $0 != valid }
    }()

    @Test(arguments: Array(invalidDates.enumerated()))
    func anExpiresOutsideTheGrammarIsAlreadyExpired(index: Int, date: String) async throws {
        try await CacheHarness.with { cache in
            let path = "/bytes/\(3910 + index)"
            let url = "\(path)?\(Self.header("Expires: " + date))"
            _ = try await cache.send(url)
            let second = try await cache.send(url)
            #expect(cache.received(path) == 2, "Expires: \(date)")
            #expect(second.fetchTypes == [.revalidated], "Expires: \(date)")
        }
    }

    /// `Age: 7200, 0` counts its first member (RFC 9111 §5.1): with `max-age=3600` the response is stale.
    @Test func anAgeListCountsItsFirstMember() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3902?\(Self.cacheControl("max-age=3600"))&\(Self.header("Age: 7200, 0"))"
            _ = try await cache.send(url)
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3902") == 2)
            #expect(second.fetchTypes == [.revalidated])
        }
    }

    /// A response served from the cache says how old it is now (§4.2.3, §5.1): a stored `Age: 30` is
    /// 33 three seconds later, and one that came without `Age` gets one.
    @Test func aServedEntryCarriesItsCurrentAge() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3903?\(Self.cacheControl("max-age=3600"))&\(Self.header("Age: 30"))"
            let plain = "/bytes/3904?\(Self.cacheControl("max-age=3600"))"
            let first = try await cache.send(url)
            #expect(first.headers["age"] == "30")
            _ = try await cache.send(plain)
            cache.advance(3)
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3903") == 1)
            #expect(second.fetchTypes == [.localCache])
            #expect(second.headers.values("age") == ["33"])
            #expect(second.body.count == 3903)
            let aged = try await cache.send(plain)
            #expect(aged.headers.values("age") == ["3"])
        }
    }

    // MARK: What is stored (§3.1, §5.2.2.4)

    /// Hop-by-hop fields and the fields `Connection` names are not stored, nor handed back from the cache.
    @Test func hopByHopFieldsAreNotStored() async throws {
        try await CacheHarness.with { cache in
            let fields = [
                "Connection: x-secret", "X-Secret: 1", "Keep-Alive: timeout=5", "Proxy-Authenticate: Basic realm=x",
                "Proxy-Authentication-Info: nextnonce=1", "Proxy-Connection: keep-alive", "Upgrade: h2c", "X-Kept: yes",
            ]
            let url = "/bytes/3905?\(Self.cacheControl("max-age=3600"))&" + fields.map(Self.header).joined(separator: "&")
            _ = try await cache.send(url)
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3905") == 1)
            #expect(second.fetchTypes == [.localCache])
            for name in ["connection", "x-secret", "keep-alive", "proxy-authenticate", "proxy-authentication-info", "proxy-connection", "upgrade"] {
                #expect(second.headers[name] == nil, "\(name) was handed back from the cache")
            }
            #expect(second.headers["x-kept"] == "yes")
        }
    }

    /// `no-cache="x-token"` lets the response be reused without validation, but never with that field
    /// (§5.2.2.4): it is stripped from what is stored.
    @Test func aQualifiedNoCacheStripsTheNamedFieldInsteadOfValidatingEveryTime() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3906?\(Self.cacheControl("max-age=3600, no-cache=\"X-Token\""))&\(Self.header("X-Token: abc"))"
            let first = try await cache.send(url)
            #expect(first.headers["x-token"] == "abc")
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3906") == 1)
            #expect(second.fetchTypes == [.localCache])
            #expect(second.headers["x-token"] == nil)
        }
    }

    /// `no-store` with `must-understand` on a status the cache understands is stored (§5.2.2.3).
    @Test func mustUnderstandOnAnUnderstoodStatusOverridesNoStore() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3907?\(Self.cacheControl("no-store, must-understand, max-age=3600"))"
            _ = try await cache.send(url)
            let second = try await cache.send(url)
            #expect(cache.received("/bytes/3907") == 1)
            #expect(second.fetchTypes == [.localCache])
        }
    }

    // MARK: Stale content (RFC 5861)

    /// Within `stale-while-revalidate` a stale entry is served at once, and revalidated in the
    /// background, once however many requests find it stale meanwhile.
    @Test func staleWhileRevalidateServesAtOnceAndRevalidatesOnce() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3908?\(Self.cacheControl("max-age=10, stale-while-revalidate=60"))"
            _ = try await cache.send(url)
            cache.advance(20)
            let stale = try await withThrowingTaskGroup(of: CacheHarness.Got.self) { group in
                for _ in 0..<5 { group.addTask { try await cache.send(url) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(stale.allSatisfy { $0.status == 200 && $0.body.count == 3908 && $0.fetchTypes == [.localCache] })
            let limit = Date().addingTimeInterval(60)
            while cache.received("/bytes/3908") < 2, Date() < limit { try await Task.sleep(for: .milliseconds(10)) }
            #expect(cache.received("/bytes/3908") == 2, "one background revalidation")
            // Revalidated (the entry stored again at the clock's now): fresh again, served without asking.
            let stored = URL(string: cache.server.url(url))!
            while cache.storedAt(stored) != cache.now(), Date() < limit { try await Task.sleep(for: .milliseconds(10)) }
            let again = try await cache.send(url)
            #expect(again.fetchTypes == [.localCache])
            #expect(cache.received("/bytes/3908") == 2)
            // Past the window, the stale entry is validated before it is served.
            cache.advance(200)
            let late = try await cache.send(url)
            #expect(late.fetchTypes == [.revalidated])
        }
    }

    /// Within `stale-if-error` a stale entry answers for a server that fails with a 5xx; past the window
    /// the error comes through.
    @Test func staleIfErrorServesTheStoredResponseOnA5xx() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3909?\(Self.cacheControl("max-age=10, stale-if-error=60"))&fail_after=1&fail_status=503"
            _ = try await cache.send(url)
            cache.advance(20)
            let rescued = try await cache.send(url)
            #expect(cache.received("/bytes/3909") == 2)
            #expect(rescued.status == 200 && rescued.body.count == 3909)
            #expect(rescued.fetchTypes == [.localCache])
            #expect(rescued.headers["age"].flatMap { Int($0) }.map { $0 >= 20 } == true)
            cache.advance(100)
            let failed = try await cache.send(url)
            #expect(cache.received("/bytes/3909") == 3)
            #expect(failed.status == 503)
        }
    }

    /// The same when the server cannot be reached at all.
    @Test func staleIfErrorServesTheStoredResponseWhenTheServerIsGone() async throws {
        let server = try await TestServer.start()
        let cache = try CacheHarness(server)
        let url = "/bytes/3910?\(Self.cacheControl("max-age=10, stale-if-error=60"))"
        _ = try await cache.send(url)
        try await server.shutdown()
        cache.advance(20)
        let rescued = try? await cache.send(url)
        #expect(rescued?.status == 200 && rescued?.body.count == 3910)
        // The failed attempt, then the stored response.
        #expect(rescued?.fetchTypes.last == .localCache)
        await cache.shutdown()
    }

    // MARK: Requests the cache answers itself

    /// A conditional request the application makes is answered from a fresh entry (§4.3.2): 304 when
    /// its validator matches, the stored 200 when not.
    @Test func anApplicationsConditionalRequestIsAnsweredFromAFreshEntry() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3911?\(Self.cacheControl("max-age=3600"))"
            let first = try await cache.send(url)
            let etag = try #require(first.headers["etag"])
            let matching = try await cache.send(url, headers: [("If-None-Match", etag)])
            #expect(matching.status == 304 && matching.body.isEmpty)
            #expect(matching.headers["etag"] == etag && matching.headers["age"] != nil)
            let other = try await cache.send(url, headers: [("If-None-Match", "\"another\"")])
            #expect(other.status == 200 && other.body.count == 3911)
            let since = try await cache.send(url, headers: [("If-Modified-Since", HTTPDate.format(Date()))])
            #expect(since.status == 304)
            #expect(cache.received("/bytes/3911") == 1)
            #expect([matching, other, since].allSatisfy { $0.fetchTypes == [.localCache] })
        }
    }

    /// `only-if-cached` with nothing stored answers 504 (§5.2.1.7), without a request.
    @Test func onlyIfCachedWithNothingStoredAnswers504() async throws {
        try await CacheHarness.with { cache in
            let got = try await cache.send("/bytes/3912", headers: [("Cache-Control", "only-if-cached")])
            #expect(got.status == 504)
            #expect(cache.received("/bytes/3912") == 0)
        }
    }

    /// A HEAD is answered from a stored GET response (§4): its head, no body, no request.
    @Test func aHeadIsAnsweredFromAStoredGet() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3913?\(Self.cacheControl("max-age=3600"))"
            let get = try await cache.send(url)
            let head = try await cache.send(url, method: "HEAD")
            #expect(cache.received("/bytes/3913") == 1)
            #expect(head.status == 200 && head.body.isEmpty)
            #expect(head.headers["etag"] == get.headers["etag"] && head.headers["content-length"] == "3913")
            #expect(head.fetchTypes == [.localCache])
        }
    }

    /// Vary compares values as their fields define them (§4.1): list members in another order, another
    /// case where the field ignores it, other white space after commas all match.
    @Test func varyMatchesValuesThatMeanTheSame() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3914?\(Self.cacheControl("max-age=3600"))&vary=Accept-Language,Accept-Encoding"
            _ = try await cache.send(url, headers: [("Accept-Language", "en, de;q=0.5"), ("Accept-Encoding", "identity")])
            for (language, encoding) in [
                ("de;q=0.5,en", "identity"), ("EN,  DE;q=0.5", "IDENTITY"), ("en,de;q=0.5", "identity"),
            ] {
                let hit = try await cache.send(url, headers: [("Accept-Language", language), ("Accept-Encoding", encoding)])
                #expect(hit.fetchTypes == [.localCache], "\(language) / \(encoding)")
            }
            #expect(cache.received("/bytes/3914") == 1)
            let miss = try await cache.send(url, headers: [("Accept-Language", "fr"), ("Accept-Encoding", "identity")])
            #expect(miss.fetchTypes == [.networkLoad])
            #expect(cache.received("/bytes/3914") == 2)
        }
    }

    // MARK: Partial content (§3.3, §3.4)

    /// A Range request is answered from a complete stored response: a 206 with those bytes.
    @Test func aRangeIsAnsweredFromACompleteStoredResponse() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3915?\(Self.cacheControl("max-age=3600"))"
            let whole = try await cache.send(url)
            let part = try await cache.send(url, headers: [("Range", "bytes=100-199")])
            #expect(part.status == 206)
            #expect(part.headers["content-range"] == "bytes 100-199/3915")
            #expect(part.body == Array(whole.body[100...199]))
            let tail = try await cache.send(url, headers: [("Range", "bytes=-15")])
            #expect(tail.headers["content-range"] == "bytes 3900-3914/3915" && tail.body == Array(whole.body[3900...]))
            // If-Range naming another version: the server is asked.
            let other = try await cache.send(url, headers: [("Range", "bytes=0-9"), ("If-Range", "\"another\"")])
            #expect(other.status == 200 || other.status == 206)
            #expect(cache.received("/bytes/3915") == 2)
            #expect(part.fetchTypes == [.localCache] && tail.fetchTypes == [.localCache])
        }
    }

    /// 206 answers are stored as parts, a range within a part is answered from it, and two parts that
    /// add up to the whole are combined into the complete response, which then answers a plain GET.
    @Test func partsAreStoredCombinedAndCompleted() async throws {
        try await CacheHarness.with { cache in
            let url = "/bytes/3916?\(Self.cacheControl("max-age=3600"))"
            let expected = DeterministicBytes(seed: 0).bytes(offset: 0, count: 3916)
            let first = try await cache.send(url, headers: [("Range", "bytes=0-1999")])
            #expect(first.status == 206 && first.body == Array(expected[0..<2000]))
            let inside = try await cache.send(url, headers: [("Range", "bytes=500-599")])
            #expect(inside.status == 206 && inside.body == Array(expected[500..<600]))
            #expect(inside.fetchTypes == [.localCache])
            #expect(cache.received("/bytes/3916") == 1)
            // A plain GET is not answered from a part.
            let rest = try await cache.send(url, headers: [("Range", "bytes=2000-")])
            #expect(rest.status == 206 && cache.received("/bytes/3916") == 2)
            let whole = try await cache.send(url)
            #expect(whole.status == 200 && whole.body == Array(expected))
            #expect(whole.fetchTypes == [.localCache])
            #expect(cache.received("/bytes/3916") == 2)
        }
    }
}
