import FerryCore
import Foundation
import Testing

@Suite struct CookieJarTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let suffixes = PublicSuffixList("com\nco.uk\n*.ck\n!www.ck\ngithub.io")

    func url(_ text: String) -> URL { URL(string: text)! }

    @Test func hostOnlyAndDomainCookiesReachWhatTheyShould() {
        var jar = CookieJar(publicSuffixes: suffixes)
        jar.receive("a=1", from: url("http://www.example.com/x/y"), now: now)
        jar.receive("b=2; Domain=example.com; Path=/", from: url("http://www.example.com/"), now: now)
        #expect(jar.cookieHeader(for: url("http://www.example.com/x/z"), now: now) == "a=1; b=2")
        #expect(jar.cookieHeader(for: url("http://api.example.com/x/z"), now: now) == "b=2", "a is host-only")
        #expect(jar.cookieHeader(for: url("http://www.example.com/other"), now: now) == "b=2", "a's default path is /x")
        #expect(jar.cookieHeader(for: url("http://example.org/"), now: now) == nil)
    }

    @Test func publicSuffixesAreRefusedExceptForTheirOwnHost() {
        var jar = CookieJar(publicSuffixes: suffixes)
        #expect(jar.receive("a=1; Domain=com", from: url("http://example.com/"), now: now) == nil)
        #expect(jar.receive("a=1; Domain=co.uk", from: url("http://shop.co.uk/"), now: now) == nil)
        #expect(jar.receive("a=1; Domain=anything.ck", from: url("http://x.anything.ck/"), now: now) == nil, "*.ck")
        #expect(jar.receive("a=1; Domain=www.ck", from: url("http://a.www.ck/"), now: now) != nil, "!www.ck")
        let own = jar.receive("b=2; Domain=github.io", from: url("http://github.io/"), now: now)
        #expect(own?.isHostOnly == true)
        #expect(jar.receive("c=3; Domain=other.com", from: url("http://example.com/"), now: now) == nil)
        #expect(PublicSuffixList.fallback.isPublicSuffix("org"), "single labels are suffixes")
    }

    @Test func secureHttpOnlyAndPrefixes() {
        var jar = CookieJar(publicSuffixes: suffixes)
        #expect(jar.receive("s=1; Secure", from: url("http://example.com/"), now: now) == nil, "Secure needs https")
        #expect(jar.receive("s=1; Secure", from: url("https://example.com/"), now: now) != nil)
        #expect(jar.receive("s=2", from: url("http://example.com/"), now: now) == nil, "http cannot replace a secure cookie")
        #expect(jar.cookieHeader(for: url("http://example.com/"), now: now) == nil)
        #expect(jar.cookieHeader(for: url("https://example.com/"), now: now) == "s=1")
        #expect(jar.receive("h=1; HttpOnly", from: url("https://example.com/"), now: now, fromHTTP: false) == nil)
        jar.receive("h=1; HttpOnly", from: url("https://example.com/"), now: now)
        #expect(jar.cookies(for: url("https://example.com/"), now: now, forHTTP: false).map(\.name) == ["s"])
        #expect(jar.receive("__Secure-a=1", from: url("https://example.com/"), now: now) == nil)
        #expect(jar.receive("__Host-a=1; Secure; Domain=example.com", from: url("https://example.com/"), now: now) == nil)
        #expect(jar.receive("__Host-a=1; Secure; Path=/", from: url("https://example.com/x"), now: now) != nil)
    }

    @Test func lifetimes() {
        var jar = CookieJar(publicSuffixes: suffixes)
        let site = url("http://example.com/")
        let both = jar.receive("a=1; Expires=Wed, 01 Jan 2100 00:00:00 GMT; Max-Age=60", from: site, now: now)
        #expect(both?.expires == now.addingTimeInterval(60), "Max-Age wins over Expires")
        let capped = jar.receive("b=1; Max-Age=999999999", from: site, now: now)
        #expect(capped?.expires == now.addingTimeInterval(CookieJar.maximumLifetime), "400 days at most")
        #expect(jar.receive("c=1", from: site, now: now)?.isSessionOnly == true)
        #expect(jar.cookieHeader(for: site, now: now.addingTimeInterval(61)) == "b=1; c=1")
        jar.receive("b=gone; Max-Age=0", from: site, now: now)
        #expect(jar.cookieHeader(for: site, now: now) == "a=1; c=1", "Max-Age=0 removes it")
        jar.removeExpired(now: now, endingSession: true)
        #expect(jar.all.map(\.name) == ["a"])
    }

    @Test func acceptPoliciesAndLimits() {
        var never = CookieJar(acceptPolicy: .never, publicSuffixes: suffixes)
        #expect(never.receive("a=1", from: url("http://example.com/"), now: now) == nil)
        var main = CookieJar(acceptPolicy: .onlyFromMainDocumentDomain, publicSuffixes: suffixes)
        let document = url("http://example.com/")
        #expect(main.receive("a=1", from: url("http://ads.tracker.com/"), now: now, mainDocument: document) == nil)
        #expect(main.receive("a=1", from: url("http://cdn.example.com/"), now: now, mainDocument: document) != nil)

        var jar = CookieJar(publicSuffixes: suffixes)
        for index in 0..<(CookieJar.maximumPerDomain + 5) {
            jar.receive("c\(index)=v", from: url("http://example.com/"), now: now.addingTimeInterval(Double(index)))
        }
        #expect(jar.all.count == CookieJar.maximumPerDomain)
        #expect(!jar.all.contains { $0.name == "c0" }, "the least recently used went first")
        #expect(jar.all.contains { $0.name == "c\(CookieJar.maximumPerDomain + 4)" })
    }

    @Test func replacingKeepsTheFirstCreationAndOrder() {
        var jar = CookieJar(publicSuffixes: suffixes)
        let site = url("http://example.com/")
        jar.receive("a=1", from: site, now: now)
        jar.receive("b=1", from: site, now: now)
        jar.receive("a=2", from: site, now: now.addingTimeInterval(5))
        #expect(jar.cookieHeader(for: site, now: now) == "a=2; b=1")
        #expect(jar.all.first?.created == now)
    }

    @Test func setCookieParsingIgnoresWhatItMust() {
        #expect(SetCookie("a=b\u{01}c") == nil)
        #expect(SetCookie("novalue") == nil)
        #expect(SetCookie("=v") == nil)
        #expect(SetCookie(String(repeating: "x", count: 4097) + "=") == nil)
        let parsed = SetCookie(" a = b ; Path=/x; Secure;;Domain = .E.com ")
        #expect(parsed?.name == "a")
        #expect(parsed?.value == "b")
        #expect(parsed?.attributes.map(\.name) == ["Path", "Secure", "", "Domain"])
        #expect(CookieDate.parse("Feb 30 2020 00:00:00") == nil)
        #expect(CookieDate.parse("1 Jan 1600 00:00:00") == nil)
        #expect(CookieDate.parse("01 Jan 70 00:00:00").map { Int($0.timeIntervalSince1970) } == 0)
    }
}

