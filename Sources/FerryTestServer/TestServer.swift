import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOHTTPTypesHTTP2
import NIOPosix
import NIOResumableUpload
import NIOSSL

/// The HTTP test server that Ferry's tests and benchmarks run against: deterministic content, Range and
/// validators, and fault injection per request. docs/TESTSERVER.md describes the routes and knobs.
///
/// ```swift
/// let server = try await TestServer.start()
/// defer { Task { try await server.shutdown() } }
/// let url = server.url("/bytes/1048576?seed=7&throttle=100000")
/// ```
public final class TestServer: Sendable {
    /// The configuration the server was started with.
    public let configuration: Configuration
    /// The HTTPS identity in use (clients trust ``TestCertificates/trustRoot``).
    public let certificates: TestCertificates

    private let group: MultiThreadedEventLoopGroup
    private let pool: NIOThreadPool
    private let state: TestServerState
    private let origins: Origins
    private let channels: [ListenerKind: any Channel]

    /// The port of each running listener.
    public var ports: [ListenerKind: Int] {
        channels.compactMapValues { $0.localAddress?.port }
    }

    /// The main listener's port.
    public var port: Int { ports[.main]! }

    /// `http://127.0.0.1:PORT` of the main listener.
    public var baseURL: String { origin(.main)! }

    /// The origin (`scheme://127.0.0.1:port`) of a listener, if it runs.
    public func origin(_ listener: ListenerKind) -> String? { origins[listener] }

    /// An absolute URL for `pathAndQuery` (which starts with `/`) on a listener (default: main).
    public func url(_ pathAndQuery: String, on listener: ListenerKind = .main) -> String {
        (origins[listener] ?? baseURL) + pathAndQuery
    }

    /// A snapshot of the counters.
    public var counters: TestServerCounters { state.counters }

    /// Sets every counter back to zero (per-key fault counts and kept uploads stay).
    public func resetCounters() { state.resetCounters() }

    /// Opens the gate named `name` (the `gate=` fault): bodies held at it go on, later ones pass.
    public func openGate(_ name: String) { state.openGate(name) }

    /// The upload kept under `key` by `/upload?keep=KEY` (also by a resumable upload).
    public func storedUpload(key: String) -> StoredUpload? { state.upload(key: key) }

    private init(
        configuration: Configuration,
        certificates: TestCertificates,
        group: MultiThreadedEventLoopGroup,
        pool: NIOThreadPool,
        state: TestServerState,
        origins: Origins,
        channels: [ListenerKind: any Channel]
    ) {
        self.configuration = configuration
        self.certificates = certificates
        self.group = group
        self.pool = pool
        self.state = state
        self.origins = origins
        self.channels = channels
    }

