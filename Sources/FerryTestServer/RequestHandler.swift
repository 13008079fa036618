import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Serves the requests of one HTTP/1.1 connection or one HTTP/2 stream, one at a time: reads the head,
/// feeds the body to a sink, asks ``Router`` for the response and hands it to a ``ResponseWriter``.
final class RequestHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let listener: ListenerContext
    private let protocolName: String
    /// The connection's channel (for an HTTP/2 stream, its parent), closed by the close faults.
    private let connection: any Channel
    private var router: Router?
    private var sink: (any RequestBodySink)?
    private var writer: ResponseWriter?
    /// `read_throttle`: the pace of the request body being read, and a read held back to keep it.
    private var readPace: (pacer: Pacer, start: NIODeadline, received: Int64)?
    private var heldRead = false

    init(listener: ListenerContext, protocolName: String, connection: any Channel) {
        self.listener = listener
        self.protocolName = protocolName
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            let router = Router(listener: listener, request: request, protocolName: protocolName)
            listener.state.requestReceived(path: router.query.path, protocolName: protocolName)
            self.router = router
            self.sink = router.bodySink()
            readPace = router.faults.readThrottle.map { (Pacer(rate: $0), .now(), 0) }
            if let rate = router.faults.readThrottle {
                // Small reads, one per read event, so the pace holds to a twentieth of a second.
                let size = Int(max(1024, min(1 << 20, rate / 20)))
                _ = context.channel.setOption(
                    ChannelOptions.recvAllocator,
                    value: FixedSizeRecvByteBufferAllocator(capacity: size)
                )
                _ = context.channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            }
            if request.headerFields[.expect]?.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
        case .body(let buffer):
            readPace?.received += Int64(buffer.readableBytes)
            sink?.consume(buffer)
        case .end:
            if readPace != nil {
                readPace = nil
                _ = context.channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator())
                _ = context.channel.setOption(ChannelOptions.maxMessagesPerRead, value: 4)
            }
            guard let router, let sink else { return }
            self.router = nil
            self.sink = nil
            let plan = router.plan(body: sink.finish())
            let writer = ResponseWriter(
                plan: plan,
                context: context,
                state: listener.state,
                pool: listener.pool,
                counterPath: router.query.path,
                connection: connection
            ) { [weak self] in
                self?.writer = nil
            }
            self.writer = writer
            writer.start()
        }
    }

    /// Holds reads back while a `read_throttle`d body is ahead of its pace.
    func read(context: ChannelHandlerContext) {
        guard let pace = readPace, !heldRead else {
            if !heldRead { context.read() }
            return
        }
        let elapsed = Double((NIODeadline.now() - pace.start).nanoseconds) / 1e9
        guard let delay = pace.pacer.delay(sent: pace.received, count: 0, elapsed: elapsed) else {
            context.read()
            return
        }
        heldRead = true
        context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { [self] in
            heldRead = false
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writer?.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        writer?.cancel()
        writer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        writer?.cancel()
        writer = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A protocol error on this connection or stream: nothing sensible can follow on it.
        writer?.cancel()
        writer = nil
        context.close(promise: nil)
    }
}
