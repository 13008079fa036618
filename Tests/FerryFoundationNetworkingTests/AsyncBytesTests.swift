import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
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

    @Test func aFailureIsAURLErrorAndADelegateIsRefused() async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        await #expect(throws: URLError.self) { _ = try await session.bytes(from: URL(string: "http://127.0.0.1:1/")!) }
        final class Delegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {}
        do {
            _ = try await session.bytes(from: URL(string: "http://127.0.0.1:1/")!, delegate: Delegate())
            Issue.record("a task delegate was taken")
        } catch let error as URLError {
            #expect(error.code == .unsupportedURL)
        }
    }
}
