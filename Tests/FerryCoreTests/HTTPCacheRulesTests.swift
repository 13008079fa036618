import FerryCore
import Foundation
import Testing

/// RFC 9111's rules as pure functions: storability, freshness, age, the decision per policy, 304
/// updates, invalidation, and Cache-Control parsing.
@Suite struct HTTPCacheRulesTests {
    let url = URL(string: "https://example.com/a?b=1#frag")!
    let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    func stored(
        _ fields: [(String, String)],
        status: Int = 200,
        received: TimeInterval = 0,
        vary: [String: String] = [:]
    ) -> CachedResponse {
        var headers = Headers(fields)
        if headers["date"] == nil { headers.add(name: "Date", value: "Fri, 15 Jan 2027 08:00:00 GMT") }
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        return CachedResponse(
            url: url,
            statusCode: status,
            headers: headers,
            data: Data("body".utf8),
            requestDate: date.addingTimeInterval(received),
            responseDate: date.addingTimeInterval(received),
            varyValues: vary
        )
    }

    func decide(
        _ entry: CachedResponse,
        at offset: TimeInterval,
        request: [(String, String)] = [],
        policy: Request.CachePolicy = .useProtocolCachePolicy
    ) -> HTTPCacheRules.Decision {
        HTTPCacheRules.decide(
            requestHeaders: Headers(request),
            policy: policy,
            stored: [entry],
            now: epoch.addingTimeInterval(offset)
        )
    }