@Suite struct NetscapeCookieFileTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func curlsFormatRoundTrips() {
        let text = """
            # Netscape HTTP Cookie File
            # https://curl.se/docs/http-cookies.html

            .example.com\tTRUE\t/\tFALSE\t1900000000\tdomain\td
            www.example.com\tFALSE\t/x\tTRUE\t0\tsession\ts
            #HttpOnly_www.example.com\tFALSE\t/\tFALSE\t0\thidden\th
            old.example.com\tFALSE\t/\tFALSE\t1000\texpired\te
            not a cookie line
            """
        let cookies = NetscapeCookieFile.parse(text, now: now)
        #expect(cookies.map(\.name) == ["domain", "session", "hidden"])
        #expect(cookies[0].isHostOnly == false && cookies[0].domain == "example.com")
        #expect(cookies[0].expires == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(cookies[1].isSecure && cookies[1].isSessionOnly && cookies[1].path == "/x")
        #expect(cookies[2].isHTTPOnly)
        let again = NetscapeCookieFile.parse(NetscapeCookieFile.serialize(cookies), now: now)
        #expect(again.map { [$0.name, $0.value, $0.domain, $0.path] } == cookies.map { [$0.name, $0.value, $0.domain, $0.path] })
        #expect(again.map(\.isHostOnly) == cookies.map(\.isHostOnly))
        #expect(again.map(\.isHTTPOnly) == cookies.map(\.isHTTPOnly))
    }
}

@Suite struct NetrcTests {
    @Test func machinesDefaultQuotesAndMacros() {
        let netrc = Netrc(
            """
            machine example.com login alice password "s3cret with space"
            macdef init
            machine evil.com login mallory password x

            machine Other.Example.com
              login bob
              account ignored
              password "quo\\"te"
            machine example.com login second password no
            default login anonymous password guest
            """
        )
        #expect(netrc.credential(for: "example.com") == Credential(user: "alice", password: "s3cret with space"))
        #expect(netrc.credential(for: "other.example.com") == Credential(user: "bob", password: "quo\"te"))
        #expect(netrc.credential(for: "evil.com") == Credential(user: "anonymous", password: "guest"), "a macro's words are no entry")
        #expect(netrc.credential(for: "unknown.org") == Credential(user: "anonymous", password: "guest"))
        #expect(Netrc("machine a.b password p").credential(for: "a.b") == nil, "no login")
        #expect(Netrc.defaultPath(["NETRC": "/x/netrc", "HOME": "/h"]) == "/x/netrc")
        #expect(Netrc.defaultPath(["HOME": "/h"]) == "/h/.netrc")
    }
}
