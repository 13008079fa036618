import Foundation
import NIOCore
import Synchronization

/// The session's delegate queue (SPEC S1.6): jobs run one at a time, in the order they were enqueued,
/// each awaited before the next starts.
///
/// Enqueueing is synchronous, so events enqueued by one transfer keep their order; a transfer never
/// waits for the delegate unless it needs its answer (redirects, response dispositions) or too much
/// data is waiting (`DataCoalescer`).
final class DelegateQueue: Sendable {
    typealias Job = @Sendable () async -> Void

    private let continuation: AsyncStream<Job>.Continuation

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self)
        self.continuation = continuation
        Task {
            for await job in stream { await job() }
        }
    }

    /// Runs `job` after everything enqueued before it.
    func enqueue(_ job: @escaping Job) {
        if case .terminated = continuation.yield(job) {
            // The session is invalid and its delegate released: run it anyway, so nobody waits forever.
            Task { await job() }
        }
    }

    /// Runs `job` in turn and returns its result.
    func perform<Value: Sendable>(_ job: @escaping @Sendable () async -> Value) async -> Value {
        await withCheckedContinuation { (done: CheckedContinuation<Value, Never>) in
            enqueue { done.resume(returning: await job()) }
        }
    }

    /// Ends the queue after the jobs already enqueued.
    func finish() {
        continuation.finish()
    }
}

/// Progress events merged while one is waiting in the queue: the delegate sees every byte counted, in
/// fewer calls, and the transfer never waits for it.
final class ProgressCoalescer: Sendable {
    struct Pending: Sendable {
        var delta: Int64 = 0
        var total: Int64 = 0
        var expected: Int64 = 0
    }

    private let queue: DelegateQueue
    private let deliver: @Sendable (Pending) async -> Void
    private let state = Mutex<(queued: Bool, pending: Pending)>((false, Pending()))

    init(queue: DelegateQueue, deliver: @escaping @Sendable (Pending) async -> Void) {
        self.queue = queue
        self.deliver = deliver
    }

    /// `delta` more bytes, `total` in all, of `expected`.
    func report(delta: Int64, total: Int64, expected: Int64) {
        let enqueue = state.withLock { state in
            state.pending.delta += delta
            state.pending.total = total
            state.pending.expected = expected
            defer { state.queued = true }
            return !state.queued
        }
        guard enqueue else { return }
        queue.enqueue { [self] in
            let pending = state.withLock { state in
                state.queued = false
                defer { state.pending.delta = 0 }
                return state.pending
            }
            guard pending.delta > 0 else { return }
            await deliver(pending)
        }
    }
}

/// Response data merged while one delivery waits in the queue. When more than `limit` bytes are
/// waiting, the transfer waits for the delegate (backpressure), so memory stays bounded.
///
/// Each chunk is copied once, into the `Data` the delegate gets. (It went into an array first, which
/// regrew after every delivery, and then into a `Data`: 1 GiB through `didReceive data` spent a third
/// of its CPU copying.)
final class DataCoalescer: Sendable {
    private let queue: DelegateQueue
    private let limit: Int
    private let deliver: @Sendable (Data) async -> Void
    private let state = Mutex<(queued: Bool, pending: Data)>((false, Data()))

    init(queue: DelegateQueue, limit: Int = 4 << 20, deliver: @escaping @Sendable (Data) async -> Void) {
        self.queue = queue
        self.limit = limit
        self.deliver = deliver
    }

    func append(_ chunk: ByteBuffer) async {
        let (enqueue, full) = state.withLock { state in
            chunk.withUnsafeReadableBytes { state.pending.append(contentsOf: $0.bindMemory(to: UInt8.self)) }
            defer { state.queued = true }
            return (!state.queued, state.pending.count >= limit)
        }
        if enqueue { queue.enqueue { [self] in await flush() } }
        if full { await queue.perform {} }  // everything queued so far has been delivered
    }

    /// Bytes appended and not delivered yet.
    var pendingByteCount: Int { state.withLock { $0.pending.count } }

    private func flush() async {
        let pending = state.withLock { state in
            state.queued = false
            defer { state.pending = Data() }
            return state.pending
        }
        guard !pending.isEmpty else { return }
        await deliver(pending)
    }
}
