import Ferry
import FerryTestServer
import Foundation
import Testing

@Suite struct SessionDataTaskTests {
    @Test func dataForARequestIsExact() async throws {
        try await withSession { server, session in
            let (data, response) = try await session.data(for: request(server.url("/bytes/300000?seed=4")))
            #expect(response.statusCode == 200)
            #expect(response.expectedContentLength == 300_000)
            #expect(data.count == 300_000)
            #expect(sha256(data) == expectedSHA256(300_000, seed: 4))
        }
    }

    @Test func aHeadRequestHasNoBodyWhateverItsContentLengthSays() async throws {
        try await withSession { server, session in
            var head = request(server.url("/bytes/300000"))
            head.method = "HEAD"
            // Twice: the connection the first used must be fit for the second.
            for _ in 0..<2 {
                let (data, response) = try await session.data(for: head)
                #expect(response.statusCode == 200)
                #expect(response.expectedContentLength == 300_000)
                #expect(data.isEmpty)
            }
        }
    }

    @Test func aDelegateSeesResponseDataMetricsAndCompletionInOrder() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/2000000?seed=5")))
            #expect(task.state == .suspended)
            task.resume()
            await task.waitUntilFinished()
            #expect(task.state == .completed)
            let id = task.taskIdentifier
            #expect(collapsed(recorder.events(of: id)) == ["response", "data", "metrics", "complete"])
            #expect(recorder.events(of: id).first == .response(task: id, status: 200))
            #expect(recorder.events(of: id).last == .complete(task: id, error: nil))
            #expect(sha256(recorder.body(of: id)) == expectedSHA256(2_000_000, seed: 5))
            #expect(task.countOfBytesReceived == 2_000_000)
            #expect(task.countOfBytesExpectedToReceive == 2_000_000)
            #expect(!recorder.callbacksOverlapped)
        }
    }

    @Test func responseDispositionCancelEndsTheTaskCancelled() async throws {
        let recorder = Recorder(disposition: .cancel)
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/5000000")))
            task.resume()
            await task.waitUntilFinished()
            #expect(collapsed(recorder.events(of: task.taskIdentifier)) == ["response", "metrics", "complete"])
            #expect(task.error?.code == .cancelled)
        }
    }

    @Test func responseDispositionBecomeDownloadHandsTheBodyToADownloadTask() async throws {
        let recorder = Recorder(disposition: .becomeDownload)
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/1500000?seed=6")))
            task.resume()
            // At least one, then exactly one: a second completion must fail here by name, not keep the
            // wait from ever matching. A wait that ends without any names what the delegate did see.
            do {
                try await eventually("the download task completes") { recorder.completions >= 1 }
            } catch {
                let tasks = await session.allTasks.map { "\($0) received \($0.countOfBytesReceived) of \($0.countOfBytesExpectedToReceive)" }
                Issue.record("no task completed; the delegate saw: \(recorder.events); the session holds: \(tasks)")
                throw error
            }
            #expect(recorder.completions == 1)
            let became = recorder.events.compactMap { event -> Int? in
                if case .becameDownload(_, let to) = event { to } else { nil }
            }
            let downloadID = try #require(became.first)
            #expect(recorder.events(of: task.taskIdentifier).map(\.kind) == ["response", "became"])
            let downloadEvents = recorder.events(of: downloadID)
            #expect(collapsed(downloadEvents) == ["wrote", "finished", "metrics", "complete"])
            #expect(
                downloadEvents.contains(
                    .finished(task: downloadID, sha256: expectedSHA256(1_500_000, seed: 6), existedDuringCallback: true)
                )
            )
            #expect(downloadEvents.last == .complete(task: downloadID, error: nil))
        }
    }

    @Test func theDelegateCanRefuseARedirect() async throws {
        let recorder = Recorder(redirect: { _ in nil })
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/redirect/2")))
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(collapsed(recorder.events(of: id)) == ["redirect", "response", "data", "metrics", "complete"])
            #expect(task.response?.statusCode == 302)
            #expect(recorder.metrics(of: id)?.redirectCount == 0)
        }
    }

    @Test func theDelegateCanChangeARedirect() async throws {
        let recorder = Recorder(redirect: { proposed in
            var changed = proposed
            changed.url = URL(
                string: proposed.url.absoluteString.replacingOccurrences(of: "/redirect/1", with: "/bytes/10")
            )!
            return changed
        })
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/redirect/3")))
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error == nil)
            #expect(task.response?.statusCode == 200)
            #expect(task.currentRequest?.url.path == "/bytes/10")
            #expect(task.originalRequest?.url.path == "/redirect/3")
            #expect(recorder.body(of: task.taskIdentifier).count == 10)
        }
    }

    @Test func headersWithCRLFAreRefusedBeforeAnythingIsSent() async throws {
        try await withSession { server, session in
            var bad = request(server.url("/echo"))
            bad.headers.add(name: "X-Test", value: "a\r\nInjected: yes")
            await #expect(throws: FerryError.self) { try await session.data(for: bad) }
            do {
                _ = try await session.data(for: bad)
            } catch let error as FerryError {
                #expect(error.code == .invalidHeader)
            }
            #expect(server.counters.requests(path: "/echo") == 0)
        }
    }

    @Test func additionalHeadersAreAddedOnlyWhereTheRequestLacksThem() async throws {
        var configuration = SessionConfiguration.default
        configuration.httpAdditionalHeaders = ["X-Extra": "session", "X-Mine": "session"]
        try await withSession(configuration) { server, session in
            var echo = request(server.url("/echo"))
            echo.headers["X-Mine"] = "request"
            let (data, _) = try await session.data(for: echo)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            let headers = (object?["headers"] as? [[String]]) ?? []
            let lookup = Dictionary(headers.map { ($0[0].lowercased(), $0[1]) }, uniquingKeysWith: { a, _ in a })
            #expect(lookup["x-extra"] == "session")
            #expect(lookup["x-mine"] == "request")
        }
    }

    @Test func bytesStreamTheBodyAndCatchAShortOne() async throws {
        try await withSession { server, session in
            let (bytes, response) = try await session.bytes(for: request(server.url("/bytes/700000?seed=7")))
            #expect(response.statusCode == 200)
            var collected: [UInt8] = []
            for try await chunk in bytes.chunks { collected.append(contentsOf: chunk) }
            #expect(sha256(collected) == expectedSHA256(700_000, seed: 7))

            let (small, _) = try await session.bytes(for: request(server.url("/bytes/1000?seed=8")))
            var count = 0
            for try await _ in small { count += 1 }
            #expect(count == 1000)

            let (short, _) = try await session.bytes(for: request(server.url("/bytes/100000?short_by=10")))
            await #expect(throws: FerryError.self) {
                for try await _ in short.chunks {}
            }
        }
    }

    @Test func aShortBodyIsAnErrorNotData() async throws {
        try await withSession { server, session in
            do {
                _ = try await session.data(for: request(server.url("/bytes/100000?short_by=100")))
                Issue.record("a short body was reported as complete")
            } catch let error as FerryError {
                #expect(error.code == .networkConnectionLost)
            }
        }
    }
}
