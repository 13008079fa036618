public import FerryCore
import Foundation
import Synchronization

/// One bandwidth limit shared by transfers, weighted by their priority (``SharedBandwidth`` decides;
/// this keeps it behind a lock and wakes the transfers it lets go). ferryd has one for its daemon-wide
/// limit; an in-process session has one for ``SessionConfiguration/bandwidthLimit``. The limit can
/// change at any time; transfers waiting then go by the new rate.
public final class BandwidthPool: Sendable {
    private struct State {
        var share: SharedBandwidth
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        /// Tickets released before their taker had registered its continuation.
        var released: Set<Int> = []
        /// The running pump's generation, if one runs, and its task (to wake it when the limit changes).
        var pumping: Int?
        var pumper: Task<Void, Never>?
        var generation = 0
        var nextMember = 0
    }

    private let state: Mutex<State>
    /// Seconds on a monotonic clock.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// A pool for `bytesPerSecond` (nil: unlimited until ``setLimit(_:)``).
    public init(bytesPerSecond: Int64?) {
        state = Mutex(State(share: SharedBandwidth(bytesPerSecond: bytesPerSecond)))
    }

    /// The limit now, bytes a second; nil: unlimited.
    public var limit: Int64? { state.withLock { $0.share.bucket?.bytesPerSecond } }

    /// Changes the limit for every transfer in the pool, from now on.
    public func setLimit(_ bytesPerSecond: Int64?) {
        let now = Self.now()
        state.withLock { $0.share.setLimit(bytesPerSecond, now: now) }
        // A pump asleep until the old rate's debt is paid is woken: the new rate decides now.
        pump(restart: true)
    }

    /// A number that tells one transfer's takes apart from another's.
    func newMember() -> Int {
        state.withLock { state in
            state.nextMember += 1
            return state.nextMember
        }
    }

    func leave(_ member: Int) {
        state.withLock { $0.share.leave(member) }
    }

    /// `member` moved `count` bytes; returns when it may move more.
    func take(member: Int, count: Int, weight: Double) async throws {
        let now = Self.now()
        let answer = state.withLock { $0.share.take(member: member, count: count, weight: weight, now: now) }
        guard case .queued(let ticket) = answer else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Registration { case cancelled, released, waiting }
                let registration = state.withLock { state -> Registration in
                    if state.released.remove(ticket) != nil { return .released }
                    if Task.isCancelled {
                        state.share.withdraw(ticket)
                        return .cancelled
                    }
                    state.waiters[ticket] = continuation
                    return .waiting
                }
                switch registration {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .released: continuation.resume()
                case .waiting: pump()
                }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.share.withdraw(ticket)
                return state.waiters.removeValue(forKey: ticket)
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Releases what may go, and keeps one task sleeping until the next may, while any wait.
    /// - Parameter restart: wake the pump now (a new limit): the sleeping one is cancelled and a new one
    ///   releases by the new rate.
    private func pump(restart: Bool = false) {
        let generation = state.withLock { state -> Int? in
            if restart {
                state.pumper?.cancel()
                state.pumper = nil
                state.pumping = nil
            }
            guard state.pumping == nil, state.share.queued > 0 else { return nil }
            state.generation += 1
            state.pumping = state.generation
            return state.generation
        }
        guard let generation else { return }
        let pumper = Task.detached { [self] in
            while !Task.isCancelled {
                let now = Self.now()
                let (ready, again) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], Double?) in
                    let (tickets, again) = state.share.release(now: now)
                    var ready: [CheckedContinuation<Void, any Error>] = []
                    for ticket in tickets {
                        if let waiter = state.waiters.removeValue(forKey: ticket) {
                            ready.append(waiter)
                        } else {
                            // Its taker has not registered yet: it goes on when it does.
                            state.released.insert(ticket)
                        }
                    }
                    if again == nil, state.pumping == generation {
                        state.pumping = nil
                        state.pumper = nil
                    }
                    return (ready, again)
                }
                for continuation in ready { continuation.resume() }
                guard let again else { return }
                try? await Task.sleep(nanoseconds: UInt64(min(again, 3600) * 1e9))
            }
        }
        state.withLock { state in
            if state.pumping == generation { state.pumper = pumper }
        }
    }
}

/// How one transfer's bytes are shaped: its own limit (if any), then its weighted share of a
/// ``BandwidthPool`` (if any). Both can change while the transfer runs. Carried by the task's
/// ``TransferContext``; ``SessionTransport`` pays for every chunk received or sent through it.
public final class TaskThrottle: Sendable {
    private struct State {
        var own: TokenBucket?
        var weight: Double
    }

    private let state: Mutex<State>
    private let pool: BandwidthPool?
    private let member: Int

    /// The most bytes handed over between two payments: a larger read is handed over in slices of this
    /// size (``SessionTransport``), so that takers of a pool interleave finely.
    public static let slice = 65_536

    /// A throttle with `bytesPerSecond` of its own (nil: none), sharing `pool` (nil: none) with
    /// `weight` (the task's priority, 0...1).
    public init(bytesPerSecond: Int64?, pool: BandwidthPool?, weight: Double) {
        state = Mutex(State(own: bytesPerSecond.map { TokenBucket(bytesPerSecond: $0) }, weight: weight))
        self.pool = pool
        member = pool?.newMember() ?? 0
    }

    deinit { pool?.leave(member) }

    /// The task's own limit, bytes a second; nil: none.
    public var limit: Int64? { state.withLock { $0.own?.bytesPerSecond } }

    /// Changes the task's own limit (nil: none), from now on.
    public func setLimit(_ bytesPerSecond: Int64?) {
        let now = BandwidthPool.now()
        state.withLock { $0.own.setLimit(bytesPerSecond, now: now) }
    }

    /// Changes the task's weight in the pool (its priority).
    public func setWeight(_ weight: Double) {
        state.withLock { $0.weight = weight }
    }

    /// `count` bytes moved; returns when more may move.
    /// - Throws: CancellationError when the task is cancelled while it waits.
    public func pay(_ count: Int) async throws {
        guard count > 0 else { return }
        let now = BandwidthPool.now()
        let (wait, weight) = state.withLock { state in (state.own?.take(count, now: now) ?? 0, state.weight) }
        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(min(wait, 86_400) * 1e9)) }
        try await pool?.take(member: member, count: count, weight: weight)
    }
}
