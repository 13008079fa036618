import Crypto
import FerryCore
import FerryTestServer
import Foundation
import NIOSSL
import Testing

/// `ferry get` over https with curl's TLS flags, against the test server's TLS listener.
@Suite struct TLSCommandTests {
    @Test func trustComesFromCacertSSLCertFileOrInsecure() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let url = server.url("/bytes/300000", on: .tls)
            let cli = CLIRunner(directory: directory)

            let untrusted = try await cli.run(["get", url, "-o", "a.bin", "-q"])
            #expect(untrusted.status == 1, "\(untrusted.stderr)")
            #expect(untrusted.stderr.contains("issued by"), "\(untrusted.stderr)")
            #expect(untrusted.stderr.contains("trust its CA with --cacert FILE (or SSL_CERT_FILE)"), "\(untrusted.stderr)")
            #expect(!untrusted.stderr.contains("session"), "the library's words: \(untrusted.stderr)")
            #expect(!untrusted.stderr.contains("BoringSSL") && !untrusted.stderr.contains(".c:"))

            let cacert = try await cli.run(["get", url, "-o", "b.bin", "--cacert", "ca.pem", "--json"])
            #expect(cacert.status == 0, "\(cacert.stderr)")
            #expect(try fileSHA256(directory + "/b.bin") == bytesSHA256(300_000))
            let reports = try JSONSerialization.jsonObject(with: Data(cacert.stdout.utf8)) as? [[String: Any]]
            #expect(reports?.first?["protocol"] as? String == "h2")
            #expect(reports?.first?["tlsVersion"] as? String == "TLSv1.3")
            #expect((reports?.first?["remoteAddress"] as? String)?.hasPrefix("127.0.0.1:") == true)

            var withFile = CLIRunner(directory: directory)
            withFile.environment = ["SSL_CERT_FILE": directory + "/ca.pem"]
            let file = try await withFile.run(["get", url, "-o", "c.bin", "-q"])
            #expect(file.status == 0, "\(file.stderr)")

            let insecure = try await cli.run(["get", url, "-o", "d.bin", "-q", "-k"])
            #expect(insecure.status == 0, "\(insecure.stderr)")
            #expect(try fileSHA256(directory + "/d.bin") == bytesSHA256(300_000))
        }
    }

    @Test func pinsVersionsResolveAndVerbose() async throws {
        var configuration = TestServer.Configuration()
        configuration.tlsMinimumVersion = .tlsv13
        try await TestServer.withServer(configuration) { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let cli = CLIRunner(directory: directory)
            let url = server.url("/bytes/1000", on: .tls)
            let leaf = try #require(server.certificates.chain.first)
            let pin = "sha256//" + Data(SHA256.hash(data: try leaf.extractPublicKey().toSPKIBytes())).base64EncodedString()

            let pinned = try await cli.run(["get", url, "-o", "p.bin", "-q", "--cacert", "ca.pem", "--pinnedpubkey", pin])
            #expect(pinned.status == 0, "\(pinned.stderr)")
            let wrong = "sha256//" + Data(count: 32).base64EncodedString()
            let mismatch = try await cli.run(["get", url, "-o", "q.bin", "-q", "-k", "--pinnedpubkey", wrong])
            #expect(mismatch.status == 1)
            #expect(mismatch.stderr.contains("matches no pinned key"), "\(mismatch.stderr)")

            let old = try await cli.run(["get", url, "-o", "r.bin", "-q", "--cacert", "ca.pem", "--tls-max", "1.2"])
            #expect(old.status == 1)
            #expect(old.stderr.contains("no TLS version in common"), "\(old.stderr)")
            let contradiction = try await cli.run(["get", url, "--tlsv1.3", "--tls-max", "1.2"])
            #expect(contradiction.status == 2)

            let port = server.ports[.tls]!
            let resolved = try await cli.run([
                "get", "https://localhost:\(port)/bytes/1000", "-o", "s.bin", "--cacert", "ca.pem",
                "--resolve", "localhost:\(port):127.0.0.1", "-v", "-q",
            ])
            #expect(resolved.status == 0, "\(resolved.stderr)")
            #expect(resolved.stderr.contains("* Connected to localhost (127.0.0.1:\(port))"), "\(resolved.stderr)")
            #expect(resolved.stderr.contains("* TLSv1.3, protocol h2"))
            #expect(resolved.stderr.contains("> GET /bytes/1000 HTTP/2"))
            #expect(resolved.stderr.contains("< HTTP/2 200"))
            let elsewhere = try await cli.run([
                "get", "https://elsewhere.example:\(port)/bytes/1000", "-o", "t.bin", "--cacert", "ca.pem",
                "--resolve", "elsewhere.example:\(port):127.0.0.1", "-q",
            ])
            #expect(elsewhere.status == 1)
            #expect(elsewhere.stderr.contains("it is for localhost, 127.0.0.1"), "\(elsewhere.stderr)")
            let badResolve = try await cli.run(["get", url, "--resolve", "nonsense"])
            #expect(badResolve.status == 2)
        }
    }

    @Test func aClientCertificateForMutualTLS() async throws {
        let client = try TestCertificates.generate(clientAuth: true)
        var configuration = TestServer.Configuration()
        configuration.clientCertificateTrustRootPEM = client.trustRootPEM
        try await TestServer.withServer(configuration) { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            try client.chainPEM.write(toFile: directory + "/client.pem", atomically: true, encoding: .utf8)
            try client.privateKeyPEM.write(toFile: directory + "/client.key", atomically: true, encoding: .utf8)
            try (client.chainPEM + client.privateKeyPEM).write(toFile: directory + "/both.pem", atomically: true, encoding: .utf8)
            let cli = CLIRunner(directory: directory)
            let url = server.url("/bytes/5000", on: .tls)
            let without = try await cli.run(["get", url, "-o", "a.bin", "-q", "--cacert", "ca.pem"])
            #expect(without.status != 0)
            let with = try await cli.run(["get", url, "-o", "b.bin", "-q", "--cacert", "ca.pem", "--cert", "client.pem", "--key", "client.key"])
            #expect(with.status == 0, "\(with.stderr)")
            let combined = try await cli.run(["get", url, "-o", "c.bin", "-q", "--cacert", "ca.pem", "--cert", "both.pem"])
            #expect(combined.status == 0, "\(combined.stderr)")
            let noKey = try await cli.run(["get", url, "-o", "d.bin", "--cert", "client.pem"])
            #expect(noKey.status == 2)
            #expect(noKey.stderr.contains("--key"))
        }
    }
}
