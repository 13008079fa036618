import Crypto
import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// A request whose body is a stream, redirected with 307 or 308 (which keep the method and body, RFC
/// 9110 §15.4.8): a stream cannot be read twice, so Apple's session asks the delegate's
/// `urlSession(_:task:needNewBodyStream:)` for the body again. FoundationNetworking does not, so this is
/// checked against Apple's documentation, not in the sameness suite.
@Suite struct BodyStreamRedirectTests {
    /// POSTs `body` to `path` as an `httpBodyStream` with its Content-Length, and waits for the end.
    static func postStream(_ body: Data, to path: String, on server: TestServer, delegate: CredentialDelegate?) async -> (Data?, URLResponse?, (any Error)?) {
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: server.url(path))!)
        request.httpMethod = "POST"
        request.httpBodyStream = InputStream(data: body)
        request.setValue("\(body.count)", forHTTPHeaderField: "Content-Length")
        let waiter = SamenessPrograms.Waiter<(Data?, URLResponse?, (any Error)?)>()
        session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }.resume()
        return await waiter.value()
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [307, 308])
    func aRedirectedStreamIsAskedForAgain(_ code: Int) async throws {
        try await TestServer.withServer { server in
            let body = Data((0..<100_000).map { UInt8($0 % 251) })
            let provider = CredentialDelegate(body: body)
            let (data, response, error) = await Self.postStream(body, to: "/redirect/1?code=\(code)&to=/upload", on: server, delegate: provider)
            #expect(error == nil)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(response?.url?.path == "/upload")
            let answer = try #require(data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            #expect(answer["length"] as? Int == body.count)
            #expect(answer["sha256"] as? String == Self.sha256(body))
            #expect(answer["method"] as? String == "POST")
            #expect(provider.lock.withLock { provider.asked } == 1)
        }
    }

    @Test func withoutANewStreamTheTaskFailsAsApplesDoes() async throws {
        try await TestServer.withServer { server in
            let (_, _, error) = await Self.postStream(Data(count: 5000), to: "/redirect/1?code=307&to=/upload", on: server, delegate: nil)
            let failure = try #require(error as? URLError)
            #expect(failure.code == .requestBodyStreamExhausted)
            #expect(failure.localizedDescription.contains("needNewBodyStream"))
            // Nothing short was sent: the redirect's target never saw a request.
            #expect(server.counters.requests(path: "/upload") == 0)
        }
    }

    @Test(arguments: ["httpBody", "uploadTask(from:)"])
    func aBodyInMemoryIsSentWholeAgain(_ form: String) async throws {
        try await TestServer.withServer { server in
            let body = Data((0..<70_000).map { UInt8($0 % 249) })
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: URL(string: server.url("/redirect/2?code=308&to=/upload"))!)
            request.httpMethod = "PUT"
            let waiter = SamenessPrograms.Waiter<(Data?, URLResponse?, (any Error)?)>()
            let task: URLSessionTask
            if form == "httpBody" {
                request.httpBody = body
                task = session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }
            } else {
                task = session.uploadTask(with: request, from: body) { waiter.finish(($0, $1, $2)) }
            }
            task.resume()
            let (data, response, error) = await waiter.value()
            #expect(error == nil)
            #expect((response as? HTTPURLResponse)?.statusCode == 201)
            let answer = try #require(data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            #expect(answer["length"] as? Int == body.count)
            #expect(answer["sha256"] as? String == Self.sha256(body))
            #expect(task.countOfBytesSent == Int64(body.count))
        }
    }

    @Test func aStreamSentAgainWithACredentialIsAskedForAgain() async throws {
        try await TestServer.withServer { server in
            let body = Data((0..<30_000).map { UInt8($0 % 241) })
            let provider = CredentialDelegate(body: body)
            let (_, response, error) = await Self.postStream(body, to: "/basic-auth/ann/s3cret", on: server, delegate: provider)
            #expect(error == nil)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(provider.lock.withLock { provider.asked } == 1)
            // The body arrived whole twice: with the request the 401 answered, and again with the credential.
            #expect(server.counters.requestBodyBytes(pathPrefix: "/basic-auth/") == Int64(2 * body.count))
        }
    }
}
