import Crypto
import FerryCore
import FerryTestServer
import Foundation
import NIOCore
import NIOSSL
import Testing

@testable import FerryEngine

/// https on Ferry's own transport: trust, names, validity, pins, versions, client identity, and what a
/// refusal says (plain words: no library internals, no build paths).
@Suite struct TLSTransportTests {
    private func options(_ server: TestServer, _ change: (inout TransportOptions) -> Void = { _ in }) -> TransportOptions {
        trusting(server, change)
    }

    private func get(_ transport: NetworkTransport, _ url: String) async throws -> (TransportResponse, [UInt8]) {
        // The bound only tells waiting from hanging: a loaded debug run that parses every system root took over 30 s.
        try await fetch(transport, url, within: .seconds(120))
    }

    private func refusal(_ transport: NetworkTransport, _ url: String) async -> FerryError? {
        do {
            _ = try await get(transport, url)
            return nil
        } catch {
            return error as? FerryError
        }
    }

    /// A refusal's message is for people: no BoringSSL, no source paths.
    private func expectPlain(_ error: FerryError?, _ location: SourceLocation = #_sourceLocation) {
        let message = error?.message ?? ""
        #expect(!message.contains("BoringSSL") && !message.contains(".c:") && !message.contains("/Sources/"), "\(message)", sourceLocation: location)
    }

    @Test func httpsOverHTTP1HasTLSDetailsAndReuse() async throws {
        try await TestServer.withServer { server in
            let transport = NetworkTransport(options: options(server) { $0.httpVersion = .http1Only })
            defer { Task { try await transport.shutdown() } }
            let (first, body) = try await get(transport, server.url("/bytes/200000?seed=3", on: .tls))
            #expect(first.status == 200 && first.protocolName == "http/1.1")
            #expect(body == DeterministicBytes(seed: 3).bytes(offset: 0, count: 200_000))
            #expect(first.timing.tlsVersion == "TLSv1.3")
            #expect(first.timing.reusedConnection == false)
            let start = try #require(first.timing.secureConnectionStart)
            let end = try #require(first.timing.secureConnectionEnd)
            #expect(start <= end)
            #expect(first.timing.remoteAddress?.hasPrefix("127.0.0.1:") == true)
            let (second, _) = try await get(transport, server.url("/bytes/10", on: .tls))
            #expect(second.timing.reusedConnection == true)
            #expect(second.timing.secureConnectionStart == nil)
            #expect(second.timing.tlsVersion == "TLSv1.3")
        }
    }

    @Test func anUntrustedIssuerIsNamed() async throws {
        try await TestServer.withServer { server in
            let transport = NetworkTransport()
            defer { Task { try await transport.shutdown() } }
            let error = await refusal(transport, server.url("/bytes/10", on: .tls))
            #expect(error?.code == .serverCertificateUntrusted)
            #expect(error?.message.contains("issued by") == true, "\(String(describing: error))")
            #expect(error?.message.contains("ferry-testserver test CA") == true)
            #expect(error?.message.contains("not trusted") == true)
            expectPlain(error)

            // -k: accepted without verification.
            let insecure = NetworkTransport(options: { var o = TransportOptions(); o.tls.allowsUntrustedCertificates = true; return o }())
            defer { Task { try await insecure.shutdown() } }
            let status = try await get(insecure, server.url("/bytes/10", on: .tls)).0.status
            #expect(status == 200)
        }
    }

    @Test func aNameTheCertificateDoesNotHoldIsListed() async throws {
        try await TestServer.withServer { server in
            let port = server.ports[.tls]!
            let transport = NetworkTransport(options: options(server) { $0.resolve = ["wrong.example:\(port)": "127.0.0.1"] })
            defer { Task { try await transport.shutdown() } }
            let error = await refusal(transport, "https://wrong.example:\(port)/bytes/10")
            #expect(error?.code == .serverCertificateUntrusted)
            #expect(error?.message.contains("does not name it") == true, "\(String(describing: error))")
            #expect(error?.message.contains("localhost, 127.0.0.1") == true)
            expectPlain(error)
            // --resolve with the name the certificate holds: accepted, Host and SNI say localhost.
            let right = NetworkTransport(options: options(server) { $0.resolve = ["localhost:\(port)": "127.0.0.1"] })
            defer { Task { try await right.shutdown() } }
            let status = try await get(right, "https://localhost:\(port)/bytes/10").0.status
            #expect(status == 200)
        }
    }

