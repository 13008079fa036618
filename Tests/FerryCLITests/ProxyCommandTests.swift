import FerryCore
import FerryTestServer
import Foundation
import Testing

/// `ferry get` through real proxies (tinyproxy, microsocks), with curl's environment variables and flags.
@Suite(.serialized) struct ProxyCommandTests {
    /// The test server, tinyproxy, and a fresh directory whose `ca.pem` trusts the server.
    static func withServerAndTinyproxy(_ body: (TestServer, ProxyPeer, String) async throws -> Void) async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let proxy = try await ProxyPeer.tinyproxy(in: directory)
            defer { proxy.stop() }
            try await body(server, proxy, directory)
        }
    }

    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy and microsocks are needed (.ci/run installs them)"))
    func theEnvironmentMatrixReachesTheProxy() async throws {
        try await Self.withServerAndTinyproxy { server, proxy, directory in
            let plain = server.url("/bytes/200000")
            let secure = server.url("/bytes/200000", on: .tls)
            let address = "http://127.0.0.1:\(proxy.port)"
            func run(_ environment: [String: String], _ url: String, _ extra: [String] = []) async throws -> CLIRunner.Run {
                var cli = CLIRunner(directory: directory)
                cli.environment = environment
                return try await cli.run(["get", url, "-o", "out.bin", "-q", "--cacert", "ca.pem"] + extra)
            }
            // Each row: the environment, the URL, whether the proxy carries it.
            let rows: [([String: String], String, Bool)] = [
                (["http_proxy": address], plain, true),
                (["HTTP_PROXY": address], plain, false),  // upper case ignored, as curl does
                (["https_proxy": address], secure, true),
                (["HTTPS_PROXY": address], secure, true),
                (["https_proxy": address], plain, false),  // the other scheme's variable
                (["ALL_PROXY": address], plain, true),
                (["all_proxy": address], secure, true),
                (["http_proxy": address, "no_proxy": "127.0.0.0/8"], plain, false),
                (["http_proxy": address, "NO_PROXY": "127.0.0.1"], plain, false),
                (["http_proxy": address, "no_proxy": "10.0.0.0/8,example.com"], plain, true),
                (["http_proxy": address, "no_proxy": "*"], plain, false),
            ]
            for (environment, url, proxied) in rows {
                let before = proxy.forwardedRequests()
                let result = try await run(environment, url)
                #expect(result.status == 0, "\(environment) \(url): \(result.stderr)")
                #expect(try fileSHA256(directory + "/out.bin") == bytesSHA256(200_000))
                try await waitUntil("the proxy logs", within: 30) { !proxied || proxy.forwardedRequests() > before }
                #expect((proxy.forwardedRequests() > before) == proxied, "\(environment) \(url)")
            }
            // --proxy wins over the environment; --noproxy over no_proxy.
            var before = proxy.forwardedRequests()
            let flag = try await run(["http_proxy": "http://127.0.0.1:1"], plain, ["--proxy", address])
            #expect(flag.status == 0, "\(flag.stderr)")
            try await waitUntil("the proxy logs", within: 30) { proxy.forwardedRequests() > before }
            before = proxy.forwardedRequests()
            let bypassed = try await run(["http_proxy": address], plain, ["--noproxy", "127.0.0.1"])
            #expect(bypassed.status == 0)
            #expect(proxy.forwardedRequests() == before)
            // A proxy that is down fails clearly; a malformed variable is refused with its name.
            let down = try await run(["http_proxy": "http://127.0.0.1:1"], plain)
            #expect(down.status == 1)
            #expect(down.stderr.contains("the proxy http://127.0.0.1:1"), "\(down.stderr)")
            let malformed = try await run(["https_proxy": "ftp://x"], secure)
            #expect(malformed.status == 2)
            #expect(malformed.stderr.contains("https_proxy"), "\(malformed.stderr)")
            let aria = try await CLIRunner(directory: directory).run(["get", plain, "-x", address])
            #expect(aria.status == 2)
            #expect(aria.stderr.contains("--proxy"), "\(aria.stderr)")
            // --json names the proxy.
            let json = try await run([:], secure, ["--proxy", address, "--json"])
            let reports = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
            #expect(reports?.first?["proxy"] as? String == address)
            // -v says the connection is the proxy's (issue 41: it once named the origin with the proxy's
            // address).
            let verbose = try await run([:], plain, ["--proxy", address, "-v"])
            #expect(verbose.status == 0, "\(verbose.stderr)")
            #expect(
                verbose.stderr.contains("* Connected to the proxy \(address) (127.0.0.1:\(proxy.port)) for 127.0.0.1"),
                "\(verbose.stderr)"
            )
            // The request line as the proxy gets it: in absolute form.
            #expect(verbose.stderr.contains("> GET \(plain) HTTP/1.1\n"), "\(verbose.stderr)")
        }
    }

    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy and microsocks are needed (.ci/run installs them)"))
    func proxyAuthentication() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let http = try await ProxyPeer.tinyproxy(in: directory, basicAuth: ("ferry", "s3cret"))
            defer { http.stop() }
            let socks = try await ProxyPeer.microsocks(in: directory, user: "ferry", password: "s3cret")
            defer { socks.stop() }
            let cli = CLIRunner(directory: directory)
            let plain = server.url("/bytes/100000")
            let secure = server.url("/bytes/100000", on: .tls)
            let base = ["-q", "--cacert", "ca.pem", "-o", "out.bin"]

            // 407 without credentials, plain and tunnelled; then with them, in the URL or --proxy-user.
            let refused = try await cli.run(["get", secure, "--proxy", "http://127.0.0.1:\(http.port)"] + base)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("407"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--proxy-user"))
            let refusedPlain = try await cli.run(["get", plain, "--proxy", "http://127.0.0.1:\(http.port)"] + base)
            #expect(refusedPlain.status == 1, "\(refusedPlain.stderr)")
            #expect(refusedPlain.stderr.contains("407"), "\(refusedPlain.stderr)")
            for url in [plain, secure] {
                let inURL = try await cli.run(["get", url, "--proxy", "http://ferry:s3cret@127.0.0.1:\(http.port)"] + base)
                #expect(inURL.status == 0, "\(inURL.stderr)")
                #expect(try fileSHA256(directory + "/out.bin") == bytesSHA256(100_000))
                let flag = try await cli.run(
                    ["get", url, "--proxy", "http://127.0.0.1:\(http.port)", "--proxy-user", "ferry:s3cret"] + base
                )
                #expect(flag.status == 0, "\(flag.stderr)")
            }

            // SOCKS5 with a password (RFC 1929), names resolved here (socks5) or by the proxy (socks5h).
            for scheme in ["socks5", "socks5h"] {
                for url in [plain, secure.replacingOccurrences(of: "127.0.0.1", with: "localhost")] {
                    let through = try await cli.run(
                        ["get", url, "--proxy", "\(scheme)://ferry:s3cret@127.0.0.1:\(socks.port)"] + base
                    )
                    #expect(through.status == 0, "\(scheme) \(url): \(through.stderr)")
                    #expect(try fileSHA256(directory + "/out.bin") == bytesSHA256(100_000))
                }
            }
            let wrong = try await cli.run(["get", plain, "--proxy", "socks5h://ferry:nope@127.0.0.1:\(socks.port)"] + base)
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("refused the SOCKS5 user name or password"), "\(wrong.stderr)")
            let anonymous = try await cli.run(["get", plain, "--proxy", "socks5h://127.0.0.1:\(socks.port)"] + base)
            #expect(anonymous.stderr.contains("user name and password"), "\(anonymous.stderr)")
        }
    }
}
