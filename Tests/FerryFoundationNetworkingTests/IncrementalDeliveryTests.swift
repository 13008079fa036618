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

    @Test(arguments: [true, false])
    func theBodyComesInPiecesOrWhole(incremental: Bool) async throws {
        try await TestServer.withServer { server in
            let counter = Counter()
            let session = URLSession(configuration: .ephemeral, delegate: counter, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            // Sent in small writes, slowly enough that the client reads it in several pieces.
            let task = session.dataTask(with: URL(string: server.url("/bytes/400000?seed=5&throttle=2000000"))!)
            task.prefersIncrementalDelivery = incremental
            task.resume()
            await counter.done.value()
            let pieces = counter.pieces.withLock { $0 }
            #expect(pieces.reduce(0, +) == 400_000)
            if incremental {
                #expect(pieces.count > 1, "the body came in \(pieces.count) piece")
            } else {
                #expect(pieces == [400_000])
            }
        }
    }
}
