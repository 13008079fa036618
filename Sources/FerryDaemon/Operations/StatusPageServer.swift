import FerryCore
import Foundation
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import ServiceLifecycle

/// The status page (`ferry ui`): served by ferryd on 127.0.0.1, on a port the system picks, only while
/// asked (from ``start()`` to ``stop()``), to requests that carry its random token.
///
/// One server at a time: a second ``start()`` returns the running one's address and token.
actor StatusPageServer {
    private let routes: StatusPageRoutes
    private let logger: Logger
    private var running: (page: ControlAPI.StatusPage, group: ServiceGroup, task: Task<Void, any Error>)?
    /// How long a stop waits for open pages' requests to end before it cancels them.
    static let stopBound: Duration = .seconds(5)

    init(routes: StatusPageRoutes, logger: Logger) {
        self.routes = routes
        self.logger = logger
    }

    /// Starts the page unless it runs; its address and token.
    func start() async throws -> ControlAPI.StatusPage {
        if let running { return running.page }
        let token = Self.makeToken()
        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int?.self)
        let app = Application(
            router: routes.router(token: token),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port)
                portContinuation.finish()
            },
            logger: logger
        )
        // Run in a group of its own so that stop() can shut it down gracefully: cancelling the server
        // made Hummingbird log two errors ("Waiting on child channel: CancellationError()", "Server
        // shutdown error: Already closed") on every `ferry ui --stop`. The event stream ends on graceful
        // shutdown (StatusPageRoutes); a request still open after stopBound is cancelled.
        var groupConfiguration = ServiceGroupConfiguration(services: [.init(service: app)], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = Self.stopBound
        let group = ServiceGroup(configuration: groupConfiguration)
        let task = Task {
            defer { portContinuation.finish() }
            try await group.run()
        }
        var iterator = portStream.makeAsyncIterator()
        guard let port = await iterator.next() ?? nil else {
            task.cancel()
            throw FerryError(.cannotConnectToHost, "the status page could not listen on 127.0.0.1")
        }
        let page = ControlAPI.StatusPage(url: "http://127.0.0.1:\(port)/?token=\(token)", token: token)
        running = (page, group, task)
        logger.info("status page on http://127.0.0.1:\(port)/")
        return page
    }

    /// Stops the page, if it runs; its token is no longer accepted anywhere.
    func stop() async {
        guard let running else { return }
        self.running = nil
        await running.group.triggerGracefulShutdown()
        _ = await running.task.result
        logger.info("status page stopped")
    }

    /// 32 random bytes, hex.
    private static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
