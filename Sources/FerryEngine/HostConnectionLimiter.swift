import FerryCore
import Foundation
import Synchronization

/// HTTPMaximumConnectionsPerHost as a hard limit (SPEC S8.1): at most `limit` exchanges per origin at
/// once; the others wait, the highest priority first, then in arrival order.
///
/// AsyncHTTPClient's per-host setting is a soft limit (it opens more connections under load), so the
/// session enforces its own here, counting exchanges from request to the end of the response body.
final class HostConnectionLimiter: Sendable {
    /// An origin as the limit counts it: the parts of `URL.httpOrigin` (`URL.httpOriginParts`), kept
    /// apart rather than joined into a new string for every exchange.
    struct Key: Hashable, Sendable {
        let scheme: String
        let host: String
        let port: Int

        init(_ url: URL) {
            (scheme, host, port) = url.httpOriginParts
        }
    }

    private struct Waiter {
        var id: UInt64
        var priority: Float
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Origin {
        var active = 0
        var waiters: [Waiter] = []
    }

    private struct State {
        var origins: [Key: Origin] = [:]
        var nextID: UInt64 = 0
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Exchanges running for `origin` now (for tests and diagnostics).
    func active(for origin: Key) -> Int {
        state.withLock { $0.origins[origin]?.active ?? 0 }
    }

    /// Exchanges waiting for a slot for `origin` now (for tests).
    func waiting(for origin: Key) -> Int {
        state.withLock { $0.origins[origin]?.waiters.count ?? 0 }
    }

    /// Origins the limiter keeps an entry for (for tests).
    var trackedOrigins: Int {
        state.withLock { $0.origins.count }
    }

    /// Waits for a slot for `origin`.
    /// - Throws: a cancelled ``FerryError`` when the calling task is cancelled while waiting.
    func acquire(origin: Key, priority: Float) async throws -> Permit {
        // A free slot is taken at once, without suspending: a suspension, even one resumed at once,
        // puts the task back on the executor's queue (a hop per exchange for small requests).
        let id = state.withLock { state -> UInt64? in
            // (One look-up: the entry is changed in place.)
            if !Task.isCancelled, Self.take(&state.origins[origin, default: Origin()], limit: limit) { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return Permit(limiter: self, origin: origin) }
        try await TransferContext.withCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state in
                    var entry = state.origins[origin, default: Origin()]
                    defer { state.origins[origin] = entry }
                    if Task.isCancelled { return false as Bool? }
                    if entry.active < limit {
                        entry.active += 1
                        return true
                    }
                    entry.waiters.append(Waiter(id: id, priority: priority, continuation: continuation))
                    return nil
                }
                switch granted {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: Self.cancelled)
                case nil: break
                }
            }
        } onCancel: { [self] in
            let removed = state.withLock { state -> Waiter? in
                guard var entry = state.origins[origin],
                    let index = entry.waiters.firstIndex(where: { $0.id == id })
                else { return nil }
                let waiter = entry.waiters.remove(at: index)
                state.origins[origin] = entry
                return waiter
            }
            removed?.continuation.resume(throwing: Self.cancelled)
        }
        return Permit(limiter: self, origin: origin)
    }

    private static let cancelled = FerryError(.cancelled, "the task was cancelled while waiting for a connection")

    fileprivate func release(origin: Key) {
        let next = state.withLock { state -> Waiter? in
            guard let index = state.origins.index(forKey: origin) else { return nil }
            let next = Self.passOn(&state.origins.values[index])
            // An idle origin keeps its entry (the next exchange finds it without an insertion, where
            // removing and adding it again hashed it twice more for every exchange) until there are many.
            if next == nil, state.origins.count > Self.idleOriginsKept {
                state.origins = state.origins.filter { $0.value.active > 0 || !$0.value.waiters.isEmpty }
            }
            return next
        }
        next?.continuation.resume()
    }

    /// How many origins the limiter keeps entries for before it drops the idle ones.
    static let idleOriginsKept = 64

    /// Takes a slot of `entry` if one is free.
    private static func take(_ entry: inout Origin, limit: Int) -> Bool {
        guard entry.active < limit else { return false }
        entry.active += 1
        return true
    }

    /// Gives a slot of `entry` back: to the waiter of highest priority (the earliest among equals), who
    /// is returned, or to no one.
    private static func passOn(_ entry: inout Origin) -> Waiter? {
        guard
            let best = entry.waiters.indices.max(by: { a, b in
                // max: highest priority; among equals, the earliest (lowest id).
                let (x, y) = (entry.waiters[a], entry.waiters[b])
                return x.priority != y.priority ? x.priority < y.priority : x.id > y.id
            })
        else {
            entry.active -= 1
            return nil
        }
        return entry.waiters.remove(at: best)  // the slot passes on: active stays the same
    }

    /// One slot; released once, explicitly or when the last reference goes.
    final class Permit: Sendable {
        private let limiter: HostConnectionLimiter?
        private let origin: Key
        private let released = Atomic<Bool>(false)

        fileprivate init(limiter: HostConnectionLimiter?, origin: Key) {
            self.limiter = limiter
            self.origin = origin
        }

        /// A permit that holds no slot: for an exchange on a shared HTTP/2 connection, where the limit
        /// on connections does not apply to streams.
        static func unlimited(origin: Key) -> Permit { Permit(limiter: nil, origin: origin) }

        func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            limiter?.release(origin: origin)
        }

        deinit { release() }
    }
}
