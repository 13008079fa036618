import Ferry
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// Cookies in in-process sessions: every hop of a redirect sends and keeps them (issue 17's login flow).
/// Ephemeral sessions throughout: the default sessions of this test process share one store.
@Suite struct SessionCookieTests {
    struct Echo: Decodable {
        var cookies: [String: String]
    }

    func sent(_ session: Session, _ url: String, handling: Bool = true) async throws -> [String: String] {
        var request = request(url)
        request.httpShouldHandleCookies = handling
        let (data, _) = try await session.data(for: request)
        return try JSONDecoder().decode(Echo.self, from: data).cookies
    }

    @Test func aLoginFlowGetsThroughItsRedirect() async throws {
        try await withSession(.ephemeral) { server, session in
            // Set-Cookie on the redirect, then the page that needs it: the cookie goes with the next hop.
            let login = server.url("/redirect/1?to=/cookies&set_cookie=session%3Dabc%3B%20Path%3D%2F")
            let v1 = try await sent(session, login)
            #expect(v1 == ["session": "abc"])
            let v2 = try await sent(session, server.url("/cookies"))
            #expect(v2 == ["session": "abc"])
            #expect(session.cookies?.cookies.map(\.name) == ["session"])
        }
    }

    @Test func cookiesAreSetDeletedAndKeptPerSession() async throws {
        try await withSession(.ephemeral) { server, session in
            let changes = Counter()
            _ = session.cookies?.addObserver { changes.add() }
            _ = try await session.data(for: request(server.url("/cookies/set?a=1&b=2")))
            let v3 = try await sent(session, server.url("/cookies"))
            #expect(v3 == ["a": "1", "b": "2"])
            _ = try await session.data(for: request(server.url("/cookies/delete?a")))
            let v4 = try await sent(session, server.url("/cookies"))
            #expect(v4 == ["b": "2"])
            #expect(changes.value == 2)

            // Another ephemeral session has a store of its own.
            let other = try makeSession(.ephemeral, trusting: server)
            defer { other.invalidateAndCancel() }
            let v5 = try await sent(other, server.url("/cookies"))
            #expect(v5 == [:])
        }
    }

    @Test func cookiesCanBeTurnedOffPerSessionAndPerRequest() async throws {
        var off = SessionConfiguration.ephemeral
        off.httpShouldSetCookies = false
        try await withSession(off) { server, session in
            #expect(session.cookies == nil)
            _ = try await session.data(for: request(server.url("/cookies/set?a=1")))
            let v6 = try await sent(session, server.url("/cookies"))
            #expect(v6 == [:])
        }
        try await withSession(.ephemeral) { server, session in
            _ = try await session.data(for: request(server.url("/cookies/set?a=1")))
            let v7 = try await sent(session, server.url("/cookies"), handling: false)
            #expect(v7 == [:])
            // A Cookie header the request sets is sent as it is.
            var own = request(server.url("/cookies"))
            own.headers["Cookie"] = "mine=1"
            let (data, _) = try await session.data(for: own)
            let echoed = try JSONDecoder().decode(Echo.self, from: data).cookies
            #expect(echoed == ["mine": "1"])
        }
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }
}

/// What servers expect (issue 17): a User-Agent and an Accept, overridable.
@Suite struct DefaultHeaderTests {
    struct Echo: Decodable {
        var headers: [[String]]
        func value(_ name: String) -> String? {
            headers.first { $0.first?.lowercased() == name.lowercased() }?.last
        }
    }

    @Test func theLibrarySaysWhoItIsUnlessToldOtherwise() async throws {
        var configured = SessionConfiguration.ephemeral
        configured.httpAdditionalHeaders["User-Agent"] = "app/2"
        try await withSession(.ephemeral) { server, session in
            let (data, _) = try await session.data(for: request(server.url("/echo")))
            let echo = try JSONDecoder().decode(Echo.self, from: data)
            #expect(echo.value("user-agent") == "Ferry/\(FerryVersion.current)")
            #expect(echo.value("accept") == "*/*")
            var own = request(server.url("/echo"))
            own.headers["Accept"] = "application/json"
            let (mine, _) = try await session.data(for: own)
            #expect(try JSONDecoder().decode(Echo.self, from: mine).value("accept") == "application/json")
        }
        try await withSession(configured) { server, session in
            let (data, _) = try await session.data(for: request(server.url("/echo")))
            #expect(try JSONDecoder().decode(Echo.self, from: data).value("user-agent") == "app/2")
        }
    }
}

