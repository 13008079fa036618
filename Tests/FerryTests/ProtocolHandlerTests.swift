import Ferry
import Foundation
import Synchronization
import Testing

/// A store of canned answers for the `memory:` scheme and for http://handled.invalid/, counting what it
/// was asked and told.
final class MemoryHandler: ProtocolHandler, @unchecked Sendable {
    static let stopped = Mutex(0)
    static let uploads = Mutex<[Data]>([])

    let request: Request
    let body: Data?
    let client: any ProtocolHandlerClient

    static func canHandle(_ request: Request) -> Bool {
        request.url.scheme == "memory" || request.url.host == "handled.invalid"
    }

    init(request: Request, body: Data?, client: any ProtocolHandlerClient) {
        self.request = request
        self.body = body
        self.client = client
    }

    func startLoading() {
        let url = request.url
        switch url.path {
        case "/redirect":
            var next = request
            next.url = URL(string: "memory://store/text")!
            client.wasRedirected(to: next, redirectResponse: Response(url: url, statusCode: 301, headers: [:]))
        case "/fail":
            client.didFail(with: FerryError(.resourceUnavailable, "the store has no such item"))
        case "/never":
            break  // answers nothing: only a cancel ends it
        case "/echo":
            if let body { Self.uploads.withLock { $0.append(body) } }
            client.didReceive(Response(url: url, statusCode: 201, headers: ["Content-Type": "application/octet-stream"]))
            client.didLoad(body ?? Data())
            client.didFinishLoading()
        default:
            // Answered from another thread, in pieces.
            let client = self.client
            Task {
                client.didReceive(Response(url: url, statusCode: 200, headers: ["Content-Type": "text/plain", "Content-Length": "11"]))
                client.didLoad(Data("hello ".utf8))
                client.didLoad(Data("world".utf8))
                client.didFinishLoading()
            }
        }
    }

    func stopLoading() {
        if request.url.path == "/never" { Self.stopped.withLock { $0 += 1 } }
    }
}

@Suite(.serialized) struct ProtocolHandlerTests {
    private func session() -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolHandlers = [MemoryHandler.self]
        return Session(configuration: configuration)
    }

    @Test func dataTasksLoadFromTheHandlerEvenForHTTP() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        let (data, response) = try await session.data(from: URL(string: "memory://store/text")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello world")
        #expect(response.statusCode == 200)
        #expect(response.mimeType == "text/plain")
        // The handler wins over the built-in http: handled.invalid does not exist on any network.
        let (http, _) = try await session.data(from: URL(string: "http://handled.invalid/text")!)
        #expect(String(decoding: http, as: UTF8.self) == "hello world")
        // Without the handler, the same session's other URLs still go to the network (and fail here).
        let plain = Session(configuration: .ephemeral)
        defer { plain.invalidateAndCancel() }
        await #expect(throws: FerryError.self) { _ = try await plain.data(from: URL(string: "memory://store/text")!) }
    }

    @Test func uploadsAndDownloadsUseItToo() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        var request = Request(url: URL(string: "memory://store/echo")!)
        request.method = "POST"
        let payload = Data((0..<5000).map { UInt8($0 % 256) })
        let (echoed, response) = try await session.upload(for: request, from: payload)
        #expect(response.statusCode == 201)
        #expect(echoed == payload)
        #expect(MemoryHandler.uploads.withLock { $0.last } == payload)
        let (file, _) = try await session.download(for: Request(url: URL(string: "memory://store/text")!))
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try String(contentsOf: file, encoding: .utf8) == "hello world")
    }

    @Test func redirectsAreFollowedAndFailuresReported() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        let (data, response) = try await session.data(from: URL(string: "memory://store/redirect")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello world")
        #expect(response.url.absoluteString == "memory://store/text")
        let error = await #expect(throws: FerryError.self) {
            _ = try await session.data(from: URL(string: "memory://store/fail")!)
        }
        #expect(error?.code == .resourceUnavailable)
        #expect(error?.message == "the store has no such item")
    }

    @Test func aCancelStopsTheHandler() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        let before = MemoryHandler.stopped.withLock { $0 }
        let task = session.dataTask(with: Request(url: URL(string: "memory://store/never")!))
        task.resume()
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await task.waitUntilFinished()
        #expect(task.error?.code == .cancelled)
        #expect(MemoryHandler.stopped.withLock { $0 } == before + 1)
    }

    @Test func backgroundSessionsRefuseHandlers() {
        var configuration = SessionConfiguration.background(identifier: "com.example.handlers")
        configuration.protocolHandlers = [MemoryHandler.self]
        #expect(throws: FerryError.self) { try configuration.validate() }
    }
}
