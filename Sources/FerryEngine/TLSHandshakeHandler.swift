import Foundation
import NIOCore
import NIOSSL
import NIOTLS

/// Completes a promise when the TLS handshake of its channel ends: with what it negotiated, or with the
/// error that ended it. Removed from the pipeline once done.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// What a finished handshake agreed on.
    struct Outcome: Sendable {
        /// The ALPN protocol (`h2`, `http/1.1`), nil when the server chose none.
        var applicationProtocol: String?
        /// `TLSv1.3`, ...
        var version: String?
        /// When it began: when the connection was up with the TLS handler in place (NIO's TLS handler,
        /// before this one, sends the ClientHello then).
        var start: Date
        /// When it ended.
        var end: Date
    }

    private let promise: EventLoopPromise<Outcome>
    private var done = false
    /// Recorded on the loop as the handshake begins: the caller's task may only get to wait for it after
    /// it ended (under load it did, and the metrics said the handshake began after it ended).
    private var start: Date?

    init(promise: EventLoopPromise<Outcome>) {
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start = Date() }
    }

    func channelActive(context: ChannelHandlerContext) {
        if start == nil { start = Date() }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event, !done {
            done = true
            let version = try? context.pipeline.syncOperations.nioSSL_tlsVersion()
            let end = Date()
            promise.succeed(Outcome(applicationProtocol: negotiated, version: TLSClient.name(version), start: start ?? end, end: end))
            // Passed on before leaving: ALPN's handler behind this one acts on it.
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            promise.fail(error)
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(ChannelError.ioOnClosedChannel)
        }
    }
}
