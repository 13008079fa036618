import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One connection of ``HTTP1Transport``: its channel and its handler (reached on the channel's loop).
final class HTTP1Connection: Sendable {
    let channel: any Channel
    let handler: NIOLoopBound<HTTP1ConnectionHandler>
    let origin: String
    private let exchanges = Atomic<Int>(0)
    /// Addresses, TLS and connect times.
    let info = ConnectionInfo()

    init(channel: any Channel, handler: NIOLoopBound<HTTP1ConnectionHandler>, origin: String) {
        self.channel = channel
        self.handler = handler
        self.origin = origin
    }

    /// A number for the next exchange on this connection (one at a time: HTTP/1.1 without pipelining).
    func nextExchangeID() -> Int {
        exchanges.add(1, ordering: .relaxed).newValue
    }
}

/// The connections of ``HTTP1Transport`` by origin: idle HTTP/1.1 connections (most recently used
/// first), shared HTTP/2 connections, and every open one (so shutting down can close them). How many
/// exchanges run at once is the session's business (``SessionTransport``'s per-host limit) for
/// HTTP/1.1; an HTTP/2 connection takes what its server's SETTINGS allow.
///
/// The first request to an https origin whose protocol is not known yet connects alone; the others to
/// that origin wait for its handshake, so a burst of requests to an `h2` server opens one connection,
/// not one each.
final class HTTP1ConnectionPool: Sendable {
    private struct State {
        var idle: [String: [HTTP1Connection]] = [:]
        var open: [ObjectIdentifier: HTTP1Connection] = [:]
        var shared: [String: [HTTP2Connection]] = [:]
        var openShared: [ObjectIdentifier: HTTP2Connection] = [:]
        /// Origins with a first connection under way whose protocol may be `h2`.
        var connecting: [String: EventLoopPromise<Void>] = [:]
        /// Origins whose server chose HTTP/1.1 (no waiting for a shared connection there).
        var speaksHTTP1: Set<String> = []
        var isShutDown = false
    }

    /// How a request gets a connection.
    enum Claim {
        /// An idle HTTP/1.1 connection.
        case idle(HTTP1Connection)
        /// A stream reserved on a shared HTTP/2 connection.
        case shared(HTTP2Connection)
        /// Another request is connecting to the origin and may find `h2`: claim again once it is done.
        case wait(EventLoopFuture<Void>)
        /// Connect. With `first`, this request is the one the others wait for: it calls
        /// ``settle(origin:first:speaksHTTP1:)`` when its connection is open or has failed.
        case connect(first: EventLoopPromise<Void>?)
    }

    /// Idle connections kept per origin; more are closed.
    let maximumIdlePerOrigin: Int
    private let state = NIOLockedValueBox(State())

    init(maximumIdlePerOrigin: Int) {
        self.maximumIdlePerOrigin = maximumIdlePerOrigin
    }

    /// A connection for a request to `origin`; `mayShare`: the request may go over HTTP/2 (https, and
    /// `h2` offered).
    func claim(origin: String, mayShare: Bool, loop: any EventLoop) -> Claim {
        state.withLockedValue { state in
            if mayShare {
                for connection in state.shared[origin] ?? [] {
                    if connection.reserve() { return .shared(connection) }
                }
            }
            while let connection = state.idle[origin]?.popLast() {
                if connection.channel.isActive { return .idle(connection) }
            }
            guard mayShare, !state.speaksHTTP1.contains(origin), !state.isShutDown else { return .connect(first: nil) }
            if let pending = state.connecting[origin] { return .wait(pending.futureResult) }
            let first = loop.makePromise(of: Void.self)
            state.connecting[origin] = first
            return .connect(first: first)
        }
    }

    /// The first connection to `origin` is open (its protocol known) or failed: the requests waiting
    /// for it claim again.
    func settle(origin: String, first: EventLoopPromise<Void>, speaksHTTP1: Bool) {
        state.withLockedValue { state in
            if state.connecting[origin]?.futureResult === first.futureResult { state.connecting[origin] = nil }
            if speaksHTTP1 { state.speaksHTTP1.insert(origin) }
        }
        first.succeed()
    }

    /// Whether requests to `origin` (`https://host:port`) go over a shared HTTP/2 connection now,
    /// directly or through a proxy.
    func isShared(origin: String) -> Bool {
        state.withLockedValue { state in
            state.shared.contains { key, connections in
                !connections.isEmpty && (key == origin || key.hasPrefix(origin + " via "))
            }
        }
    }

    /// Records a new HTTP/1.1 connection.
    /// - Throws: ``FerryError/Code/cancelled`` when the transport has been shut down.
    func opened(_ connection: HTTP1Connection) throws {
        let accepted = state.withLockedValue { state in
            guard !state.isShutDown else { return false }
            // One that closed already has been forgotten (its close came first): not recorded again.
            if connection.channel.isActive { state.open[ObjectIdentifier(connection)] = connection }
            return true
        }
        guard accepted else {
            connection.channel.close(promise: nil)
            throw FerryError(.cancelled, "the session's connections were shut down")
        }
    }

    /// Records a new HTTP/2 connection, open to other requests to its origin.
    /// - Throws: ``FerryError/Code/cancelled`` when the transport has been shut down.
    func opened(_ connection: HTTP2Connection) throws {
        let accepted = state.withLockedValue { state in
            guard !state.isShutDown else { return false }
            if connection.channel.isActive, !connection.isDraining {
                state.openShared[ObjectIdentifier(connection)] = connection
                state.shared[connection.origin, default: []].append(connection)
            }
            return true
        }
        guard accepted else {
            connection.channel.close(promise: nil)
            throw FerryError(.cancelled, "the session's connections were shut down")
        }
    }

    /// Takes back a connection whose exchange ended with it reusable (on its loop).
    func offer(_ connection: HTTP1Connection) {
        let keep = state.withLockedValue { state in
            guard !state.isShutDown, state.idle[connection.origin, default: []].count < maximumIdlePerOrigin else {
                return false
            }
            state.idle[connection.origin, default: []].append(connection)
            return true
        }
        if !keep { connection.channel.close(promise: nil) }
    }

    /// Forgets a closed connection.
    func closed(_ connection: HTTP1Connection) {
        state.withLockedValue { state in
            state.open[ObjectIdentifier(connection)] = nil
            state.idle[connection.origin]?.removeAll { $0 === connection }
        }
    }

    /// Forgets an HTTP/2 connection that got GOAWAY or closed: its open streams go on, new ones go
    /// elsewhere.
    func retire(_ connection: HTTP2Connection) {
        state.withLockedValue { state in
            state.shared[connection.origin]?.removeAll { $0 === connection }
            if !connection.channel.isActive { state.openShared[ObjectIdentifier(connection)] = nil }
        }
    }

    /// Refuses new connections and returns every open one.
    func shutDown() -> (http1: [HTTP1Connection], http2: [HTTP2Connection]) {
        let (open, shared, pending) = state.withLockedValue { state in
            state.isShutDown = true
            state.idle = [:]
            state.shared = [:]
            let pending = Array(state.connecting.values)
            state.connecting = [:]
            return (Array(state.open.values), Array(state.openShared.values), pending)
        }
        for promise in pending { promise.succeed() }
        return (open, shared)
    }
}
