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
    private let known = NIOLockedValueBox(Details())

    /// What is known of the connection once it is open: when it was made, where to, TLS.
    struct Details: Sendable {
        var connectStart: Date?
        var connectEnd: Date?
        var remoteAddress: String?
        var localAddress: String?
        var secureConnectionStart: Date?
        var secureConnectionEnd: Date?
        var tlsVersion: String?
    }

    /// Set once, after connecting and before the connection is used.
    var details: Details {
        get { known.withLockedValue { $0 } }
        set { known.withLockedValue { $0 = newValue } }
    }

    /// Fills an exchange's timing: the connection's phases when it is new, its addresses and TLS always.
    func describe(into timing: inout TransportTiming, reused: Bool) {
        let details = details
        timing.reusedConnection = reused
        if !reused {
            timing.connectStart = details.connectStart
            timing.connectEnd = details.connectEnd
            timing.secureConnectionStart = details.secureConnectionStart
            timing.secureConnectionEnd = details.secureConnectionEnd
        }
        timing.tlsVersion = details.tlsVersion
        timing.remoteAddress = details.remoteAddress
        timing.localAddress = details.localAddress
    }

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

/// The idle connections of ``HTTP1Transport`` by origin (most recently used first), and every open one
/// (so shutting down can close them). How many run at once is the session's business
/// (``SessionTransport``'s per-host limit); the pool only keeps what is idle.
final class HTTP1ConnectionPool: Sendable {
    private struct State {
        var idle: [String: [HTTP1Connection]] = [:]
        var open: [ObjectIdentifier: HTTP1Connection] = [:]
        var isShutDown = false
    }

    /// Idle connections kept per origin; more are closed.
    let maximumIdlePerOrigin: Int
    private let state = NIOLockedValueBox(State())

    init(maximumIdlePerOrigin: Int) {
        self.maximumIdlePerOrigin = maximumIdlePerOrigin
    }

    /// An idle connection to `origin`, if one is open.
    func take(origin: String) -> HTTP1Connection? {
        state.withLockedValue { state in
            while let connection = state.idle[origin]?.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }
    }

    /// Records a new connection.
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

    /// Refuses new connections and returns every open one.
    func shutDown() -> [HTTP1Connection] {
        state.withLockedValue { state in
            state.isShutDown = true
            state.idle = [:]
            return Array(state.open.values)
        }
    }
}
