import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2

/// One HTTP/2 connection of ``HTTP1Transport`` (ALPN chose `h2`): shared by every request to its origin,
/// each on a stream of its own, up to the server's SETTINGS_MAX_CONCURRENT_STREAMS.
///
/// Its streams are counted here (a slot is reserved before the stream is made and given back when the
/// stream closes); ``HTTP2ConnectionMonitor``, on the connection's loop, reports the server's SETTINGS
/// and GOAWAY, answers for idle PINGs, and closes the connection when it has been idle too long.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    let origin: String
    /// Addresses, TLS and connect times, shared with HTTP/1.1 connections.
    let info = ConnectionInfo()

    private struct State {
        /// Streams reserved or open.
        var streams = 0
        /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2: unlimited until it says).
        var maximumStreams = 100
        /// GOAWAY received, or closed: no new streams.
        var draining = false
        /// The last stream the server's GOAWAY says it processed.
        var lastProcessed: HTTP2StreamID?
        /// The handlers of the open streams (for shutting down).
        var handlers: [Int: NIOLoopBound<HTTP1ConnectionHandler>] = [:]
        var nextStream = 0
    }

    private let state = NIOLockedValueBox(State())

    /// A connection whose stream 1 is reserved for the request that opened it (so an idle check between
    /// the handshake and that request cannot close it under the request).
    init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, origin: String) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.origin = origin
        state.withLockedValue { state in
            state.streams = 1
            state.nextStream = 1
        }
    }

    /// The stream reserved for the request that opened the connection.
    static let creatorsStream = 1

    /// Reserves a stream when the connection can take one more; the caller opens it or calls
    /// ``release(_:)``. Returns the stream's number on this connection.
    func reserve() -> Int? {
        guard channel.isActive else { return nil }
        return state.withLockedValue { state in
            guard !state.draining, state.streams < state.maximumStreams else { return nil }
            state.streams += 1
            state.nextStream += 1
            return state.nextStream
        }
    }

    /// Records the handler of stream `number` (so shutting down reaches it).
    func opened(_ number: Int, handler: NIOLoopBound<HTTP1ConnectionHandler>) {
        state.withLockedValue { $0.handlers[number] = handler }
    }

    /// Gives back stream `number`'s slot: it closed, or could not be opened.
    func release(_ number: Int) {
        state.withLockedValue { state in
            state.handlers[number] = nil
            state.streams = max(0, state.streams - 1)
        }
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    func maximumStreams(_ value: Int) {
        state.withLockedValue { $0.maximumStreams = value }
    }

    /// GOAWAY naming `lastProcessed` (nil: the connection closed): no new stream goes here.
    func drain(lastProcessed: HTTP2StreamID? = nil) {
        state.withLockedValue { state in
            state.draining = true
            if let lastProcessed { state.lastProcessed = min(lastProcessed, state.lastProcessed ?? lastProcessed) }
        }
    }

    /// Whether a GOAWAY said the server did not process stream `id` (RFC 9113 §6.8: it may be sent again
    /// on another connection). swift-nio-http2 closes such streams with CANCEL, not REFUSED_STREAM.
    func wasRefused(_ id: HTTP2StreamID) -> Bool {
        state.withLockedValue { state in state.lastProcessed.map { id > $0 } ?? false }
    }

    /// Whether new streams may go here.
    var isDraining: Bool { state.withLockedValue { $0.draining } }

    /// Whether no stream is reserved or open.
    var isIdle: Bool { state.withLockedValue { $0.streams == 0 } }

    /// Fails every open stream with a cancellation and closes the connection.
    func shutDown() {
        let handlers = state.withLockedValue { state -> [NIOLoopBound<HTTP1ConnectionHandler>] in
            state.draining = true
            return Array(state.handlers.values)
        }
        for handler in handlers {
            handler.eventLoop.execute { handler.value.shutDown() }
        }
        channel.close(promise: nil)
    }
}

/// What is known of a connection once it is open: when it was made, where to, TLS. Shared by the
/// HTTP/1.1 and HTTP/2 connections of ``HTTP1Transport``.
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