    @Test func cacheControlParsesArgumentsQuotesAndCase() {
        let control = CacheControl(parsing: #"Max-Age=60, no-cache="Set-Cookie, X", private, max-age=5, s-maxage="7""#)
        #expect(control.maxAge == 60)
        // The qualified no-cache names fields to leave out; it does not make every reuse a validation.
        #expect(!control.noCache && control.noCacheFields == ["set-cookie", "x"] && control.isPrivate)
        #expect(CacheControl(parsing: "no-cache").noCache && CacheControl(parsing: "no-cache").noCacheFields.isEmpty)
        #expect(control.seconds("s-maxage") == 7)
        #expect(CacheControl(parsing: "max-age=abc").maxAge == nil)
        #expect(CacheControl(parsing: "max-stale").maxStale == Int.max)
        #expect(CacheControl(parsing: "max-stale=30").maxStale == 30)
        #expect(CacheControl(parsing: "max-age=99999999999").maxAge == 2_147_483_648)
    }

    @Test func whatMayBeStored() {
        func policy(_ fields: [(String, String)], method: String = "GET", request: [(String, String)] = [], status: Int = 200) -> CachedResponse.StoragePolicy {
            HTTPCacheRules.storagePolicy(method: method, requestHeaders: Headers(request), statusCode: status, responseHeaders: Headers(fields))
        }
        #expect(policy([("Cache-Control", "max-age=60")]) == .allowed)
        #expect(policy([("Cache-Control", "max-age=60")], method: "POST") == .notAllowed)
        #expect(policy([("Cache-Control", "no-store, max-age=60")]) == .notAllowed)
        #expect(policy([("Cache-Control", "max-age=60")], request: [("Cache-Control", "no-store")]) == .notAllowed)
        #expect(policy([("Cache-Control", "max-age=60"), ("Vary", "*")]) == .notAllowed)
        #expect(policy([("Cache-Control", "max-age=60")], status: 206) == .notAllowed)
        #expect(policy([], status: 302) == .notAllowed)  // not heuristically cacheable, no explicit freshness
        #expect(policy([("Cache-Control", "max-age=60")], status: 302) == .allowed)
        #expect(policy([], status: 404) == .allowed)
        #expect(policy([("Cache-Control", "private")]) == .allowed)
    }

    @Test func freshnessFromMaxAgeExpiresAndTheHeuristic() {
        #expect(HTTPCacheRules.freshnessLifetime(stored([("Cache-Control", "max-age=60"), ("Expires", "Fri, 15 Jan 2027 09:00:00 GMT")])) == 60)
        #expect(HTTPCacheRules.freshnessLifetime(stored([("Expires", "Fri, 15 Jan 2027 09:00:00 GMT")])) == 3600)
        #expect(HTTPCacheRules.freshnessLifetime(stored([("Expires", "0")])) == 0)
        // Ten days since Last-Modified: one day of heuristic freshness, for a cacheable status only.
        let modified = [("Last-Modified", "Tue, 05 Jan 2027 08:00:00 GMT")]
        #expect(HTTPCacheRules.freshnessLifetime(stored(modified)) == 86_400)
        #expect(HTTPCacheRules.freshnessLifetime(stored(modified, status: 302)) == 0)
    }

    @Test func ageCountsTheServersAgeTheRoundTripAndResidence() {
        var entry = stored([("Age", "100")])
        entry.requestDate = entry.responseDate.addingTimeInterval(-2)
        // Date equals the response time: apparent age 0; Age 100 plus a 2 s round trip; 30 s resident.
        #expect(HTTPCacheRules.currentAge(entry, now: entry.responseDate.addingTimeInterval(30)) == 132)
        // A Date an hour before arrival: the apparent age wins.
        let late = stored([], received: 3600)
        #expect(HTTPCacheRules.currentAge(late, now: late.responseDate) == 3600)
    }

    @Test func freshIsServedStaleIsValidatedOrLoaded() {
        let entry = stored([("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("Last-Modified", "Tue, 05 Jan 2027 08:00:00 GMT")])
        #expect(decide(entry, at: 59) == .useStored(entry))
        guard case .validate(_, let conditions) = decide(entry, at: 61) else {
            Issue.record("a stale entry with validators is validated")
            return
        }
        #expect(conditions["if-none-match"] == "\"v1\"")
        #expect(conditions["if-modified-since"] == "Tue, 05 Jan 2027 08:00:00 GMT")
        // No validator: loaded anew.
        #expect(decide(stored([("Cache-Control", "max-age=60")]), at: 61) == .network)
    }

    @Test func requestDirectivesTightenOrLoosenFreshness() {
        let entry = stored([("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")])
        #expect(decide(entry, at: 30, request: [("Cache-Control", "max-age=10")]) != .useStored(entry))
        #expect(decide(entry, at: 30, request: [("Cache-Control", "min-fresh=40")]) != .useStored(entry))
        #expect(decide(entry, at: 30, request: [("Cache-Control", "no-cache")]) != .useStored(entry))
        #expect(decide(entry, at: 30, request: [("Pragma", "no-cache")]) != .useStored(entry))
        #expect(decide(entry, at: 90, request: [("Cache-Control", "max-stale=60")]) == .useStored(entry))
        #expect(decide(entry, at: 130, request: [("Cache-Control", "max-stale=60")]) != .useStored(entry))
        // only-if-cached and nothing usable: 504 (RFC 9111 §5.2.1.7).
        #expect(decide(entry, at: 90, request: [("Cache-Control", "only-if-cached")]) == .gatewayTimeout)
        let strict = stored([("Cache-Control", "max-age=60, must-revalidate"), ("ETag", "\"v1\"")])
        #expect(decide(strict, at: 90, request: [("Cache-Control", "max-stale")]) != .useStored(strict))
        // A Range, or the request's own conditionals on a stale entry: untouched. On a fresh one the
        // cache answers them (§4.3.2).
        #expect(decide(entry, at: 1, request: [("Range", "bytes=0-1")]) == .partialContent(entry, 0...1))
        #expect(decide(entry, at: 90, request: [("Range", "bytes=0-1")]) == .network)
        #expect(decide(entry, at: 1, request: [("If-None-Match", "\"v0\"")]) == .useStored(entry))
        #expect(decide(entry, at: 90, request: [("If-None-Match", "\"v0\"")]) == .network)
    }

    @Test func thePoliciesOfTheRequest() {
        let stale = stored([("Cache-Control", "max-age=0"), ("ETag", "\"v1\"")])
        #expect(decide(stale, at: 1, policy: .reloadIgnoringLocalCacheData) == .network)
        #expect(decide(stale, at: 1, policy: .returnCacheDataElseLoad) == .useStored(stale))
        #expect(decide(stale, at: 1, policy: .returnCacheDataDontLoad) == .useStored(stale))
        let none = HTTPCacheRules.decide(requestHeaders: Headers(), policy: .returnCacheDataDontLoad, stored: [], now: epoch)
        #expect(none == .unavailable)
        let load = HTTPCacheRules.decide(requestHeaders: Headers(), policy: .returnCacheDataElseLoad, stored: [], now: epoch)
        #expect(load == .network)
    }

    @Test func varyPicksTheMatchingVariant() {
        let english = stored([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], vary: ["accept-language": "en"])
        let unnamed = stored([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
        #expect(HTTPCacheRules.varyMatches(english, requestHeaders: Headers([("Accept-Language", "en")])))
        #expect(!HTTPCacheRules.varyMatches(english, requestHeaders: Headers([("Accept-Language", "fr")])))
        #expect(!HTTPCacheRules.varyMatches(english, requestHeaders: Headers()))
        #expect(HTTPCacheRules.varyMatches(unnamed, requestHeaders: Headers()))
        let values = HTTPCacheRules.varyValues(
            requestHeaders: Headers([("Accept", "a,  b"), ("Accept", "c")]),
            responseHeaders: Headers([("Vary", "accept, X-Absent")])
        )
        #expect(values == ["accept": "a, b, c"])
        #expect(HTTPCacheRules.varyValues(requestHeaders: Headers(), responseHeaders: Headers([("Vary", "*")])) == nil)
    }

    @Test func a304UpdatesTheStoredFieldsButNotItsLength() {
        let entry = stored([("Cache-Control", "max-age=0"), ("ETag", "\"v1\""), ("Content-Length", "4"), ("X-A", "1"), ("X-A", "2")])
        let later = epoch.addingTimeInterval(500)
        let updated = HTTPCacheRules.updating(
            entry,
            notModified: Headers([("Cache-Control", "max-age=600"), ("Content-Length", "0"), ("X-A", "3")]),
            requestDate: later,
            responseDate: later
        )
        #expect(updated.headers["cache-control"] == "max-age=600")
        #expect(updated.headers["content-length"] == "4")
        #expect(updated.headers.values("x-a") == ["3"])
        #expect(updated.data == entry.data && updated.responseDate == later)
    }

    @Test func unsafeMethodsInvalidateTheTargetAndItsSameOriginLocations() {
        let headers = Headers([("Location", "/other"), ("Content-Location", "https://elsewhere.example/x")])
        let urls = HTTPCacheRules.invalidatedURLs(method: "POST", url: url, statusCode: 201, responseHeaders: headers)
        #expect(urls.map(\.absoluteString) == [url.absoluteString, "https://example.com/other"])
        #expect(HTTPCacheRules.invalidatedURLs(method: "POST", url: url, statusCode: 500, responseHeaders: headers).isEmpty)
        #expect(HTTPCacheRules.invalidatedURLs(method: "GET", url: url, statusCode: 200, responseHeaders: headers).isEmpty)
        #expect(HTTPCacheRules.key(for: url) == "https://example.com/a?b=1")
    }

    /// VaryValue: the Accept fields compare without case or order; every field without white space
    /// around its members and parameters (RFC 9111 §4.1).
    @Test func varyValuesAreNormalised() {
        #expect(VaryValue.normalized(name: "accept-language", fields: ["en, DE;q=0.5"]) == VaryValue.normalized(name: "accept-language", fields: ["de ; q=0.5,en"]))
        #expect(VaryValue.normalized(name: "accept-encoding", fields: ["gzip", "br"]) == "br, gzip")
        #expect(VaryValue.normalized(name: "x-list", fields: ["a,b"]) == VaryValue.normalized(name: "x-list", fields: ["a,   b"]))
        #expect(VaryValue.normalized(name: "x-list", fields: ["a, b"]) != VaryValue.normalized(name: "x-list", fields: ["b, a"]))
        #expect(VaryValue.normalized(name: "x-case", fields: ["A"]) != VaryValue.normalized(name: "x-case", fields: ["a"]))
        #expect(VaryValue.normalized(name: "x-quoted", fields: [#""a,  b""#]) == #""a,  b""#)
    }

    /// What is stored of a response's fields (§3.1, §5.2.2.4).
    @Test func storableFieldsLeaveOutTheConnectionsOwnAndTheNamedOnes() {
        let headers = Headers([
            ("Connection", "close, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "5"), ("Transfer-Encoding", "chunked"),
            ("Cache-Control", #"max-age=5, no-cache="Set-Cookie""#), ("Set-Cookie", "a=1"), ("ETag", "\"v\""),
        ])
        #expect(HTTPCacheRules.storable(headers).fields.map(\.name) == ["Cache-Control", "ETag"])
    }

    /// Byte ranges within a representation, and parts combined into the whole (§3.4).
    @Test func rangesAndPartsCombine() {
        #expect(HTTPCacheRules.byteRange("bytes=10-19", length: 100) == 10...19)
        #expect(HTTPCacheRules.byteRange("bytes=90-", length: 100) == 90...99)
        #expect(HTTPCacheRules.byteRange("bytes=-5", length: 100) == 95...99)
        #expect(HTTPCacheRules.byteRange("bytes=95-200", length: 100) == 95...99)
        for unsatisfiable in ["bytes=100-", "bytes=0-1,5-6", "items=0-1", "bytes=5-1", "bytes=-0"] {
            #expect(HTTPCacheRules.byteRange(unsatisfiable, length: 100) == nil, "\(unsatisfiable)")
        }
        func part(_ first: Int, _ last: Int, etag: String = "\"v\"") -> CachedResponse {
            var entry = stored([("ETag", etag), ("Content-Range", "bytes \(first)-\(last)/10")], status: 206)
            entry.data = Data((first...last).map { UInt8($0) })
            return entry
        }
        let head = part(0, 4)
        #expect(HTTPCacheRules.combine(head, with: part(3, 6)).flatMap(HTTPCacheRules.storedPart)?.range == 0...6)
        let whole = HTTPCacheRules.combine(head, with: part(5, 9))
        #expect(whole?.statusCode == 200 && whole?.data == Data(0...9) && whole?.headers["content-range"] == nil)
        #expect(HTTPCacheRules.combine(head, with: part(6, 9)) == nil, "a gap")
        #expect(HTTPCacheRules.combine(head, with: part(5, 9, etag: "\"w\"")) == nil, "another version")
    }
}
