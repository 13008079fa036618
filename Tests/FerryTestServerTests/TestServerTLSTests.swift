import AsyncHTTPClient
import FerryTestServer
import Foundation
import NIOCore
import NIOSSL
import Testing

@Suite struct TestServerTLSTests {
    @Test func httpsNegotiatesHTTP2() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/200000?seed=12", on: .tls))
            #expect(response.version == .http2)
            #expect(Bytes(response.body) == Bytes(expectedBytes(200_000, seed: 12)))
            let echo = try await client.fetch(server.url("/echo", on: .tls))
            #expect(try echo.json()["protocol"] as? String == "HTTP/2")
            #expect(server.counters.requestsByProtocol["HTTP/2"] == 2)
        }
    }

    @Test func rangesAndFaultsWorkOverHTTP2() async throws {
        try await withServerAndClient { server, client in
            let part = try await client.fetch(
                server.url("/bytes/10000?seed=1", on: .tls),
                headers: [("Range", "bytes=9000-")]
            )
            #expect(part.status == 206)
            #expect(Bytes(part.body) == Bytes(expectedBytes(1000, seed: 1, offset: 9000)))
            let posted = try await client.fetch(server.url("/upload", on: .tls), method: .POST, body: [1, 2, 3, 4])
            #expect(try posted.json()["length"] as? Int == 4)
            // Last: the cut takes the whole HTTP/2 connection down.
            let cut = try await client.fetch(server.url("/bytes/100000?close_after=1000", on: .tls))
            #expect(cut.status == 200)
            #expect(cut.body.count <= 1000)
            #expect(cut.bodyError != nil)
        }
    }

    @Test func httpsServesHTTP1ToClientsThatAskForIt() async throws {
        try await withServerAndClient(httpVersion: .http1Only) { server, client in
            let response = try await client.fetch(server.url("/bytes/1000?seed=2", on: .tls))
            #expect(response.version == .http1_1)
            #expect(Bytes(response.body) == Bytes(expectedBytes(1000, seed: 2)))
        }
    }

    @Test func aLoadedIdentityIsServed() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let generated = try TestCertificates.generate()
        let chainFile = directory.appendingPathComponent("chain.pem")
        let keyFile = directory.appendingPathComponent("key.pem")
        try Data(generated.chainPEM.utf8).write(to: chainFile)
        try Data(generated.privateKeyPEM.utf8).write(to: keyFile)
        var configuration = TestServer.Configuration()
        configuration.certificates = try TestCertificates.load(certificateFile: chainFile.path, keyFile: keyFile.path)
        #expect(configuration.certificates?.trustRootPEM == generated.trustRootPEM)
        try await withServerAndClient(configuration) { server, client in
            let response = try await client.fetch(server.url("/bytes/10", on: .tls))
            #expect(response.status == 200)
        }
        #expect(throws: TestServerError.self) {
            try TestCertificates.load(certificateFile: keyFile.path, keyFile: keyFile.path)
        }
        #expect(throws: TestServerError.self) {
            try TestCertificates.load(
                certificateFile: chainFile.path,
                keyFile: directory.appendingPathComponent("none").path
            )
        }
    }

    @Test func anUntrustedClientIsRefused() async throws {
        try await TestServer.withServer { server in
            var configuration = HTTPClient.Configuration()
            configuration.timeout.connect = .seconds(2)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            await #expect(throws: (any Error).self) { _ = try await client.fetch(server.url("/bytes/1", on: .tls)) }
            try await client.shutdown()
        }
    }
}
