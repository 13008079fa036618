import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// systemd socket activation (`ferryd.socket`): the listening socket systemd made and passed in
/// (`LISTEN_FDS`, `LISTEN_PID`; sd_listen_fds(3)).
public enum SocketActivation {
    /// The first descriptor systemd passes (SD_LISTEN_FDS_START).
    static let firstDescriptor: Int32 = 3

    /// The inherited listening socket, when the environment says this process got one; the variables
    /// are removed so that children (launched clients) do not think they got it too.
    /// - Throws: a description when the variables are set but wrong (another process's, not a socket).
    public static func inheritedSocket(environment: [String: String]) throws -> Int32? {
        guard let count = environment["LISTEN_FDS"] else { return nil }
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDNAMES")
        if let pid = environment["LISTEN_PID"], Int32(pid) != getpid() { return nil }
        guard let number = Int(count), number >= 1 else {
            throw ActivationError("LISTEN_FDS is '\(count)'; systemd passes 1 for ferryd.socket")
        }
        var info = stat()
        guard fstat(firstDescriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw ActivationError("descriptor \(firstDescriptor) from LISTEN_FDS is not a socket")
        }
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(firstDescriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 else {
            throw ActivationError("descriptor \(firstDescriptor) from LISTEN_FDS is not a listening socket (ListenStream=)")
        }
        _ = fcntl(firstDescriptor, F_SETFD, FD_CLOEXEC)
        return firstDescriptor
    }

    /// A socket activation that cannot be used.
    public struct ActivationError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}

/// Serves an inherited listening socket by relaying each connection, byte for byte in both directions,
/// to the control API's own unix socket. Hummingbird binds the sockets it serves itself and cannot take
/// a descriptor; the relay keeps systemd's socket (and the connections queued on it while ferryd
/// started) working without forking Hummingbird. Costs one local hop per control request.
final class SocketRelay: Sendable {
    private let listener: any Channel

    /// Accepts on `descriptor` and relays to the unix socket at `target`.
    static func start(descriptor: Int32, target: String) async throws -> SocketRelay {
        let group = MultiThreadedEventLoopGroup.singleton
        let listener = try await ServerBootstrap(group: group)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { inbound in
                // Another user's connection is closed before anything is relayed (PeerCredentialCheck).
                PeerCredentialCheck.peerUID(of: inbound).flatMapThrowing { uid in
                    guard PeerCredentialCheck.allows(uid) else {
                        throw SocketActivation.ActivationError("a process of uid \(uid.map(String.init) ?? "unknown") may not use this ferryd")
                    }
                }
                .flatMap {
                    ClientBootstrap(group: inbound.eventLoop)
                        .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                        .connect(unixDomainSocketPath: target)
                }
                .flatMap { outbound in
                    let (a, b) = RelayHandler.pair()
                    // Reading starts once the channel is active, after this initializer: both ends
                    // are glued by then.
                    return inbound.pipeline.addHandler(a).and(outbound.pipeline.addHandler(b)).map { _ in }
                }
                .flatMapErrorThrowing { error in
                    inbound.close(promise: nil)
                    throw error
                }
            }
            .withBoundSocket(descriptor)
            .get()
        return SocketRelay(listener: listener)
    }

    private init(listener: any Channel) {
        self.listener = listener
    }

    /// Stops accepting (the descriptor is closed; systemd keeps its own copy).
    func close() async {
        try? await listener.close()
    }
}

/// One end of a relay: what one channel reads, the partner writes; reading waits while the partner
/// cannot write (backpressure), and an end of input half-closes the partner's output.
private final class RelayHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: RelayHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (RelayHandler, RelayHandler) {
        let (a, b) = (RelayHandler(), RelayHandler())
        a.partner = b
        b.partner = a
        return (a, b)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    private func partnerWrite(_ data: NIOAny) {
        guard let context else { return }
        context.eventLoop.execute { context.writeAndFlush(data, promise: nil) }
    }

    private func partnerCloseOutput() {
        guard let context else { return }
        context.eventLoop.execute { context.close(mode: .output, promise: nil) }
    }

    private func partnerClose() {
        guard let context else { return }
        context.eventLoop.execute { context.close(promise: nil) }
    }

    private var isWritable: Bool { context?.channel.isWritable ?? false }

    private func partnerBecameWritable() {
        guard let context else { return }
        context.eventLoop.execute {
            if self.pendingRead {
                self.pendingRead = false
                context.read()
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.partnerWrite(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.partnerClose()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { partner?.partnerCloseOutput() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
