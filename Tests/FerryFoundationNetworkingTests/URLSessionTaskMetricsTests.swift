import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// Metrics in Apple's shape: addresses and ports apart, fetch type, protocol and counts.
@Suite struct URLSessionTaskMetricsTests {
    final class Collector: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let metrics = SamenessPrograms.Waiter<URLSessionTaskMetrics>()
        func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
            self.metrics.finish(metrics)
        }
    }

    @Test func aTransactionHasItsAddressesPortsAndCounts() async throws {
        try await TestServer.withServer { server in
            let collector = Collector()
            let session = URLSession(configuration: .ephemeral, delegate: collector, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let done = SamenessPrograms.Waiter<Int>()
            let task = session.dataTask(with: URL(string: server.url("/bytes/4096"))!) { data, _, _ in done.finish(data?.count ?? -1) }
            #expect(task.copy() as? URLSessionTask === task, "a task's copy is the task")
            task.resume()
            #expect(await done.value() == 4096)
            let metrics = await collector.metrics.value()
            let transaction = try #require(metrics.transactionMetrics.last)
            #expect(transaction.remoteAddress == "127.0.0.1")
            #expect(transaction.remotePort == server.port)
            #expect(transaction.localAddress == "127.0.0.1")
            #expect((transaction.localPort ?? 0) > 0)
            #expect(transaction.networkProtocolName == "http/1.1")
            #expect(transaction.resourceFetchType == .networkLoad)
            #expect(transaction.countOfResponseBodyBytesReceived == 4096)
            #expect(transaction.countOfResponseBodyBytesAfterDecoding == 4096)
            #expect(transaction.negotiatedTLSProtocolVersion == nil, "plain http has no TLS version")
            #expect(metrics.redirectCount == 0)
        }
    }
}
