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
    final class Provider: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let body: Data
        let lock = NSLock()
        var asked = 0
        init(body: Data) { self.body = body }

        func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
            lock.withLock { asked += 1 }
            completionHandler(InputStream(data: body))
        }
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [307, 308])
    func aRedirectedStreamIsAskedForAgain(_ code: Int) async throws {
        try await TestServer.withServer { server in
            let body = Data((0..<100_000).map { UInt8($0 % 251) })
            let provider = Provider(body: body)
            let session = URLSession(configuration: .ephemeral, delegate: provider, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: URL(string: server.url("/redirect/1?code=\(code)&to=/upload"))!)
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: body)
            request.setValue("\(body.count)", forHTTPHeaderField: "Content-Length")
            let waiter = SamenessPrograms.Waiter<(Data?, URLResponse?, (any Error)?)>()
            session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }.resume()
            let (data, response, error) = await waiter.value()
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
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: URL(string: server.url("/redirect/1?code=307&to=/upload"))!)
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: Data(count: 5000))
            request.setValue("5000", forHTTPHeaderField: "Content-Length")
            let waiter = SamenessPrograms.Waiter<(Data?, URLResponse?, (any Error)?)>()
            session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }.resume()
            let (_, _, error) = await waiter.value()
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

    /// Answers Basic challenges with ann/s3cret and gives the body again when asked.
    final class CredentialProvider: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let body: Data
        let lock = NSLock()
        var asked = 0
        init(body: Data) { self.body = body }

        func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
            lock.withLock { asked += 1 }
            completionHandler(InputStream(data: body))
        }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            completionHandler(.useCredential, URLCredential(user: "ann", password: "s3cret", persistence: .forSession))
        }
    }

    @Test func aStreamSentAgainWithACredentialIsAskedForAgain() async throws {
        try await TestServer.withServer { server in
            let body = Data((0..<30_000).map { UInt8($0 % 241) })
            let provider = CredentialProvider(body: body)
            let session = URLSession(configuration: .ephemeral, delegate: provider, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: URL(string: server.url("/basic-auth/ann/s3cret"))!)
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: body)
            request.setValue("\(body.count)", forHTTPHeaderField: "Content-Length")
            let waiter = SamenessPrograms.Waiter<(Data?, URLResponse?, (any Error)?)>()
            session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }.resume()
            let (_, response, error) = await waiter.value()
            #expect(error == nil)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(provider.lock.withLock { provider.asked } == 1)
            // The body arrived whole twice: with the request the 401 answered, and again with the credential.
            #expect(server.counters.requestBodyBytes(pathPrefix: "/basic-auth/") == Int64(2 * body.count))
        }
    }
}
