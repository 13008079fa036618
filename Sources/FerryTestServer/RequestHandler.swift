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
            if request.headerFields[.expect]?.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
        case .body(let buffer):
            sink?.consume(buffer)
        case .end:
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
