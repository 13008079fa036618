import AsyncHTTPClient
import Crypto
import FerryTestServer
import Foundation
import NIOCore
import Testing

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

@Suite struct TestServerUploadTests {
    @Test func theSinkReportsLengthAndDigest() async throws {
        try await withServerAndClient { server, client in
            let body = expectedBytes(3_000_000, seed: 8)
            let response = try await client.fetch(server.url("/upload"), method: .POST, body: body)
            #expect(response.status == 200)
            let report = try response.json()
            #expect(report["length"] as? Int == 3_000_000)
            #expect(report["sha256"] as? String == sha256Hex(body))
            #expect(report["method"] as? String == "POST")
            let put = try await client.fetch(server.url("/upload/any/name"), method: .PUT, body: [1, 2, 3])
            #expect(put.status == 201)
            #expect(try put.json()["length"] as? Int == 3)
            #expect(try await client.fetch(server.url("/upload")).status == 405)
        }
    }

    @Test func keptUploadsCanBeFetched() async throws {
        try await withServerAndClient { server, client in
            let body = expectedBytes(100_000, seed: 2)
            _ = try await client.fetch(
                server.url("/upload?keep=k"),
                method: .PUT,
                headers: [("Content-Type", "application/x-test")],
                body: body
            )
            #expect(Bytes(server.storedUpload(key: "k")?.body ?? []) == Bytes(body))
            #expect(server.storedUpload(key: "k")?.contentType == "application/x-test")
            let fetched = try await client.fetch(server.url("/uploads/k"))
            #expect(Bytes(fetched.body) == Bytes(body))
            #expect(try await client.fetch(server.url("/uploads/none")).status == 404)
        }
    }

    @Test func multipartPartsAreReported() async throws {
        try await withServerAndClient { server, client in
            let file = expectedBytes(50_000, seed: 5)
            let boundary = "ferry-boundary-1234"
            var body = Array(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello world\r\n".utf8
            )
            body += Array(
                ("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"data.bin\"\r\n"
                    + "Content-Type: application/octet-stream\r\n\r\n").utf8
            )
            body += file
            body += Array("\r\n--\(boundary)--\r\n".utf8)
            let response = try await client.fetch(
                server.url("/multipart"),
                method: .POST,
                headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")],
                body: body
            )
            #expect(response.status == 200)
            let parts = try #require(try response.json()["parts"] as? [[String: Any]])
            #expect(parts.count == 2)
            #expect(parts[0]["name"] as? String == "title")
            #expect(parts[0]["text"] as? String == "hello world")
            #expect(parts[1]["name"] as? String == "file")
            #expect(parts[1]["filename"] as? String == "data.bin")
            #expect(parts[1]["contentType"] as? String == "application/octet-stream")
            #expect(parts[1]["length"] as? Int == 50_000)
            #expect(parts[1]["sha256"] as? String == sha256Hex(file))
        }
    }

    @Test func malformedMultipartIsRefused() async throws {
        try await withServerAndClient { server, client in
            let notMultipart = try await client.fetch(server.url("/multipart"), method: .POST, body: [1, 2])
            #expect(notMultipart.status == 415)
            let broken = try await client.fetch(
                server.url("/multipart"),
                method: .POST,
                headers: [("Content-Type", "multipart/form-data; boundary=xyz")],
                body: Array("garbage".utf8)
            )
            #expect(broken.status == 400)
        }
    }

    @Test func echoReportsTheRequest() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(
                server.url("/echo?a=1&a=2"),
                method: .PATCH,
                headers: [("X-Custom", "yes")],
                body: [9, 9]
            )
            let echo = try response.json()
            #expect(echo["method"] as? String == "PATCH")
            #expect((echo["query"] as? [String: [String]])?["a"] == ["1", "2"])
            #expect(echo["bodyLength"] as? Int == 2)
            let headers = try #require(echo["headers"] as? [[String]])
            #expect(headers.contains(["x-custom", "yes"]))
        }
    }
}

@Suite struct TestServerAuthAndCookieTests {
    @Test func basicAuthChallengesAndAccepts() async throws {
        try await withServerAndClient { server, client in
            let url = server.url("/basic-auth/alice/secret")
            let challenge = try await client.fetch(url)
            #expect(challenge.status == 401)
            #expect(challenge.header("www-authenticate")?.hasPrefix("Basic realm=") == true)
            let good = Data("alice:secret".utf8).base64EncodedString()
            #expect(try await client.fetch(url, headers: [("Authorization", "Basic \(good)")]).status == 200)
            let bad = Data("alice:wrong".utf8).base64EncodedString()
            #expect(try await client.fetch(url, headers: [("Authorization", "Basic \(bad)")]).status == 401)
        }
    }

    @Test(arguments: ["MD5", "SHA-256"])
    func digestAuthChallengesAndAccepts(algorithm: String) async throws {
        try await withServerAndClient { server, client in
            let path = "/digest-auth/auth/bob/pw?algorithm=\(algorithm)"
            let challenge = try await client.fetch(server.url(path))
            #expect(challenge.status == 401)
            let header = try #require(challenge.header("www-authenticate"))
            #expect(header.hasPrefix("Digest "))
            #expect(header.contains("algorithm=\(algorithm)"))
            let nonceStart = try #require(header.range(of: "nonce=\""))
            let nonce = String(header[nonceStart.upperBound...].prefix(while: { $0 != "\"" }))
            func hash(_ text: String) -> String {
                algorithm == "MD5"
                    ? Insecure.MD5.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
                    : sha256Hex(Array(text.utf8))
            }
            func authorization(password: String, nonce: String) -> String {
                let ha1 = hash("bob:ferry-testserver:\(password)")
                let ha2 = hash("GET:\(path)")
                let response = hash("\(ha1):\(nonce):00000001:abcdef:auth:\(ha2)")
                return "Digest username=\"bob\", realm=\"ferry-testserver\", nonce=\"\(nonce)\", uri=\"\(path)\", "
                    + "algorithm=\(algorithm), qop=auth, nc=00000001, cnonce=\"abcdef\", response=\"\(response)\""
            }
            let good = try await client.fetch(
                server.url(path),
                headers: [("Authorization", authorization(password: "pw", nonce: nonce))]
            )
            #expect(good.status == 200)
            let bad = try await client.fetch(
                server.url(path),
                headers: [("Authorization", authorization(password: "no", nonce: nonce))]
            )
            #expect(bad.status == 401)
            let unknown = try await client.fetch(
                server.url(path),
                headers: [("Authorization", authorization(password: "pw", nonce: "madeup"))]
            )
            #expect(unknown.status == 401)
            #expect(unknown.header("www-authenticate")?.contains("stale=true") == true)
        }
    }

    @Test func cookiesAreSetAndEchoed() async throws {
        try await withServerAndClient { server, client in
            let set = try await client.fetch(server.url("/cookies/set?session=abc&theme=dark"))
            #expect(set.headers["set-cookie"] == ["session=abc; Path=/", "theme=dark; Path=/"])
            let echoed = try await client.fetch(
                server.url("/cookies"),
                headers: [("Cookie", "session=abc; theme=dark")]
            )
            #expect(try echoed.json()["cookies"] as? [String: String] == ["session": "abc", "theme": "dark"])
            let deleted = try await client.fetch(server.url("/cookies/delete?session"))
            #expect(deleted.header("set-cookie")?.contains("Max-Age=0") == true)
        }
    }
}
