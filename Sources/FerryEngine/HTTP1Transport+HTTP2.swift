import FerryCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// HTTP/2 on ``HTTP1Transport``'s connections: the pipeline a connection gets when ALPN picks `h2`, and
/// the stream each request runs on (docs/ARCHITECTURE.md, "The engine").
extension HTTP1Transport {
    /// Settings of the HTTP/2 connections (tests shorten the PING interval).
    struct HTTP2Settings: Sendable {
        /// Bytes a stream may have in flight before the reader takes them (SETTINGS_INITIAL_WINDOW_SIZE and
        /// the stream window kept topped up). 64 KiB, the protocol's default, allows one window a round
        /// trip; this much keeps a path of 1 Gbit/s and 30 ms full, and is what a slow reader can leave
        /// buffered per stream.
        var streamWindow = 4 << 20
        /// The connection's window, shared by its streams.
        var connectionWindow = 16 << 20
        /// How often an idle connection is checked with a PING.
        var pingInterval = TimeAmount.seconds(20)
        /// How long an idle connection is kept.
        var idleTimeout = TimeAmount.seconds(60)
    }

    /// Puts swift-nio-http2 on a connection whose ALPN chose `h2` (on its loop).
    static func configureHTTP2(
        _ channel: any Channel,
        origin: String,
        pool: HTTP1ConnectionPool,
        settings: HTTP2Settings
    ) throws -> HTTP2Connection {
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .initialWindowSize, value: settings.streamWindow),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
        ]
        connectionConfiguration.targetWindowSize = settings.connectionWindow
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.targetWindowSize = settings.streamWindow
        // Request bodies are written a chunk at a time, each once the previous is on the wire.
        streamConfiguration.outboundBufferSizeHighWatermark = 1 << 20
        streamConfiguration.outboundBufferSizeLowWatermark = 256 << 10
        let operations = channel.pipeline.syncOperations
        let multiplexer = try operations.configureHTTP2Pipeline(
            mode: .client,
            connectionConfiguration: connectionConfiguration,
            streamConfiguration: streamConfiguration,
            inboundStreamInitializer: { stream in
                // Push is switched off; a server that opens a stream anyway gets it closed.
                stream.close()
            }
        )
        let connection = HTTP2Connection(channel: channel, multiplexer: multiplexer, origin: origin)
        try operations.addHandler(
            HTTP2ConnectionMonitor(
                events: .init(
                    maximumStreams: { connection.maximumStreams($0) },
                    goAway: { lastProcessed in
                        connection.drain(lastProcessed: lastProcessed)
                        pool.retire(connection)
                    },
                    isIdle: { connection.isIdle }
                ),
                pingInterval: settings.pingInterval,
                idleTimeout: settings.idleTimeout
            )
        )
        channel.closeFuture.whenComplete { _ in
            connection.drain()
            pool.retire(connection)
        }
        return connection
    }

    /// Opens reserved stream `number` of `connection`, with the HTTP/1-style codec and an exchange handler
    /// of its own, and calls `then` on the loop as soon as the stream is active; the stream's slot is
    /// given back when it closes. When the connection can no longer open streams, `failed` gets
    /// ``HTTP1ConnectionError/refused(_:)`` (the request may go elsewhere).
    func openStream(
        _ number: Int,
        on connection: HTTP2Connection,
        slot: HandlerSlot,
        then start: @escaping @Sendable (any Channel, NIOLoopBound<HTTP1ConnectionHandler>) -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        let idle = idleTimeout
        let made = connection.channel.eventLoop.makePromise(of: (any Channel).self)
        connection.multiplexer.createStreamChannel(promise: made) { stream in
            stream.eventLoop.makeCompletedFuture {
                let handler = HTTP1ConnectionHandler(idleTimeout: idle, coalescesBody: true)
                let operations = stream.pipeline.syncOperations
                try operations.addHandler(HeadersEndStreamMerger())
                try operations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                try operations.addHandler(handler)
                let bound = NIOLoopBound(handler, eventLoop: stream.eventLoop)
                connection.opened(number, handler: bound)
                handler.onOutcome = { _ in connection.release(number) }
                handler.streamRefused = { connection.wasRefused($0) }
                slot.handler = bound
            }
        }
        made.futureResult.whenComplete { result in
            switch result {
            case .success(let stream):
                guard let handler = slot.handler else {
                    connection.release(number)
                    failed(HTTP1ConnectionError.refused("the stream could not be set up"))
                    return
                }
                start(stream, handler)
            case .failure(let error):
                if slot.handler == nil { connection.release(number) }
                failed(HTTP1ConnectionError.refused("the connection could not open a stream: \(error)"))
            }
        }
    }

}
