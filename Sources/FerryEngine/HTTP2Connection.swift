import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One HTTP/2 connection of ``NetworkTransport`` (ALPN chose `h2`): shared by every request to its origin,
/// each on a stream of its own, up to the server's SETTINGS_MAX_CONCURRENT_STREAMS.
///
/// Its streams are counted here (a slot is reserved before the stream is started and given back when
/// the stream ends); ``HTTP2ClientHandler``, on the connection's loop, runs the streams and reports the
/// server's SETTINGS and GOAWAY.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    let handler: NIOLoopBound<HTTP2ClientHandler>
    /// What the pool keeps it under.
    let key: PoolKey
    /// Addresses, TLS and connect times, shared with HTTP/1.1 connections.
    let info = ConnectionInfo()
    private let exchanges = Atomic<Int>(0)

    private struct State {
        /// Streams reserved or open.
        var streams = 0
        /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2: unlimited until it says).
        var maximumStreams = 100
        /// GOAWAY received, or closed: no new streams.
        var draining = false
    }

    private let state = NIOLockedValueBox(State())

    /// A connection with one stream reserved for the request that opened it (so an idle check between
    /// the handshake and that request cannot close it under the request).
    init(channel: any Channel, handler: NIOLoopBound<HTTP2ClientHandler>, key: PoolKey) {
        self.channel = channel
        self.handler = handler
        self.key = key
        state.withLockedValue { $0.streams = 1 }
    }

    /// Reserves a stream when the connection can take one more; the caller starts it (whose end gives
    /// the slot back, as does a start that fails).
    func reserve() -> Bool {
        guard channel.isActive else { return false }
        return state.withLockedValue { state in
            guard !state.draining, state.streams < state.maximumStreams else { return false }
            state.streams += 1
            return true
        }
    }

    /// A number for the next exchange on this connection.
    func nextExchangeID() -> Int {
        exchanges.add(1, ordering: .relaxed).newValue
    }

    /// Gives back a stream's slot: it ended, or could not be started.
    func release() {
        state.withLockedValue { state in state.streams = max(0, state.streams - 1) }
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    func maximumStreams(_ value: Int) {
        state.withLockedValue { $0.maximumStreams = value }
    }

    /// GOAWAY arrived or the connection closed: no new stream goes here.
    func drain() {
        state.withLockedValue { $0.draining = true }
    }

    /// Whether new streams may go here.
    var isDraining: Bool { state.withLockedValue { $0.draining } }

    /// Whether no stream is reserved or open.
    var isIdle: Bool { state.withLockedValue { $0.streams == 0 } }

    /// Fails every open stream with a cancellation and closes the connection.
    func shutDown() {
        drain()
        let handler = self.handler
        handler.eventLoop.execute { handler.value.shutDown() }
        channel.close(promise: nil)
    }
}

/// What is known of a connection once it is open: when it was made, where to, TLS. Shared by the
/// HTTP/1.1 and HTTP/2 connections of ``NetworkTransport``.
final class ConnectionInfo: Sendable {
    private let known = NIOLockedValueBox(Details())

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
}
