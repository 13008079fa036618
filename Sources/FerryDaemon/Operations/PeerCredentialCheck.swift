import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// ferryd serves its control socket to its own user only: each connection's peer is looked up with
/// `SO_PEERCRED` before anything it sent is read, and a process of another user is disconnected unread.
/// (The socket is mode 0600 in a 0700 directory, so only root gets this far; with socket activation the
/// relay's socket is systemd's, whose mode the unit sets. The check holds whatever the modes are.)
final class PeerCredentialCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private enum State {
        case checking([NIOAny])
        case allowed
        case refused
    }

    private var state = State.checking([])

    /// The peer's uid, or nil when the channel cannot say (not a unix socket).
    static func peerUID(of channel: any Channel) -> EventLoopFuture<uid_t?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return future.map { credentials -> uid_t? in credentials.uid }.recover { _ -> uid_t? in nil }
    }

    /// Linux's `struct ucred`, which Swift's Glibc does not export (it needs _GNU_SOURCE).
    struct PeerCredentials: Sendable {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }

    /// Whether a peer of `uid` may use the control API: this daemon's own user only.
    static func allows(_ uid: uid_t?) -> Bool {
        uid == geteuid()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        Self.peerUID(of: context.channel).whenComplete { result in
            let (handler, context) = bound.value
            let uid = (try? result.get()) ?? nil
            handler.decided(Self.allows(uid), context: context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .checking(var pending):
            pending.append(data)
            state = .checking(pending)
        case .allowed:
            context.fireChannelRead(data)
        case .refused:
            break
        }
    }

    private func decided(_ allowed: Bool, context: ChannelHandlerContext) {
        guard case .checking(let pending) = state else { return }
        guard allowed else {
            state = .refused
            context.close(promise: nil)
            return
        }
        state = .allowed
        for data in pending { context.fireChannelRead(data) }
        if !pending.isEmpty { context.fireChannelReadComplete() }
    }
}