    /// Starts every configured listener on 127.0.0.1.
    /// - Throws: ``TestServerError`` when a port is taken or the certificate cannot be made.
    public static func start(_ configuration: Configuration = Configuration()) async throws -> TestServer {
        let certificates = try configuration.certificates ?? TestCertificates.generate()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let state = TestServerState()
        let origins = Origins()
        var channels: [ListenerKind: any Channel] = [:]
        do {
            func context(_ kind: ListenerKind) -> ListenerContext {
                ListenerContext(kind: kind, state: state, origins: origins, root: configuration.root, pool: pool)
            }
            channels[.main] = try await bindPlain(group: group, port: configuration.port, context: context(.main))
            channels[.alternate] = try await bindPlain(
                group: group,
                port: configuration.alternatePort,
                context: context(.alternate)
            )
            if let tlsPort = configuration.tlsPort {
                var tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: try certificates.chain.map { .certificate($0) },
                    privateKey: .privateKey(try certificates.privateKey)
                )
                tls.applicationProtocols = ["h2", "http/1.1"]
                tls.minimumTLSVersion = configuration.tlsMinimumVersion
                tls.maximumTLSVersion = configuration.tlsMaximumVersion
                if let clientRoot = configuration.clientCertificateTrustRootPEM {
                    tls.certificateVerification = .noHostnameVerification
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(clientRoot.utf8)))
                }
                channels[.tls] = try await bindTLS(
                    group: group,
                    port: tlsPort,
                    sslContext: try NIOSSLContext(configuration: tls),
                    context: context(.tls)
                )
            }
            if let resumablePort = configuration.resumablePort {
                channels[.resumable] = try await bindResumable(
                    group: group,
                    port: resumablePort,
                    context: context(.resumable)
                )
            }
        } catch {
            for channel in channels.values { try? await channel.close() }
            try? await group.shutdownGracefully()
            try? await pool.shutdownGracefully()
            if let error = error as? TestServerError { throw error }
            throw TestServerError(
                "could not start the test server on 127.0.0.1: \(error). "
                    + "If a port is taken, pick another or 0 for a free one."
            )
        }
        for (kind, channel) in channels {
            let scheme = kind == .tls ? "https" : "http"
            origins[kind] = "\(scheme)://127.0.0.1:\(channel.localAddress!.port!)"
        }
        return TestServer(
            configuration: configuration,
            certificates: certificates,
            group: group,
            pool: pool,
            state: state,
            origins: origins,
            channels: channels
        )
    }

    /// Runs `body` with a started server and shuts it down afterwards, whatever `body` does.
    public static func withServer<Result>(
        _ configuration: Configuration = Configuration(),
        _ body: (TestServer) async throws -> Result
    ) async throws -> Result {
        let server = try await start(configuration)
        do {
            let result = try await body(server)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// Closes every listener and open connection and stops the threads.
    public func shutdown() async throws {
        for channel in channels.values { try? await channel.close() }
        try await group.shutdownGracefully()
        try await pool.shutdownGracefully()
    }

    // MARK: Listeners

    /// Binds a listener on 127.0.0.1; `initializer` sets up each accepted connection's pipeline.
    private static func bind(
        group: MultiThreadedEventLoopGroup,
        port: Int,
        context: ListenerContext,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 1 << 20, high: 4 << 20))
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                context.state.connectionAccepted()
                channel.closeFuture.whenComplete { _ in context.state.connectionClosed() }
                return initializer(channel)
            }
            .bind(host: "127.0.0.1", port: port).get()
    }

    /// HTTP/1.1 framing and the conversion to swift-http-types parts.
    private static func addHTTP1Codec(to channel: any Channel, secure: Bool, context: ListenerContext) throws {
        let sync = channel.pipeline.syncOperations
        try sync.configureHTTPServerPipeline(withErrorHandling: true)
        try sync.addHandler(KeepAliveHandler())
        try sync.addHandler(HTTP1ToHTTPServerCodec(secure: secure))
        try sync.addHandler(RequestBodyCounter(state: context.state))
    }

    private static func addHTTP1Handlers(to channel: any Channel, secure: Bool, context: ListenerContext) throws {
        try addHTTP1Codec(to: channel, secure: secure, context: context)
        try channel.pipeline.syncOperations.addHandler(
            RequestHandler(listener: context, protocolName: "HTTP/1.1", connection: channel)
        )
    }

    private static func bindPlain(
        group: MultiThreadedEventLoopGroup,
        port: Int,
        context: ListenerContext
    ) async throws -> any Channel {
        try await bind(group: group, port: port, context: context) { channel in
            channel.eventLoop.makeCompletedFuture {
                try addHTTP1Handlers(to: channel, secure: false, context: context)
            }
        }
    }

    private static func bindTLS(
        group: MultiThreadedEventLoopGroup,
        port: Int,
        sslContext: NIOSSLContext,
        context: ListenerContext
    ) async throws -> any Channel {
        try await bind(group: group, port: port, context: context) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            }.flatMap {
                channel.configureHTTP2SecureUpgrade(
                    h2ChannelConfigurator: { connection in
                        connection.configureHTTP2Pipeline(mode: .server) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandlers([
                                    HTTP2FramePayloadToHTTPServerCodec(),
                                    RequestHandler(listener: context, protocolName: "HTTP/2", connection: connection),
                                ])
                            }
                        }.map { _ in () }
                    },
                    http1ChannelConfigurator: { connection in
                        connection.eventLoop.makeCompletedFuture {
                            try addHTTP1Handlers(to: connection, secure: true, context: context)
                        }
                    }
                )
            }
        }
    }

    private static func bindResumable(
        group: MultiThreadedEventLoopGroup,
        port: Int,
        context: ListenerContext
    ) async throws -> any Channel {
        // The upload context needs the listener's own origin, known once bound; no client can connect
        // before then, so the initializer reads it lazily.
        let uploadContext = NIOLockedValueBox<HTTPResumableUploadContext?>(nil)
        let channel = try await bind(group: group, port: port, context: context) { channel in
            channel.eventLoop.makeCompletedFuture {
                try addHTTP1Codec(to: channel, secure: false, context: context)
                let resumable = uploadContext.withLockedValue { $0 }!
                try channel.pipeline.syncOperations.addHandler(
                    HTTPResumableUploadHandler(context: resumable) { uploadChannel in
                        try? uploadChannel.pipeline.syncOperations.addHandler(
                            RequestHandler(listener: context, protocolName: "HTTP/1.1", connection: channel)
                        )
                    }
                )
            }
        }
        let origin = "http://127.0.0.1:\(channel.localAddress!.port!)"
        uploadContext.withLockedValue { $0 = HTTPResumableUploadContext(origin: origin, path: "/resumable/") }
        return channel
    }
}
