import NIOCore
import NIOHTTP2

/// Watches one HTTP/2 connection from behind `NIOHTTP2Handler` (which passes on the frames of stream 0):
/// the server's SETTINGS_MAX_CONCURRENT_STREAMS and GOAWAY go to the ``HTTP2Connection``, and while no
/// stream is open the connection is checked with a PING every `pingInterval` (closed when the previous
/// PING is still unanswered) and closed once it has been idle for `idleTimeout` (counted in intervals,
/// on the loop's own clock).
///
/// swift-nio-http2 answers the server's PINGs itself but sends none of its own; a connection whose peer
/// vanished without a FIN would otherwise be found dead only by the next request's timeout.
final class HTTP2ConnectionMonitor: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What the monitor reports.
    struct Events {
        /// SETTINGS_MAX_CONCURRENT_STREAMS changed.
        var maximumStreams: (Int) -> Void
        /// GOAWAY arrived (with the last stream the server processed), or the connection is closing
        /// (nil): no new streams.
        var goAway: (HTTP2StreamID?) -> Void
        /// Whether no stream is open.
        var isIdle: () -> Bool
    }

    private let events: Events
    private let pingInterval: TimeAmount
    private let idleTimeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var unansweredPing: HTTP2PingData?
    private var pingsSent: UInt64 = 0
    /// Ticks in a row with no stream open.
    private var idleTicks: Int64 = 0

    init(events: Events, pingInterval: TimeAmount, idleTimeout: TimeAmount) {
        self.events = events
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        events.goAway(nil)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                events.maximumStreams(setting.value)
            }
        case .goAway(let lastStreamID, _, _):
            // Reported before swift-nio-http2 tells the streams above it that they are closed.
            events.goAway(lastStreamID)
        case .ping(let data, ack: true):
            if data == unansweredPing { unansweredPing = nil }
        default:
            break
        }
        context.fireChannelRead(data)
    }

    private func arm(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: pingInterval) { [self] in
            tick(context: context)
        }
    }

    private func tick(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        guard events.isIdle() else {
            // Streams are open: their own timeouts watch the connection.
            idleTicks = 0
            unansweredPing = nil
            arm(context: context)
            return
        }
        idleTicks += 1
        if unansweredPing != nil || pingInterval * idleTicks >= idleTimeout {
            // Dead (no answer within a whole interval) or idle for long enough: closed, so no request
            // is ever sent on it.
            events.goAway(nil)
            context.close(promise: nil)
            return
        }
        pingsSent += 1
        let ping = HTTP2PingData(withInteger: pingsSent)
        unansweredPing = ping
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: false))), promise: nil)
        arm(context: context)
    }
}
