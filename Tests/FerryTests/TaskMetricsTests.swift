import Ferry
import FerryTestServer
import Foundation
import Testing

@Suite struct TaskMetricsTests {
    @Test func metricsHaveOneTransactionPerRequestWithMeasuredTimes() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let task = session.dataTask(with: request(server.url("/redirect/2")))
            let before = Date()
            task.resume()
            await task.waitUntilFinished()
            let after = Date()
            let metrics = try #require(recorder.metrics(of: task.taskIdentifier))
            #expect(metrics.redirectCount == 2)
            #expect(metrics.transactionMetrics.count == 3)
            #expect(metrics.taskInterval.start >= before && metrics.taskInterval.end <= after)
            for (index, transaction) in metrics.transactionMetrics.enumerated() {
                let fetch = try #require(transaction.fetchStartDate)
                let responseStart = try #require(transaction.responseStartDate)
                let responseEnd = try #require(transaction.responseEndDate)
                let requestStart = try #require(transaction.requestStartDate)
                #expect(try #require(transaction.requestEndDate) >= requestStart)
                #expect(fetch <= requestStart && requestStart <= responseStart && responseStart <= responseEnd)
                #expect(metrics.taskInterval.start <= fetch && responseEnd <= metrics.taskInterval.end)
                #expect(transaction.networkProtocolName == "http/1.1")
                #expect(transaction.resourceFetchType == .networkLoad)
                // Not measured by the transport: nil, never invented.
                #expect(transaction.domainLookupStartDate == nil)
                #expect(transaction.secureConnectionStartDate == nil)
                // http:// goes through NetworkTransport, which sees its connections: the first request
                // opened one, the redirects went over it again.
                #expect(transaction.isReusedConnection == (index > 0))
                if index == 0 {
                    let connectStart = try #require(transaction.connectStartDate)
                    let connectEnd = try #require(transaction.connectEndDate)
                    #expect(fetch <= connectStart && connectStart <= connectEnd && connectEnd <= requestStart)
                } else {
                    #expect(transaction.connectStartDate == nil)
                }
            }
            #expect(metrics.transactionMetrics.map { $0.response?.statusCode } == [302, 302, 200])
            let last = try #require(metrics.transactionMetrics.last)
            #expect(last.countOfResponseBodyBytesReceived == Int64(recorder.body(of: task.taskIdentifier).count))
        }
    }

    @Test func uploadBytesAreCountedAndRequestTimesOrdered() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            var upload = request(server.url("/upload"))
            upload.method = "PUT"
            let task = session.uploadTask(with: upload, from: Data(count: 123_456))
            task.resume()
            await task.waitUntilFinished()
            let transaction = try #require(recorder.metrics(of: task.taskIdentifier)?.transactionMetrics.first)
            #expect(transaction.countOfRequestBodyBytesSent == 123_456)
            let requestStart = try #require(transaction.requestStartDate)
            let requestEnd = try #require(transaction.requestEndDate)
            let responseStart = try #require(transaction.responseStartDate)
            #expect(try #require(transaction.fetchStartDate) <= requestStart)
            // The server may answer before the request ends, so only the starts are ordered.
            #expect(requestStart <= requestEnd && requestStart <= responseStart)
        }
    }

    @Test func http2IsReportedAsH2() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpVersionPreference = .http2
        try await withSession(configuration) { server, session in
            let url = server.url("/bytes/1000", on: .tls)
            let recorder = Recorder()
            let task = session.dataTask(with: request(url))
            task.delegate = recorder
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error == nil)
            let transaction = try #require(recorder.metrics(of: task.taskIdentifier)?.transactionMetrics.first)
            #expect(transaction.networkProtocolName == "h2")
        }
    }
}
