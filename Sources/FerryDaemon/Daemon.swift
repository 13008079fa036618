import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Hummingbird
public import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// ferryd as a library: takes the state directory's lock, opens the store, recovers (D4), serves the
/// control API on the unix socket and runs transfers until SIGTERM or SIGINT, then stops every transfer
/// at a checkpoint and exits.
public enum Daemon {
    /// Runs a daemon until it is told to stop.
    /// - Throws: ``FerryError`` when it cannot start (another daemon holds the lock, a directory cannot
    ///   be made, the database cannot be opened).
    public static func run(_ configuration: DaemonConfiguration, logger: Logger) async throws {
        let paths = configuration.paths
        // Everything the daemon creates is the user's alone: database, partial and delivered files.
        umask(0o077)
        let socketDirectory = (paths.socket as NSString).deletingLastPathComponent
        for directory in [paths.stateDirectory, paths.partialDirectory, paths.deliveryDirectory, socketDirectory] {
            try makePrivateDirectory(directory)
        }
        let lock = try DaemonLock(path: paths.lockFile)
        defer { withExtendedLifetime(lock) {} }
        // The lock is ours, so a socket file left behind is stale.
        unlink(paths.socket)

        let store: FerryStore
        do {
            store = try FerryStore(path: paths.database, clock: { [clock = configuration.clock] in clock.now() })
        } catch let error as FerryStoreError {
            throw FerryError(.cannotCreateFile, error.message)
        }
        let recovered = try store.recoverAfterRestart()
        if !recovered.isEmpty { logger.info("recovered \(recovered.count) interrupted transfer(s); they resume") }

        var options = StandardTransport.Options()
        options.idleTimeout = configuration.requestTimeout
        options.maximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        // Tasks without recorded settings use ferryd's environment: no proxy variables (a task records its
        // creator's), the system's trust roots.
        var plain = options
        plain.proxies = ProxySettings()
        let transports = TransportCache(
            base: SessionTransport(
                try StandardTransport(options: plain),
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost
            ),
            options: options
        )
        let hub = EventHub()
        let launcher = Launcher(store: store, hub: hub, configuration: configuration, logger: logger)
        let scheduler = Scheduler(
            store: store,
            hub: hub,
            configuration: configuration,
            transports: transports,
            logger: logger,
            onEventsJournaled: { await launcher.eventsJournaled($0) }
        )
        let routes = ControlRoutes(
            store: store,
            hub: hub,
            scheduler: scheduler,
            launcher: launcher,
            configuration: configuration,
            logger: logger
        )
        let app = Application(
            router: routes.router(),
            configuration: ApplicationConfiguration(address: .unixDomainSocket(path: paths.socket)),
            services: [SchedulerService(scheduler: scheduler, hub: hub, window: configuration.throughputWindow)],
            onServerRunning: { _ in
                chmod(paths.socket, 0o600)
                logger.info("ferryd \(FerryVersion.current) serving on \(paths.socket) (pid \(getpid()))")
                await scheduler.poke()
            },
            logger: logger
        )
        try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
        await transports.shutdown()
        unlink(paths.socket)
        logger.info("ferryd stopped")
    }

    private static func makePrivateDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            chmod(path, 0o700)
        } catch {
            throw FerryError(.cannotCreateFile, "cannot create the directory \(path): \(error)")
        }
    }
}

/// Runs the scheduler's periodic work (the throughput floor) and, on graceful shutdown, stops every
/// transfer at a checkpoint and closes attached streams.
struct SchedulerService: Service {
    let scheduler: Scheduler
    let hub: EventHub
    let window: Double

    func run() async throws {
        let interval = Duration.milliseconds(Int64(max(0.05, window) * 1000))
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
            await scheduler.checkThroughput()
        }
        await scheduler.stopAll()
        hub.broadcast(.close)
    }
}
