import Ferry
import FerryTestServer
import Foundation
import Testing

/// An ephemeral session keeps cookies, cached responses and credentials in memory only: a child process
/// uses all three under a home directory of its own, and the parent finds that tree still empty
/// (issue 17's "leaves nothing on disk, asserted on the file tree").
@Suite struct EphemeralSessionTests {
    private static let urlVariable = "FERRY_TEST_EPHEMERAL_ORIGIN"

    @Test func anEphemeralSessionLeavesNothingOnDisk() async throws {
        try await TestServer.withServer { server in
            let root = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let home = root.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let report = root.appendingPathComponent("child.log")
            let child = try spawnTestChild(
                "childUsesAnEphemeralSession",
                variables: [
                    "HOME": home.path,
                    "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
                    "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
                    Self.urlVariable: server.url(""),
                ],
                output: .file(report.path)
            )
            try await requireSuccess(of: child, report: report)
            let left = FileManager.default.enumerator(atPath: home.path)?.allObjects as? [String] ?? []
            #expect(left.isEmpty, "an ephemeral session wrote \(left)")
            // The child did reach the server: cookies, the cache and a challenge were all exercised.
            #expect(server.counters.requests(path: "/bytes/100") == 1)
            #expect(server.counters.requests(path: "/basic-auth/u/p") == 2)
        }
    }

    /// The child's part: cookies set and sent, a response cached and served from memory, a permanent
    /// credential stored and used.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[urlVariable] != nil))
    func childUsesAnEphemeralSession() async throws {
        let origin = try #require(ProcessInfo.processInfo.environment[Self.urlVariable])
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        // A persistent cookie: a default session would write it to its file.
        _ = try await session.data(for: request(origin + "/bytes/1?set_cookie=a%3D1%3B%20Max-Age%3D3600"))
        #expect(session.cookies?.cookies.isEmpty == false)
        #expect(session.cookies?.path == nil)

        let cached = origin + "/bytes/100?cache_control=max-age%3D86400"
        _ = try await session.data(for: request(cached))
        _ = try await session.data(for: request(cached))
        #expect(session.cache?.directory == nil)

        let url = try #require(URL(string: origin))
        session.credentials?.set(
            Credential(user: "u", password: "p"),
            for: ProtectionSpace(host: url.host ?? "", port: url.port ?? 80, scheme: "basic", realm: "ferry-testserver"),
            persistence: .permanent
        )
        let (_, response) = try await session.data(for: request(origin + "/basic-auth/u/p"))
        #expect(response.statusCode == 200)
    }
}
