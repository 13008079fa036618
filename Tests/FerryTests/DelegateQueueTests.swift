import Foundation
import NIOCore
import Synchronization
import Testing

@testable import Ferry

/// The session's delegate queue and the coalescer that merges response data while a delivery waits in
/// it. Ordered by gates, not clocks: a job holds the queue until the test opens its gate.
@Suite struct DelegateQueueTests {
    /// A job for the queue that does not finish until `open()`.
    private final class Gate: Sendable {
        private let opened = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let now = opened.withLock { state in
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let waiters = opened.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// What happened, in order.
    private final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    private func chunk(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func dataAppendedWhileADeliveryWaitsArrivesMergedAndInOrder() async {
        let queue = DelegateQueue()
        let gate = Gate()
        let log = Log()
        queue.enqueue { await gate.wait() }
        let coalescer = DataCoalescer(queue: queue) { data in log.add(String(decoding: data, as: UTF8.self)) }
        await coalescer.append(chunk("ab"))
        await coalescer.append(chunk("cd"))
        var sliced = chunk("xxef")
        sliced.moveReaderIndex(forwardBy: 2)  // only the readable bytes count
        await coalescer.append(sliced)
        gate.open()
        await queue.perform {}
        #expect(log.all == ["abcdef"])

        // Once delivered, the next bytes start a delivery of their own.
        await coalescer.append(chunk("gh"))
        await queue.perform {}
        #expect(log.all == ["abcdef", "gh"])
    }

    @Test func moreThanTheLimitWaitingMakesTheTransferWaitForTheDelegate() async throws {
        let queue = DelegateQueue()
        let gate = Gate()
        let log = Log()
        queue.enqueue { await gate.wait() }
        let coalescer = DataCoalescer(queue: queue, limit: 8) { data in log.add("delivered \(data.count)") }
        await coalescer.append(chunk("1234"))
        log.add("returned 4")
        let large = Task {
            await coalescer.append(chunk("56789"))
            log.add("returned 9")
        }
        // The second append holds 9 bytes against a limit of 8: it returns only once they were delivered,
        // which the closed gate holds back.
        try await eventually("the second chunk is held") { coalescer.pendingByteCount == 9 }
        #expect(!log.all.contains("returned 9"))
        gate.open()
        await large.value
        #expect(log.all == ["returned 4", "delivered 9", "returned 9"])
    }

    @Test func jobsRunOneAtATimeInTheOrderEnqueued() async {
        let queue = DelegateQueue()
        let gate = Gate()
        let log = Log()
        queue.enqueue {
            await gate.wait()
            log.add("first")
        }
        queue.enqueue { log.add("second") }
        let third = Task { await queue.perform { log.add("third") } }
        gate.open()
        await third.value
        #expect(log.all == ["first", "second", "third"])
    }
}
