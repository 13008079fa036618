import Ferry
import FerryTestServer
import Foundation
import Testing

/// Cookies of default sessions persist across processes, and two processes setting cookies at once lose
/// none (issue 17). The processes are this test binary run again, each child with the same
/// `XDG_DATA_HOME`, so that `CookieStore.shared` is one file in a temporary directory.
@Suite struct CookiesAcrossProcessesTests {
    private static let urlVariable = "FERRY_TEST_COOKIE_URL"
    private static let prefixVariable = "FERRY_TEST_COOKIE_PREFIX"

    @Test func twoProcessesSettingCookiesAtOnceLoseNone() async throws {
        try await TestServer.withServer { server in
            let data = try temporaryDirectory()
            var children: [(ChildProcess, URL)] = []
            for prefix in ["left", "right"] {
                let report = data.appendingPathComponent("\(prefix).log")
                let variables = [
                    "XDG_DATA_HOME": data.path, Self.urlVariable: server.url("/bytes/1"), Self.prefixVariable: prefix,
                ]
                children.append((try spawnTestChild("childSetsCookies", variables: variables, output: .file(report.path)), report))
            }
            for (child, report) in children { try await requireSuccess(of: child, report: report) }
            let file = data.appendingPathComponent("ferry/cookies.json").path
            let names = Set(CookieStore(file: file).cookies.map(\.name))
            #expect(names.count == 60, "\(names.count) of 60 cookies kept")
            #expect(names.contains("left29") && names.contains("right0"))
        }
    }

    /// A child's part: 30 responses, each setting a persistent cookie of its own, through a default
    /// session (CookieStore.shared).
    @Test(.enabled(if: ProcessInfo.processInfo.environment[prefixVariable] != nil))
    func childSetsCookies() async throws {
        let environment = ProcessInfo.processInfo.environment
        let url = try #require(environment[Self.urlVariable])
        let prefix = try #require(environment[Self.prefixVariable])
        let session = Session(configuration: .default)
        defer { session.invalidateAndCancel() }
        #expect(session.cookies?.path?.hasPrefix(environment["XDG_DATA_HOME"] ?? "/nowhere") == true)
        for index in 0..<30 {
            let cookie = "\(prefix)\(index)=v; Max-Age=3600".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            _ = try await session.data(for: request(url + "?set_cookie=" + cookie))
        }
    }
}
