import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// bytes(for:) and bytes(from:): the body as it arrives, byte by byte and line by line, the same as a
/// data task's.
@Suite struct AsyncBytesTests {
    private func body(_ session: URLSession, _ url: URL) async -> Data? {
        let waiter = SamenessPrograms.Waiter<Data?>()
        session.dataTask(with: url) { data, _, _ in waiter.finish(data) }.resume()
        return await waiter.value()
    }

    @Test func theBytesAndLinesAreTheDataTasksBody() async throws {
        try await TestServer.withServer { server in
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let url = URL(string: server.url("/bytes/300000?seed=21"))!
            let (bytes, response) = try await session.bytes(from: url)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var received = Data()
            for try await byte in bytes { received.append(byte) }
            #expect(received == (await body(session, url)))

            // Lines: the HTML error page, split as Apple's line sequence does (no empty lines).
            let page = URL(string: server.url("/status/500"))!
            let expected = String(decoding: try #require(await body(session, page)), as: UTF8.self)
                .split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }).map(String.init)
            var lines: [String] = []
            for try await line in try await session.bytes(from: page).0.lines { lines.append(line) }
            #expect(!lines.isEmpty)
            #expect(lines == expected)
        }
    }

    @Test func aFailureIsAURLError() async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        await #expect(throws: URLError.self) { _ = try await session.bytes(from: URL(string: "http://127.0.0.1:1/")!) }
    }

    /// A task delegate that records what it hears.
    final class Listener: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let seen = Mutex<[String]>([])
        let completed = SamenessPrograms.Waiter<Void>()
        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest
        ) async -> URLRequest? {
            seen.withLock { $0.append("redirect \(response.statusCode) to \(request.url?.path ?? "-")") }
            return request
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
            seen.withLock { $0.append("metrics \(metrics.transactionMetrics.count)") }
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            seen.withLock { $0.append("complete \(error == nil ? "ok" : "\((error as? URLError)?.code.rawValue ?? 0)")") }
            completed.finish(())
        }
    }

    @Test func aTaskDelegateHearsTheRedirectTheMetricsAndTheEndAndTheTaskIsThere() async throws {
        try await TestServer.withServer { server in
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let listener = Listener()
            let (bytes, response) = try await session.bytes(from: URL(string: server.url("/redirect/1?to=/bytes/200000"))!, delegate: listener)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(bytes.task.state == .running)
            var count = 0
            for try await _ in bytes { count += 1 }
            #expect(count == 200_000)
            await listener.completed.value()
            #expect(listener.seen.withLock { $0 } == ["redirect 302 to /bytes/200000", "metrics 2", "complete ok"])
            #expect(bytes.task.state == .completed)
            #expect(bytes.task.countOfBytesReceived == 200_000)
        }
    }

    /// Answers every request for stub.invalid with 300,000 bytes in three pieces, as a mocking library's
    /// protocol would.
    final class PiecesStub: URLProtocol, @unchecked Sendable {
        override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "stub.invalid" }
        override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
        override func startLoading() {
            let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "300000"])!
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            for piece in 0..<3 { client?.urlProtocol(self, didLoad: Data(repeating: UInt8(piece + 1), count: 100_000)) }
            client?.urlProtocolDidFinishLoading(self)
        }
        override func stopLoading() {}
    }

    @Test func aURLProtocolClassLoadsTheBytes() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [PiecesStub.self]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (bytes, response) = try await session.bytes(from: URL(string: "http://stub.invalid/big")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        var received = [UInt8]()
        for try await byte in bytes { received.append(byte) }
        let expected: [UInt8] = [UInt8](repeating: 1, count: 100_000) + [UInt8](repeating: 2, count: 100_000) + [UInt8](repeating: 3, count: 100_000)
        #expect(received == expected)
    }

    @Test func aReaderThatStopsReadingHoldsTheTransferBackAndItGoesOnWhenItReadsAgain() async throws {
        try await TestServer.withServer { server in
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let total = 16 << 20
            let (bytes, _) = try await session.bytes(from: URL(string: server.url("/bytes/\(total)?seed=9"))!)
            var iterator = bytes.makeAsyncIterator()
            _ = try await iterator.next()
            // Not reading: past 4 MiB waiting, the task is suspended (the event this waits for), far short
            // of the whole body.
            let end = Date().addingTimeInterval(60)
            while bytes.task.state != .suspended, Date() < end { try await Task.sleep(for: .milliseconds(5)) }
            #expect(bytes.task.state == .suspended)
            #expect(bytes.task.countOfBytesReceived < Int64(total * 3 / 4), "\(bytes.task.countOfBytesReceived)")
            print("bytes(for:) suspended its task at \(bytes.task.countOfBytesReceived) bytes received")
            // Reading again resumes it, and the body is whole.
            var count = 1
            let expected = DeterministicBytes(seed: 9).bytes(offset: 0, count: 1_000)
            var head = [UInt8]()
            while let byte = try await iterator.next() {
                if count < 1_000 { head.append(byte) }
                count += 1
            }
            #expect(count == total)
            #expect(head == Array(expected[1...]))
            #expect(bytes.task.state == .completed)
        }
    }

    @Test func cancellingTheReadersTaskCancelsTheDataTask() async throws {
        try await TestServer.withServer { server in
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let (bytes, _) = try await session.bytes(from: URL(string: server.url("/bytes/100000000?throttle=1000000"))!)
            let reader = Task {
                var count = 0
                for try await _ in bytes { count += 1 }
                return count
            }
            reader.cancel()
            _ = try? await reader.value
            let end = Date().addingTimeInterval(60)
            while bytes.task.error == nil, Date() < end { try await Task.sleep(for: .milliseconds(5)) }
            #expect(bytes.task.state == .completed)
            #expect((bytes.task.error as? URLError)?.code == .cancelled, "\(String(describing: bytes.task.error))")
        }
    }
}
