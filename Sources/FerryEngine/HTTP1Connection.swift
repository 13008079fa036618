import NIOCore
import Synchronization

/// One connection of ``NetworkTransport``: its channel and its handler (reached on the channel's loop).
final class HTTP1Connection: Sendable {
    let channel: any Channel
    let handler: NIOLoopBound<HTTP1ConnectionHandler>
    /// What the pool keeps it under.
    let key: PoolKey
    private let exchanges = Atomic<Int>(0)
    /// Addresses, TLS and connect times.
    let info = ConnectionInfo()

    init(channel: any Channel, handler: NIOLoopBound<HTTP1ConnectionHandler>, key: PoolKey) {
        self.channel = channel
        self.handler = handler
        self.key = key
    }

    /// A number for the next exchange on this connection (one at a time: HTTP/1.1 without pipelining).
    func nextExchangeID() -> Int {
        exchanges.add(1, ordering: .relaxed).newValue
    }
}
