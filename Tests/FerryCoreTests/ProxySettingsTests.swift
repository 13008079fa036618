import Foundation
import Testing

@testable import FerryCore

/// curl's proxy rules, as pure values: which variable applies, and what no_proxy bypasses.
@Suite struct ProxySettingsTests {
    private func proxy(_ settings: ProxySettings, _ url: String) -> String? {
        settings.proxy(for: URL(string: url)!)?.description
    }

    @Test func theEnvironmentMatrix() throws {
        let lower = try ProxySettings.fromEnvironment(["http_proxy": "proxy:3128", "https_proxy": "http://tls:8080"])
        #expect(proxy(lower, "http://example.com/") == "http://proxy:3128")
        #expect(proxy(lower, "https://example.com/") == "http://tls:8080")

        // Upper-case HTTP_PROXY is ignored, as curl does (httpoxy); HTTPS_PROXY is honoured.
        let upper = try ProxySettings.fromEnvironment(["HTTP_PROXY": "evil:1", "HTTPS_PROXY": "socks5h://s:1080"])
        #expect(proxy(upper, "http://example.com/") == nil)
        #expect(proxy(upper, "https://example.com/") == "socks5h://s:1080")

        // all_proxy fills in for both; the scheme's own wins.
        let all = try ProxySettings.fromEnvironment(["ALL_PROXY": "socks5://all:1080", "http_proxy": "h:80"])
        #expect(proxy(all, "http://example.com/") == "http://h:80")
        #expect(proxy(all, "https://example.com/") == "socks5://all:1080")

        // Empty values count as unset; a bad one is refused with its variable's name.
        #expect(try ProxySettings.fromEnvironment(["http_proxy": " "]).isDirect)
        let bad = #expect(throws: FerryError.self) { try ProxySettings.fromEnvironment(["https_proxy": "ftp://x"]) }
        #expect(bad?.message.hasPrefix("https_proxy:") == true)
        #expect(throws: FerryError.self) { try ProxySettings.fromEnvironment(["http_proxy": "https://x:1"]) }
    }

    @Test func proxyURLs() throws {
        let server = try ProxyServer(url: "http://us%40er:p%3Ass@[::1]:3128")
        #expect(server.kind == .http && server.host == "::1" && server.port == 3128)
        #expect(server.username == "us@er" && server.password == "p:ss")
        #expect(server.description == "http://[::1]:3128")
        #expect(try ProxyServer(url: "socks5h://h").port == 1080)
        #expect(try ProxyServer(url: "h").port == 80)
        #expect(throws: FerryError.self) { try ProxyServer(url: "http://") }
        #expect(throws: FerryError.self) { try ProxyServer(url: "socks4://h:1") }
    }

    @Test func noProxyNamesSuffixesAddressesAndPorts() throws {
        let list = ProxySettings.parseList("example.com, .internal ,10.0.0.0/8, fd00::/8,*.wild.test, host:8080, [::1]:9, 192.168.1.7")
        func bypasses(_ host: String, _ port: Int = 80) -> Bool { ProxySettings.bypasses(list, host: host, port: port) }
        #expect(bypasses("example.com") && bypasses("www.example.com") && bypasses("EXAMPLE.com"))
        #expect(!bypasses("notexample.com"))
        #expect(bypasses("a.internal") && bypasses("internal"))
        #expect(bypasses("10.1.2.3") && !bypasses("11.1.2.3"))
        #expect(bypasses("fd12::1") && bypasses("[fd12::1]") && !bypasses("fe80::1"))
        #expect(bypasses("x.wild.test"))
        #expect(bypasses("host", 8080) && !bypasses("host", 8081))
        #expect(bypasses("::1", 9) && !bypasses("::1", 10))
        #expect(bypasses("192.168.1.7") && !bypasses("192.168.1.8"))
        #expect(ProxySettings.bypasses(["*"], host: "anything", port: 1))
        #expect(!ProxySettings.bypasses(["10.0.0.0/33"], host: "10.0.0.1", port: 1))
        #expect(ProxySettings.bypasses(["::ffff:10.0.0.0/104"], host: "::ffff:10.9.9.9", port: 1))

        let settings = ProxySettings(all: try ProxyServer(url: "p:1"), bypass: ["127.0.0.0/8"])
        #expect(proxy(settings, "http://127.0.0.1:8080/") == nil)
        #expect(proxy(settings, "https://example.com/") == "http://p:1")
    }
}

