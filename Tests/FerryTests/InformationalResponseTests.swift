import Ferry
import FerryTestServer
import Foundation
import Testing

/// Informational answers (1xx other than 101) reach the task's delegate
/// (`session(_:task:didReceiveInformationalResponse:)`, URLSession's didReceiveInformationalResponse),
/// in order and before the final response, over HTTP/1.1 and HTTP/2; a server that sends them without
/// end fails the task instead of keeping it alive.
@Suite struct InformationalResponseTests {
    enum Version: String, CaseIterable, Sendable { case http1, http2 }

    static func configuration(_ version: Version) -> SessionConfiguration {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpVersionPreference = version == .http2 ? .http2 : .http1Only
        return configuration
    }

    static func url(_ server: TestServer, _ path: String, _ version: Version) -> String {
        version == .http2 ? server.url(path, on: .tls) : server.url(path)
    }

    @Test(arguments: Version.allCases)
    func earlyHintsReachTheDelegateInOrderBeforeTheResponse(_ version: Version) async throws {
        let recorder = Recorder()
        try await withSession(Self.configuration(version), delegate: recorder) { server, session in
            let task = session.dataTask(with: request(Self.url(server, "/bytes/1000?seed=4&early_hints=2", version)))
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error == nil)
            let events = recorder.events(of: task.taskIdentifier)
            #expect(
                Array(events.prefix(3)) == [
                    .informational(task: task.taskIdentifier, status: 103, link: "</hint-1.css>; rel=preload"),
                    .informational(task: task.taskIdentifier, status: 103, link: "</hint-2.css>; rel=preload"),
                    .response(task: task.taskIdentifier, status: 200),
                ],
                "\(events)"
            )
            #expect(recorder.body(of: task.taskIdentifier) == DeterministicBytes(seed: 4).bytes(offset: 0, count: 1000))
            let transaction = try #require(recorder.metrics(of: task.taskIdentifier)?.transactionMetrics.first)
            #expect(transaction.networkProtocolName == (version == .http2 ? "h2" : "http/1.1"))
        }
    }

    @Test(arguments: Version.allCases)
    func aServerThatSendsInformationalAnswersWithoutEndFailsTheTask(_ version: Version) async throws {
        let recorder = Recorder()
        try await withSession(Self.configuration(version), delegate: recorder) { server, session in
            let limit = 64
            let task = session.dataTask(with: request(Self.url(server, "/bytes/10?early_hints=\(limit + 1)", version)))
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error?.code == .badServerResponse, "\(String(describing: task.error))")
            #expect(task.error?.message.contains("more than \(limit) informational (1xx) responses") == true, "\(String(describing: task.error))")
            let kinds = recorder.events(of: task.taskIdentifier).map(\.kind)
            #expect(kinds.filter { $0 == "informational" }.count == limit)
            #expect(!kinds.contains("response"))

            // The same number is fine: the limit is on what comes beyond it.
            let fine = session.dataTask(with: request(Self.url(server, "/bytes/10?early_hints=\(limit)", version)))
            fine.resume()
            await fine.waitUntilFinished()
            #expect(fine.error == nil)
        }
    }

    @Test func anAsyncCallWithoutADelegateReadsPastThem() async throws {
        try await withSession { server, session in
            let (data, response) = try await session.data(for: request(server.url("/bytes/100?seed=2&early_hints=3")))
            #expect(response.statusCode == 200)
            #expect(Array(data) == DeterministicBytes(seed: 2).bytes(offset: 0, count: 100))
        }
    }
}
