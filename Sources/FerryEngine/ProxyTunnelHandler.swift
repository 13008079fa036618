import FerryCore
import NIOCore

/// Opens a tunnel through a proxy on a new channel: drives a ``ProxyHandshake`` with the bytes that
/// arrive, and completes `promise` once the tunnel is open (or the proxy refused). The connection's
/// real handlers are added after it; removing it passes on whatever the far server already sent.
final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var handshake: ProxyHandshake
    private let promise: EventLoopPromise<Void>
    private var started = false
    private var finished = false
    private var leftover: [UInt8] = []

    init(handshake: ProxyHandshake, promise: EventLoopPromise<Void>) {
        self.handshake = handshake
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { begin(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        begin(context)
        context.fireChannelActive()
    }

    private func begin(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        apply(handshake.start(), context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else {
            // After the tunnel opened and before this handler went: kept for the handlers that follow.
            leftover += unwrapInboundIn(data).readableBytesView
            return
        }
        let buffer = unwrapInboundIn(data)
        apply(handshake.receive(buffer.readableBytesView), context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !finished {
            finished = true
            promise.fail(FerryError(.networkConnectionLost, "the proxy closed the connection during the handshake"))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !finished {
            finished = true
            promise.fail(error)
        }
        context.fireErrorCaught(error)
    }

    func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        if !leftover.isEmpty {
            context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: leftover)))
            context.fireChannelReadComplete()
            leftover = []
        }
        context.leavePipeline(removalToken: removalToken)
    }

    private func apply(_ action: ProxyHandshake.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .send(let bytes):
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        case .wait:
            break
        case .established(let rest):
            finished = true
            leftover = rest
            promise.succeed()
        case .fail(let error):
            finished = true
            promise.fail(error)
            context.close(promise: nil)
        }
    }
}