/// A user and password in the URL answer the server's challenge (issue 17: they were ignored).
@Suite struct URLCredentialTests {
    @Test func theURLsCredentialAnswersOnceWithoutADelegate() async throws {
        try await withSession(.ephemeral) { server, session in
            let port = URL(string: server.url("/"))!.port!
            let good = try await session.data(for: request("http://alice:s%3Acret@127.0.0.1:\(port)/basic-auth/alice/s:cret"))
            #expect(good.1.statusCode == 200)
            let digest = try await session.data(
                for: request("http://alice:pw@127.0.0.1:\(port)/digest-auth/auth/alice/pw?algorithm=SHA-256")
            )
            #expect(digest.1.statusCode == 200)
            let wrong = try await session.data(for: request("http://alice:nope@127.0.0.1:\(port)/basic-auth/alice/pw"))
            #expect(wrong.1.statusCode == 401, "a wrong credential is tried once, then the 401 is the answer")
            let none = try await session.data(for: request("http://127.0.0.1:\(port)/basic-auth/alice/pw"))
            #expect(none.1.statusCode == 401)
        }
    }
}

/// Data tasks ask for and decode compressed bodies, as URLSession's do.
@Suite struct ContentEncodingTests {
    @Test func aGzipBodyArrivesDecoded() async throws {
        try await withSession(.ephemeral) { server, session in
            let (data, response) = try await session.data(for: request(server.url("/bytes/200000?seed=4&gzip=1")))
            #expect(response.headers["content-encoding"] == "gzip")
            #expect(sha256(data) == expectedSHA256(200_000, seed: 4))
            let (echo, _) = try await session.data(for: request(server.url("/echo")))
            #expect(String(decoding: echo, as: UTF8.self).contains("gzip, deflate"))
        }
    }
}

/// Configuration values honoured or refused (issue 17).
@Suite struct ConfigurationValueTests {
    @Test func aRequestsShorterTimeoutWins() async throws {
        try await withSession(.ephemeral) { server, session in
            var slow = request(server.url("/bytes/100000?stall_after=1000&gate=never"))
            slow.timeoutInterval = 0.5
            let started = ContinuousClock.now
            await #expect(throws: FerryError.self) { try await session.data(for: slow) }
            #expect(ContinuousClock.now - started < .seconds(30), "the request's 0.5 s, not the session's 60 s")
        }
    }

    @Test func pipeliningIsRefusedClearly() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpShouldUsePipelining = true
        try await withSession(configuration) { server, session in
            do {
                _ = try await session.data(for: request(server.url("/bytes/10")))
                Issue.record("a session asking for pipelining ran")
            } catch let error as FerryError {
                #expect(error.message.contains("pipelining is not supported"))
            }
        }
    }
}

/// The credential store answers before the delegate (issue 17).
@Suite struct CredentialStoreTests {
    final class Answering: SessionDelegate, TaskDelegate, @unchecked Sendable {
        let asked = Mutex(0)
        func session(_ session: Session, task: SessionTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
            asked.withLock { $0 += 1 }
            return .useCredential(Credential(user: "alice", password: "pw"))
        }
    }

    @Test func aStoredCredentialAnswersFirstThenTheDelegate() async throws {
        try await TestServer.withServer { server in
            let port = URL(string: server.url("/"))!.port!
            let space = ProtectionSpace(host: "127.0.0.1", port: port, scheme: "basic", realm: "ferry-testserver")
            let plain = try makeSession(.ephemeral, trusting: server)
            defer { plain.invalidateAndCancel() }
            plain.credentials?.set(Credential(user: "alice", password: "pw"), for: space, persistence: .forSession)
            let (_, answered) = try await plain.data(for: request(server.url("/basic-auth/alice/pw")))
            #expect(answered.statusCode == 200, "no delegate: the stored credential answered")

            let delegate = Answering()
            let asking = try makeSession(.ephemeral, trusting: server)
            defer { asking.invalidateAndCancel() }
            asking.credentials?.set(Credential(user: "alice", password: "wrong"), for: space, persistence: .forSession)
            let (_, second) = try await asking.data(for: request(server.url("/basic-auth/alice/pw")), delegate: delegate)
            #expect(second.statusCode == 200)
            #expect(delegate.asked.withLock { $0 } == 1, "the delegate was asked after the stored one failed")

            var none = SessionConfiguration.ephemeral
            none.urlCredentialStorage = .none
            let without = try makeSession(none, trusting: server)
            defer { without.invalidateAndCancel() }
            #expect(without.credentials == nil)
        }
    }

    @Test func permanentCredentialsAreSharedThroughTheirFile() throws {
        let path = try temporaryDirectory().appendingPathComponent("credentials.json").path
        let space = ProtectionSpace(host: "Example.org", port: 443, scheme: "Basic", realm: nil)
        CredentialStore(file: path).set(Credential(user: "u", password: "p"), for: space, persistence: .permanent)
        let other = CredentialStore(file: path)
        #expect(other.credential(for: ProtectionSpace(host: "example.org", port: 443, scheme: "basic", realm: "any")) == Credential(user: "u", password: "p"))
        let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        other.remove(for: space)
        #expect(CredentialStore(file: path).credential(for: space) == nil)
        let memory = CredentialStore()
        memory.set(Credential(user: "x", password: "y"), for: space, persistence: .none)
        #expect(memory.credential(for: space) == nil, "persistence none keeps nothing")
    }
}
