import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// prefersIncrementalDelivery: false hands the body to the data delegate once, whole, before completion.
@Suite struct IncrementalDeliveryTests {
    final class Counter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let pieces = Mutex<[Int]>([])
        let done = SamenessPrograms.Waiter<Void>()
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            pieces.withLock { $0.append(data.count) }
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            done.finish(())
        }
    }

    /// The server pauses mid-body, so the body surely arrives in two reads or more; the delegate still
    /// gets it in one piece. (Whether an incremental task's pieces are several depends on the reads, which
    /// a loaded machine may merge: that is not compared.)
    @Test func withIncrementalDeliveryOffTheBodyComesWhole() async throws {
        try await TestServer.withServer { server in
            let counter = Counter()
            let session = URLSession(configuration: .ephemeral, delegate: counter, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let task = session.dataTask(with: URL(string: server.url("/bytes/400000?seed=5&stall_after=100000&stall_ms=300"))!)
            #expect(task.prefersIncrementalDelivery, "Apple's default")
            task.prefersIncrementalDelivery = false
            task.resume()
            await counter.done.value()
            #expect(counter.pieces.withLock { $0 } == [400_000])
        }
    }
}