    @Test func anExpiredCertificateSaysWhen() async throws {
        var configuration = TestServer.Configuration()
        configuration.certificates = try TestCertificates.generate(now: Date().addingTimeInterval(-60 * 86_400))
        try await TestServer.withServer(configuration) { server in
            let transport = NetworkTransport(options: options(server))
            defer { Task { try await transport.shutdown() } }
            let error = await refusal(transport, server.url("/bytes/10", on: .tls))
            #expect(error?.code == .serverCertificateUntrusted)
            #expect(error?.message.contains("expired on") == true, "\(String(describing: error))")
            expectPlain(error)
        }
    }

    @Test func pinsMatchOrRefuse() async throws {
        try await TestServer.withServer { server in
            let leaf = try #require(server.certificates.chain.first)
            let digest = Data(SHA256.hash(data: try leaf.extractPublicKey().toSPKIBytes())).base64EncodedString()
            let pinned = NetworkTransport(options: options(server) { $0.tls.pinnedPublicKeys = try! TLSSettings.parsePins("sha256//\(Data(count: 32).base64EncodedString());sha256//\(digest)") })
            defer { Task { try await pinned.shutdown() } }
            let status = try await get(pinned, server.url("/bytes/10", on: .tls)).0.status
            #expect(status == 200)

            let other = NetworkTransport(options: options(server) { $0.tls.pinnedPublicKeys = [Data(count: 32).base64EncodedString()] })
            defer { Task { try await other.shutdown() } }
            let error = await refusal(other, server.url("/bytes/10", on: .tls))
            #expect(error?.code == .serverCertificateUntrusted)
            #expect(error?.message.contains("matches no pinned key") == true, "\(String(describing: error))")
            #expect(error?.message.contains("sha256//\(digest)") == true)
            #expect(throws: FerryError.self) { try TLSSettings.parsePins("md5//abc") }
            #expect(throws: FerryError.self) { try TLSSettings.parsePins("sha256//bm90IDMyIGJ5dGVz") }
        }
    }

    @Test func noCommonVersionIsSaidSo() async throws {
        var configuration = TestServer.Configuration()
        configuration.tlsMinimumVersion = .tlsv13
        try await TestServer.withServer(configuration) { server in
            let transport = NetworkTransport(options: options(server) { $0.maximumTLSVersion = .tlsv12 })
            defer { Task { try await transport.shutdown() } }
            let error = await refusal(transport, server.url("/bytes/10", on: .tls))
            #expect(error?.code == .secureConnectionFailed)
            #expect(error?.message.contains("no TLS version in common") == true, "\(String(describing: error))")
            #expect(error?.message.contains("only tlsv12") == true)
            expectPlain(error)
        }
    }

    @Test func mutualTLSPresentsTheClientIdentity() async throws {
        let client = try TestCertificates.generate(clientAuth: true)
        var configuration = TestServer.Configuration()
        configuration.clientCertificateTrustRootPEM = client.trustRootPEM
        try await TestServer.withServer(configuration) { server in
            let anonymous = NetworkTransport(options: options(server))
            defer { Task { try await anonymous.shutdown() } }
            let error = await refusal(anonymous, server.url("/bytes/10", on: .tls))
            #expect(error != nil)
            expectPlain(error)

            let identified = NetworkTransport(options: options(server) {
                $0.tls.clientCertificatePEM = client.chainPEM
                $0.tls.clientPrivateKeyPEM = client.privateKeyPEM
            })
            defer { Task { try await identified.shutdown() } }
            let status = try await get(identified, server.url("/bytes/10", on: .tls)).0.status
            #expect(status == 200)

            let broken = NetworkTransport(options: options(server) {
                $0.tls.clientCertificatePEM = client.chainPEM
                $0.tls.clientPrivateKeyPEM = "not a key"
            })
            #expect(throws: FerryError.self) { try broken.checkSettings() }
        }
    }
}
