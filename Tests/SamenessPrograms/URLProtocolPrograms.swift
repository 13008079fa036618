// URLProtocol programs of the sameness suite: a stub protocol, as mocking libraries write one, answers
// requests for the host stub.invalid and the scheme stub:, compiled against FoundationNetworking and
// against FerryFoundationNetworking like the rest of SamenessPrograms.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Answers by path: /ok (a 200 with "hello stub"), /pieces (the same in two pieces), /fail (notConnectedToInternet),
/// /redirect (a 302 to /ok), /body (the size of the request body it read), /big (300,000 bytes in
/// three pieces), /hang (nothing until stopped).
final class StubProtocol: URLProtocol, @unchecked Sendable {
    /// What the stub saw, for the programs to report.
    static let seen = Mutex<[String]>([])
    /// Told when /hang starts loading, and when it is stopped.
    static let hangStarted = Mutex(SamenessPrograms.Waiter<Void>())
    static let hangStopped = Mutex(SamenessPrograms.Waiter<Void>())

    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host == "stub.invalid" || request.url?.scheme == "stub"
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    private func respond(_ status: Int, _ fields: [String: String] = [:], body: [Data]) {
        let total = body.reduce(0) { $0 + $1.count }
        var all = fields
        all["Content-Length"] = "\(total)"
        let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: all)!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        for piece in body { client?.urlProtocol(self, didLoad: piece) }
        client?.urlProtocolDidFinishLoading(self)
    }

    override func startLoading() {
        let path = request.url?.path ?? ""
        Self.seen.withLock { $0.append("start \(request.httpMethod ?? "-") \(path)") }
        switch path {
        case "/ok", "/x/ok":
            respond(200, ["Content-Type": "text/plain"], body: [Data("hello stub".utf8)])
        case "/pieces":
            respond(200, ["Content-Type": "text/plain"], body: [Data("hello ".utf8), Data("stub".utf8)])
        case "/fail":
            client?.urlProtocol(self, didFailWithError: URLError(.notConnectedToInternet))
        case "/redirect":
            var next = request
            next.url = URL(string: "http://stub.invalid/ok")
            let response = HTTPURLResponse(url: request.url!, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: ["Location": "/ok"])!
            client?.urlProtocol(self, wasRedirectedTo: next, redirectResponse: response)
        case "/body":
            var count = request.httpBody?.count ?? 0
            if let stream = request.httpBodyStream {
                stream.open()
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let read = stream.read(&buffer, maxLength: buffer.count)
                    if read <= 0 { break }
                    count += read
                }
                stream.close()
            }
            respond(200, body: [Data("read \(count)".utf8)])
        case "/big":
            respond(200, body: (0..<3).map { Data(repeating: UInt8($0 + 1), count: 100_000) })
        case "/hang":
            Self.hangStarted.withLock { $0 }.finish(())
        default:
            respond(404, body: [])
        }
    }

    override func stopLoading() {
        Self.seen.withLock { $0.append("stop \(request.url?.path ?? "")") }
        if request.url?.path == "/hang" { Self.hangStopped.withLock { $0 }.finish(()) }
    }

    /// What the stub saw since the last call.
    static func drain() -> [String] {
        seen.withLock { seen in
            defer { seen = [] }
            return seen
        }
    }
}

extension SamenessPrograms {
    static let urlProtocolPrograms: [(name: String, program: Program)] = [
        ("a URLProtocol answers a data task", protocolAnswers),
        ("a URLProtocol's delegate calls, in order", protocolDelegateOrder),
        ("a URLProtocol's body in pieces reaches the completion handler whole", protocolPieces),
        ("a URLProtocol's failure is the task's error", protocolFailure),
        ("a URLProtocol's redirect is followed", protocolRedirect),
        ("a URLProtocol's redirect the delegate refuses", protocolRedirectRefused),
        ("a URLProtocol reads an upload's body", protocolUploadBody),
        ("a URLProtocol answers a download", protocolDownload),
        ("a URLProtocol task cancelled while loading", protocolCancel),
        ("a request no URLProtocol takes goes to the network", protocolFallsThrough),
        ("a URLProtocol serves its own scheme", protocolScheme),
        ("a registered URLProtocol serves the shared session", protocolRegistered),
        ("async data(for:) through a URLProtocol", protocolAsync),
    ]

