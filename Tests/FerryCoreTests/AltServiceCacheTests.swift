import FerryCore
import Foundation
import Testing

/// The Alt-Svc cache (RFC 7838) in curl's `--alt-svc` file format (issue 42).
@Suite struct AltServiceCacheTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15 08:00:00 UTC

    @Test func curlsOwnLineIsReadAndWrittenBack() throws {
        // The example of https://curl.se/docs/alt-svc.html.
        let text = "# Your alt-svc cache. https://curl.se/docs/alt-svc.html\nh2 quic.tech 8443 h3-22 quic.tech 8443 \"20190808 06:18:37\" 0 0\n"
        let cache = try AltServiceCache(curlFormat: text)
        #expect(cache.entries.count == 1)
        let entry = try #require(cache.entries.first)
        #expect(entry.sourceProtocol == "h2" && entry.sourceHost == "quic.tech" && entry.sourcePort == 8443)
        #expect(entry.protocolID == "h3-22" && entry.host == "quic.tech" && entry.port == 8443 && !entry.persist)
        #expect(entry.expires == Date(timeIntervalSince1970: 1_565_245_117))
        #expect(cache.curlFormat.hasSuffix("h2 quic.tech 8443 h3-22 quic.tech 8443 \"20190808 06:18:37\" 0 0\n"))
        #expect(try AltServiceCache(curlFormat: cache.curlFormat) == cache)
    }

    @Test func aLineThatIsNotAnEntryIsNamed() {
        #expect(throws: FerryError.self) { try AltServiceCache(curlFormat: "# fine\n\nh2 a.example 443 h3 a.example 443 \"not a date\" 0 0\n") }
        do {
            _ = try AltServiceCache(curlFormat: "h2 a.example 443 h3\n")
        } catch {
            #expect(error.message.hasPrefix("line 1 is not an Alt-Svc cache entry"), "\(error.message)")
        }
    }

    @Test func anAnswerReplacesTheOriginsEntriesAndClearRemovesThem() {
        var cache = AltServiceCache()
        let changed = cache.record(["h3=\":8443\"; ma=60, h2=\"alt.example:443\""], host: "Example.com", port: 443, sourceProtocol: "h2", now: now)
        #expect(changed)
        #expect(cache.entries.count == 2)
        let h3 = cache.http3(host: "example.com", port: 443, now: now)
        #expect(h3?.port == 8443 && h3?.host == "example.com" && h3?.expires == now.addingTimeInterval(60))
        #expect(cache.http3(host: "example.com", port: 443, now: now.addingTimeInterval(61)) == nil, "expired after ma")
        #expect(cache.http3(host: "example.com", port: 8443, now: now) == nil, "another origin")
        // Without ma: 24 hours; persist=1 kept.
        cache.record(["h3=\":9443\"; persist=1"], host: "example.com", port: 443, sourceProtocol: "h3", now: now)
        #expect(cache.entries.count == 1)
        #expect(cache.entries.first?.expires == now.addingTimeInterval(86_400) && cache.entries.first?.persist == true)
        // Another host's h3 alternative is kept, but not used (it would need its own certificate check).
        cache.record(["h3=\"other.example:443\""], host: "example.com", port: 443, sourceProtocol: "h2", now: now)
        #expect(cache.entries.count == 1 && cache.http3(host: "example.com", port: 443, now: now) == nil)
        let cleared = cache.record(["clear"], host: "example.com", port: 443, sourceProtocol: "h2", now: now)
        #expect(cleared)
        #expect(cache.entries.isEmpty)
    }

    @Test func aServerCannotGrowTheCacheWithoutBound() {
        var cache = AltServiceCache()
        for index in 0..<(AltServiceCache.capacity + 500) {
            cache.record(["h3=\":\(1 + index % 60_000)\""], host: "host\(index).example", port: 443, sourceProtocol: "h2", now: now)
        }
        #expect(cache.entries.count == AltServiceCache.capacity)
        #expect(cache.http3(host: "host0.example", port: 443, now: now) == nil, "the oldest went first")
        #expect(cache.http3(host: "host\(AltServiceCache.capacity + 499).example", port: 443, now: now) != nil)
    }

    @Test func theFieldsAlternativesAreParsed() {
        let parsed = AltService.alternatives(["h3=\":443\"; ma=3600; persist=1, h3-29=\"alt.example:8443\"; ma=\"10\", junk, h2=\"x:notaport\""])
        #expect(parsed?.count == 2)
        #expect(parsed?.first == AltService.Alternative(protocolID: "h3", host: "", port: 443, maxAge: 3_600, persist: true))
        #expect(parsed?.last == AltService.Alternative(protocolID: "h3-29", host: "alt.example", port: 8443, maxAge: 10, persist: false))
        #expect(AltService.alternatives(["h3=\":443\", clear"]) == nil)
    }
}
