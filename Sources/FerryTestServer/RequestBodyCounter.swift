import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Counts request body bytes per path as they arrive (``TestServerCounters/requestBodyBytesByPath``),
/// before any other handler can refuse or drop them: what a client put on the wire. Passes every part on.
final class RequestBodyCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let state: TestServerState
    private var path = "/"

    init(state: TestServerState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            path = Query(target: head.path ?? "/").path
            state.wireRequest(method: head.method.rawValue)
        case .body(let buffer):
            state.requestBodyBytesReceived(buffer.readableBytes, path: path)
        case .end:
            break
        }
        context.fireChannelRead(data)
    }
}
