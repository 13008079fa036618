import Ferry
import FerryTestServer
import Foundation
import Testing

/// A session's credential store answers a proxy that asks for credentials (issue 17), through the real
/// tinyproxy with Basic authentication; the recorded settings of a background task carry them too.
@Suite(.serialized) struct ProxyCredentialTests {
    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy is needed (.ci/run installs it)"))
    func theCredentialStoreAnswersTheProxy() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let peer = try await ProxyPeer.tinyproxy(in: directory, basicAuth: ("pu", "pp"))
            defer { peer.stop() }
            var configuration = SessionConfiguration.ephemeral
            configuration.proxy = .init(kind: .http, host: "127.0.0.1", port: peer.port)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let url = URL(string: server.url("/bytes/1000?seed=2"))!

            // No credential: the proxy's 407 is the answer.
            let (_, refused) = try await session.data(for: Request(url: url))
            #expect(refused.statusCode == 407)
            #expect(server.counters.requests(path: "/bytes/1000") == 0)

            // A credential for the proxy's space: sent, and the request goes through.
            let store = try #require(session.credentials)
            let space = ProtectionSpace(proxy: ProxyServer(kind: .http, host: "127.0.0.1", port: peer.port))
            #expect(space.isProxy && space.scheme == "basic")
            store.set(Credential(user: "pu", password: "pp"), for: space, persistence: .forSession)
            let (body, passed) = try await session.data(for: Request(url: url))
            #expect(passed.statusCode == 200 && body.count == 1000)
            #expect(server.counters.requests(path: "/bytes/1000") == 1)

            // A server's credential for the same host and port is not a proxy's.
            let other = Session(configuration: configuration)
            defer { other.invalidateAndCancel() }
            other.credentials?.set(
                Credential(user: "pu", password: "pp"),
                for: ProtectionSpace(host: "127.0.0.1", port: peer.port, scheme: "basic", realm: nil),
                persistence: .forSession
            )
            let (_, again) = try await other.data(for: Request(url: url))
            #expect(again.statusCode == 407)
        }
    }
}
