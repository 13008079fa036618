import Ferry
import FerryTestServer
import Foundation
import Testing

/// Credentials stay with their origin across redirects (docs/RELIABILITY.md, security).
@Suite struct RedirectSecurityTests {
    struct Echo: Decodable {
        var headers: [[String]]
        var listener: String
        func value(_ name: String) -> String? { headers.first { $0.first?.lowercased() == name }?.last }
    }

    @Test func authorizationAndCookiesAreNotForwardedToAnotherOrigin() async throws {
        try await TestServer.withServer { server in
            // Ephemeral: the default configuration's cookie jar is shared with tests that store cookies for
            // 127.0.0.1 (any port), which would then be sent here as the jar's, not the caller's.
            let session = try makeSession(.ephemeral, trusting: server)
            defer { session.invalidateAndCancel() }
            func echo(_ path: String) async throws -> Echo {
                var sent = request(server.url(path))
                sent.headers["Authorization"] = "Bearer secret"
                sent.headers["Cookie"] = "session=secret"
                let (data, _) = try await session.data(for: sent)
                return try JSONDecoder().decode(Echo.self, from: data)
            }
            let same = try await echo("/redirect/1?mode=absolute&to=/echo")
            #expect(same.listener == "main")
            #expect(same.value("authorization") == "Bearer secret")
            #expect(same.value("cookie") == "session=secret")
            let cross = try await echo("/redirect/1?mode=cross&to=/echo")
            #expect(cross.listener == "alternate")
            #expect(cross.value("authorization") == nil)
            #expect(cross.value("cookie") == nil)
        }
    }
}
