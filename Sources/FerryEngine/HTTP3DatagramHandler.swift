import NIOCore

/// Datagrams from the channel into the connection.
final class HTTP3DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let connection: HTTP3Connection

    init(_ connection: HTTP3Connection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        connection.received(envelope.data, segmentSize: envelope.metadata?.segmentSize)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        connection.readComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.socketError(error)
    }
}
