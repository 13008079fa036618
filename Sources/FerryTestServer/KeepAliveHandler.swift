import NIOCore
import NIOHTTP1

/// Honours `Connection: close` and HTTP/1.0 without keep-alive on an HTTP/1.1 listener: adds
/// `Connection: close` to the response and closes the connection once the response has been written.
///
/// Needed because the swift-http-types conversion in front of ``RequestHandler`` drops the connection
/// headers, so the handler itself cannot see them.
final class KeepAliveHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var closeAfterResponse = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            closeAfterResponse = !head.isKeepAlive
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where closeAfterResponse && head.status.code >= 200:
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where closeAfterResponse:
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.write(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            context.write(data, promise: promise)
        }
    }
}
