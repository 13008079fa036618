import Ferry
import FerryTestServer
import Foundation
import Testing

/// `Request.assumesHTTP3Capable` (URLSession's name): with the session's `.automatic` preference, a
/// request that sets it goes over HTTP/3 without an `Alt-Svc` first. Against aioquic's server, which has
/// no TCP side: the request that assumes HTTP/3 is answered, the same request without it cannot connect.
@Suite struct AssumesHTTP3CapableTests {
    static let aioquic = PythonPeer.hasModule("aioquic")

    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aRequestThatAssumesHTTP3IsAnsweredOverIt() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.tls.additionalTrustRootsPEM = [peer.certificates.trustRootPEM]
        #expect(configuration.httpVersionPreference == .automatic)
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        var request = Request(url: URL(string: "https://localhost:\(peer.ports[0])/bytes/5000")!)
        request.assumesHTTP3Capable = true
        let (data, response) = try await session.data(for: request)
        #expect(response.statusCode == 200)
        #expect(data == Data((0..<5000).map { UInt8($0 % 256) }))
        // Without it: TCP, where nothing listens.
        request.assumesHTTP3Capable = false
        await #expect(throws: FerryError.self) { _ = try await session.data(for: request) }
    }

    @Test func theFlagIsKeptWithAStoredRequest() throws {
        var request = Request(url: URL(string: "https://example.com/")!)
        #expect(!String(decoding: try JSONEncoder().encode(request), as: UTF8.self).contains("assumesHTTP3Capable"))
        request.assumesHTTP3Capable = true
        let decoded = try JSONDecoder().decode(Request.self, from: JSONEncoder().encode(request))
        #expect(decoded.assumesHTTP3Capable)
    }
}
