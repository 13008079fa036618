import FerryCore
import Synchronization

/// Pauses a transfer between chunks (a task's `suspend()`): while closed, the body loop stops reading,
/// so the transport stops reading from the socket (backpressure) and the connection and the data so far
/// are kept. Checking an open gate costs one atomic load per chunk.
public final class TransferGate: Sendable {
    private struct State {
        var open = true
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let isOpenFlag = Atomic<Bool>(true)
    private let state = Mutex(State())

    /// An open gate.
    public init() {}

    /// Whether transfers may go on.
    public var isOpen: Bool { isOpenFlag.load(ordering: .acquiring) }

    /// Stops transfers at their next chunk.
    public func close() {
        state.withLock { state in
            state.open = false
            isOpenFlag.store(false, ordering: .releasing)
        }
    }

    /// Lets waiting transfers go on.
    public func open() {
        let waiters = state.withLock { state in
            state.open = true
            isOpenFlag.store(true, ordering: .releasing)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the gate is open, or throws a cancelled ``FerryError`` when the calling task is
    /// cancelled while waiting.
    public func passThrough() async throws {
        guard !isOpen else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let passNow = state.withLock { state in
                    if state.open || Task.isCancelled { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if passNow { continuation.resume() }
            }
        } onCancel: {
            // Wake everyone: each rechecks; the cancelled one throws below.
            let waiters = state.withLock { state in
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        if Task.isCancelled { throw FerryError(.cancelled, "the transfer was cancelled while suspended") }
        if !isOpen { try await passThrough() }
    }
}