    static func stubbedSession(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubProtocol.self]
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    static func protocolAnswers(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        _ = StubProtocol.drain()
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "http://stub.invalid/ok")!))
        let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        let type = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") ?? "-"
        return [text, describe(response), describe(error), "type \(type)"] + StubProtocol.drain()
    }

    static func protocolDelegateOrder(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = stubbedSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        _ = StubProtocol.drain()
        let task = session.dataTask(with: URL(string: "http://stub.invalid/big")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + [describe(task.response), "received \(task.countOfBytesReceived)"] + StubProtocol.drain()
    }

    static func protocolPieces(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "http://stub.invalid/pieces")!))
        return [data.map { String(decoding: $0, as: UTF8.self) } ?? "-", describe(response), describe(error)]
    }

    static func protocolFailure(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "http://stub.invalid/fail")!))
        return [describe(data), describe(response), describe(error)]
    }

    static func protocolRedirect(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = stubbedSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        _ = StubProtocol.drain()
        let task = session.dataTask(with: URL(string: "http://stub.invalid/redirect")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + [describe(task.response), "current \(task.currentRequest?.url?.path ?? "-")"] + StubProtocol.drain()
    }

    static func protocolRedirectRefused(_ origin: String) async -> [String] {
        let recorder = Recorder()
        recorder.refuseRedirects = true
        let session = stubbedSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "http://stub.invalid/redirect")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + [describe(task.response)]
    }

    static func protocolUploadBody(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "http://stub.invalid/body")!)
        request.httpMethod = "POST"
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        session.uploadTask(with: request, from: Data(repeating: 3, count: 5000)) { waiter.finish(($0, $1, $2)) }.resume()
        let (data, response, error) = await waiter.value()
        return [data.map { String(decoding: $0, as: UTF8.self) } ?? "-", describe(response), describe(error)]
    }

    static func protocolDownload(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        session.downloadTask(with: URL(string: "http://stub.invalid/big")!) { url, response, error in
            let contents = url.flatMap { try? Data(contentsOf: $0) }
            waiter.finish([describe(contents), describe(response), describe(error)])
        }.resume()
        return await waiter.value()
    }

    static func protocolCancel(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        _ = StubProtocol.drain()
        let started = Waiter<Void>()
        let stopped = Waiter<Void>()
        StubProtocol.hangStarted.withLock { $0 = started }
        StubProtocol.hangStopped.withLock { $0 = stopped }
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        let task = session.dataTask(with: URL(string: "http://stub.invalid/hang")!) { waiter.finish(($0, $1, $2)) }
        task.resume()
        await started.value()
        // (The state right after cancel() is not compared: FoundationNetworking's is 2 or 3 by a race.)
        task.cancel()
        let (data, response, error) = await waiter.value()
        let failing = ((error as NSError?)?.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString ?? "-"
        // stopLoading runs on the protocol's own thread: wait for it.
        await stopped.value()
        return [describe(data), describe(response), describe(error), "failing URL \(failing)"] + StubProtocol.drain()
    }

    static func protocolFallsThrough(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/bytes/100?seed=2")!))
        return [describe(data), describe(response), describe(error)]
    }

    static func protocolScheme(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "stub://any/x/ok")!))
        return [data.map { String(decoding: $0, as: UTF8.self) } ?? "-", "url \(response?.url?.absoluteString ?? "-")", describe(error)]
    }

    static func protocolRegistered(_ origin: String) async -> [String] {
        _ = URLProtocol.registerClass(StubProtocol.self)
        defer { URLProtocol.unregisterClass(StubProtocol.self) }
        let (data, response, error) = await dataTask(URLSession.shared, URLRequest(url: URL(string: "http://stub.invalid/ok")!))
        return [data.map { String(decoding: $0, as: UTF8.self) } ?? "-", describe(response), describe(error)]
    }

    static func protocolAsync(_ origin: String) async -> [String] {
        let session = stubbedSession()
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(for: URLRequest(url: URL(string: "http://stub.invalid/ok")!))
            return [String(decoding: data, as: UTF8.self), describe(response)]
        } catch {
            return [describe(error)]
        }
    }
}