@Suite struct ProxyHandshakeTests {
    @Test func httpConnectWithCredentials() {
        var handshake = ProxyHandshake(
            kind: .httpConnect(proxyAuthorization: "Basic dTpw"),
            destination: .name("example.com"),
            port: 443,
            proxyName: "the proxy http://p:3128"
        )
        guard case .send(let bytes) = handshake.start() else { Issue.record("no CONNECT"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n")
        #expect(handshake.receive(Array("HTTP/1.1 200 Connection established\r\n".utf8)) == .wait)
        #expect(handshake.receive(Array("\r\n\u{16}\u{3}".utf8)) == .established(leftover: [0x16, 0x03]))
    }

    @Test func httpConnectRefusals() {
        var anonymous = ProxyHandshake(kind: .httpConnect(proxyAuthorization: nil), destination: .address([10, 0, 0, 1]), port: 8443, proxyName: "the proxy P")
        guard case .send(let bytes) = anonymous.start() else { return }
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("CONNECT 10.0.0.1:8443 HTTP/1.1\r\n"))
        guard case .fail(let error) = anonymous.receive(Array("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n".utf8)) else {
            Issue.record("a 407 was accepted"); return
        }
        #expect(error.code == .userAuthenticationRequired)
        #expect(error.message.contains("--proxy-user"))

        var forbidden = ProxyHandshake(kind: .httpConnect(proxyAuthorization: nil), destination: .address([0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [1]), port: 443, proxyName: "the proxy P")
        guard case .send(let v6) = forbidden.start() else { return }
        #expect(String(decoding: v6, as: UTF8.self).hasPrefix("CONNECT [2001:0:0:0:0:0:0:1]:443"))
        guard case .fail(let refused) = forbidden.receive(Array("HTTP/1.0 403 Forbidden\r\n\r\n".utf8)) else { return }
        #expect(refused.message.contains("403 Forbidden"))

        var garbage = ProxyHandshake(kind: .httpConnect(proxyAuthorization: nil), destination: .name("h"), port: 1, proxyName: "P")
        _ = garbage.start()
        guard case .fail = garbage.receive(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) else { Issue.record("not HTTP was accepted"); return }
    }

    @Test func socks5WithPasswordAndName() {
        var handshake = ProxyHandshake(kind: .socks5(username: "u", password: "pw"), destination: .name("host.test"), port: 443, proxyName: "S")
        #expect(handshake.start() == .send([5, 2, 0, 2]))
        #expect(handshake.receive([5, 2]) == .send([1, 1, 0x75, 2, 0x70, 0x77]))
        let name = Array("host.test".utf8)
        #expect(handshake.receive([1, 0]) == .send([5, 1, 0, 3, UInt8(name.count)] + name + [1, 187]))
        #expect(handshake.receive([5, 0, 0, 1, 127, 0]) == .wait)
        #expect(handshake.receive([0, 1, 0x1F, 0x90, 9]) == .established(leftover: [9]))
    }

    @Test func socks5Refusals() {
        var anonymous = ProxyHandshake(kind: .socks5(username: nil, password: nil), destination: .address([127, 0, 0, 1]), port: 80, proxyName: "S")
        #expect(anonymous.start() == .send([5, 1, 0]))
        guard case .fail(let noMethod) = anonymous.receive([5, 0xFF]) else { return }
        #expect(noMethod.message.contains("user name and password"))

        var wrong = ProxyHandshake(kind: .socks5(username: "u", password: "bad"), destination: .address([127, 0, 0, 1]), port: 80, proxyName: "S")
        _ = wrong.start()
        _ = wrong.receive([5, 2])
        guard case .fail(let refused) = wrong.receive([1, 1]) else { return }
        #expect(refused.message.contains("refused the SOCKS5 user name or password"))

        var unreachable = ProxyHandshake(kind: .socks5(username: nil, password: nil), destination: .address([127, 0, 0, 1]), port: 80, proxyName: "S")
        _ = unreachable.start()
        #expect(unreachable.receive([5, 0]) == .send([5, 1, 0, 1, 127, 0, 0, 1, 0, 80]))
        guard case .fail(let failure) = unreachable.receive([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]) else { return }
        #expect(failure.code == .cannotConnectToHost)
        #expect(failure.message.contains("the connection was refused"))
    }
}
