import FerryCore
import Foundation
import NIOCore
import Synchronization

/// The shared state of one segmented download's connections: the ``SegmentScheduler``, the file they
/// write, progress, and the first fatal error. One lock orders everything, so a checkpoint's snapshot
/// never counts a byte that is not yet in the file, and progress totals only grow.
final class SegmentCoordinator: Sendable {
    private struct State {
        var scheduler: SegmentScheduler
        var received: Int64
        /// Claimed segments whose connection fails before receiving a byte, in a row.
        var failuresWithoutProgress = 0
        /// Set by a failing checkpoint: every connection stops with it.
        var fatal: FerryError?
        /// Bytes received when the last checkpoint was taken.
        var checkpointedBytes: Int64 = 0
        /// The first accepted response's head, as the whole resource's.
        var headers: Headers?
        var protocolName: String?
    }

    private let state: Mutex<State>
    let file: SegmentFile
    private let didWrite: @Sendable (_ written: Int64, _ totalWritten: Int64, _ totalExpected: Int64?) -> Void
    /// The resource's length.
    let total: Int64

    init(
        plan: SegmentPlan,
        minimumSegmentSize: Int64,
        file: SegmentFile,
        didWrite: @escaping @Sendable (Int64, Int64, Int64?) -> Void
    ) {
        self.state = Mutex(
            State(
                scheduler: SegmentScheduler(plan: plan, minimumSegmentSize: minimumSegmentSize),
                received: plan.bytesReceived,
                checkpointedBytes: plan.bytesReceived
            )
        )
        self.file = file
        self.didWrite = didWrite
        self.total = plan.total
    }

    /// The plan with its progress, as it stands.
    var plan: SegmentPlan { state.withLock { $0.scheduler.plan } }

    /// Work for an idle connection, or nil when there is none left.
    func claim() -> SegmentScheduler.Claim? { state.withLock { $0.scheduler.claim() } }

    /// Claims a given segment.
    func claim(_ index: Int) -> SegmentScheduler.Claim { state.withLock { $0.scheduler.claim(index) } }

    /// The connection stopped working on a segment.
    func release(_ index: Int) { state.withLock { $0.scheduler.release(index) } }

    /// Connections holding a segment.
    var activeCount: Int { state.withLock { $0.scheduler.activeCount } }

    /// A segment's current end.
    func end(of index: Int) -> Int64 { state.withLock { $0.scheduler.end(of: index) } }

    /// Writes the part of `buffer` that still belongs to segment `index` at its next byte.
    /// - Returns: whether the segment is now complete (its connection should stop reading).
    /// - Throws: the file's ``FerryError``, or a fatal error another connection ran into.
    func write(_ index: Int, _ buffer: ByteBuffer) throws -> Bool {
        try state.withLock { state throws(FerryError) -> Bool in
            if let fatal = state.fatal { throw fatal }
            let segment = state.scheduler.plan.segments[index]
            let count = Int(min(Int64(buffer.readableBytes), segment.remaining))
            if count > 0 {
                do {
                    try file.write(buffer, count: count, at: segment.next)
                } catch let error as FerryError {
                    state.fatal = error
                    throw error
                } catch {
                    throw FerryError(.cannotWriteToFile, "cannot write \(file.path): \(error)")
                }
                _ = state.scheduler.accept(index, count: Int64(count))
                state.received += Int64(count)
                state.failuresWithoutProgress = 0
                didWrite(Int64(count), state.received, total)
            }
            return state.scheduler.plan.segments[index].isComplete
        }
    }

    /// Keeps the first response head offered (the result reports it).
    func adoptHead(_ headers: Headers, protocolName: String) {
        state.withLock { state in
            if state.headers == nil { (state.headers, state.protocolName) = (headers, protocolName) }
        }
    }

    /// The response head kept by ``adoptHead(_:protocolName:)``.
    var head: (headers: Headers?, protocolName: String?) { state.withLock { ($0.headers, $0.protocolName) } }

    /// Counts a connection's failure before it received anything; returns the count in a row.
    func countFailure() -> Int {
        state.withLock { state in
            state.failuresWithoutProgress += 1
            return state.failuresWithoutProgress
        }
    }

    /// Stops every connection at its next write with `error`.
    func fail(_ error: FerryError) {
        state.withLock { state in
            if state.fatal == nil { state.fatal = error }
        }
    }

    /// The fatal error, if one happened.
    var fatal: FerryError? { state.withLock { $0.fatal } }

    /// For a checkpoint: the plan and a durability point of the file, taken together (every byte the plan
    /// counts is in the file), when at least `bytes` arrived since the last one; nil otherwise.
    func checkpoint(afterBytes bytes: Int64, force: Bool) throws -> (SegmentPlan, DurabilityPoint)? {
        try state.withLock { state throws(FerryError) -> (SegmentPlan, DurabilityPoint)? in
            guard state.received > state.checkpointedBytes, force || state.received - state.checkpointedBytes >= bytes
            else { return nil }
            state.checkpointedBytes = state.received
            do {
                return (state.scheduler.plan, try file.durabilityPoint(length: state.received))
            } catch let error as FerryError {
                throw error
            } catch {
                throw FerryError(.cannotWriteToFile, "cannot synchronize \(file.path): \(error)")
            }
        }
    }
}
