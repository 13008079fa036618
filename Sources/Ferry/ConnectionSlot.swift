import FerryCore
import Synchronization

/// Where a task's connection (a WebSocket's, a stream's) is found: those who use it before it is open
/// wait here, and learn of it, or of why there is none, once it is settled (first settlement wins).
final class ConnectionSlot<Connection: Sendable>: Sendable {
    private enum Link {
        case connecting([CheckedContinuation<Connection, any Error>])
        case open(Connection)
        case failed(FerryError)
    }

    private let link = Mutex(Link.connecting([]))

    /// The connection is open.
    func open(_ connection: Connection) { settle(.open(connection)) }

    /// There will be no connection, because of `error`.
    func fail(_ error: FerryError) { settle(.failed(error)) }

    /// The connection, once open; waits for it while connecting.
    func connection() async throws -> Connection {
        try await withCheckedThrowingContinuation { continuation in
            let now: Result<Connection, FerryError>? = link.withLock { link in
                switch link {
                case .open(let connection): return .success(connection)
                case .failed(let error): return .failure(error)
                case .connecting(var waiters):
                    waiters.append(continuation)
                    link = .connecting(waiters)
                    return nil
                }
            }
            if let now { continuation.resume(with: now) }
        }
    }

    /// The connection if it is open now.
    var current: Connection? {
        if case .open(let connection) = link.withLock({ $0 }) { return connection }
        return nil
    }

    /// Whether it is still connecting.
    var isConnecting: Bool {
        if case .connecting = link.withLock({ $0 }) { return true }
        return false
    }

    private func settle(_ new: Link) {
        let waiters: [CheckedContinuation<Connection, any Error>] = link.withLock { link in
            guard case .connecting(let waiters) = link else { return [] }
            link = new
            return waiters
        }
        for waiter in waiters {
            switch new {
            case .open(let connection): waiter.resume(returning: connection)
            case .failed(let error): waiter.resume(throwing: error)
            case .connecting: break
            }
        }
    }
}
