import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Hummingbird
public import Logging
import ServiceLifecycle
import Synchronization

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
        try makeDirectories(paths)
        let lock = try DaemonLock(path: paths.lockFile)
        defer { withExtendedLifetime(lock) {} }
        // With socket activation the path is systemd's socket and Hummingbird serves a private one behind
        // a relay (SocketRelay); otherwise the lock is ours, so a socket file left behind is stale.
        let served = configuration.inheritedSocket == nil ? paths.socket : paths.stateDirectory + "/ferryd.relay.sock"
        unlink(served)

        let store = try openStore(configuration, logger: logger)
        let metrics = DaemonMetrics()
        let transports = try makeTransports(configuration, metrics: metrics)
        let hub = EventHub()
        let launcher = Launcher(store: store, hub: hub, configuration: configuration, logger: logger, metrics: metrics)
        let scheduler = Scheduler(
            store: store,
            hub: hub,
            configuration: configuration,
            transports: transports,
            logger: logger,
            metrics: metrics,
            onEventsJournaled: { await launcher.eventsJournaled($0) }
        )
        let network = NetworkControl(configuration: configuration, scheduler: scheduler, logger: logger)
        var pageRoutes = StatusPageRoutes(store: store, scheduler: scheduler)
        pageRoutes.redaction = configuration.redaction
        let statusPage = StatusPageServer(routes: pageRoutes, logger: logger)
        let routes = ControlRoutes(
            store: store,
            hub: hub,
            scheduler: scheduler,
            launcher: launcher,
            configuration: configuration,
            logger: logger,
            metrics: metrics,
            statusPage: statusPage,
            network: network
        )
        let housekeeper = Housekeeper(store: store, configuration: configuration, metrics: metrics, logger: logger)
        var services: [any Service] = [
            SchedulerService(scheduler: scheduler, hub: hub, window: configuration.throughputWindow),
            HousekeepingService(housekeeper: housekeeper, interval: configuration.housekeepingInterval),
        ]
        if let address = configuration.metricsAddress {
            services.append(try MetricsEndpoint.application(address: address, routes: routes, logger: logger))
        }
        let relay = Mutex<SocketRelay?>(nil)
        let inherited = configuration.inheritedSocket
        let app = Application(
            router: routes.router(),
            // Each connection's peer is checked (SO_PEERCRED) before its request reaches a route.
            server: .http1(configuration: .init(additionalChannelHandlers: [PeerCredentialCheck()])),
            configuration: ApplicationConfiguration(address: .unixDomainSocket(path: served)),
            services: services,
            onServerRunning: { _ in
                chmod(served, 0o600)
                if let inherited {
                    do {
                        let started = try await SocketRelay.start(descriptor: inherited, target: served)
                        relay.withLock { $0 = started }
                    } catch {
                        logger.critical("cannot serve the socket systemd passed (LISTEN_FDS): \(error)")
                    }
                }
                logger.info(
                    "ferryd \(FerryVersion.current) serving on \(paths.socket)\(inherited == nil ? "" : " (socket activation)") (pid \(getpid()))"
                )
                // The network is known before anything starts (a task it does not allow waits).
                await network.start()
                await scheduler.poke()
            },
            logger: logger
        )
        try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
        await network.stop()
        await relay.withLock { $0 }?.close()
        await statusPage.stop()
        await transports.shutdown()
        unlink(served)
        logger.info("ferryd stopped")
    }

    /// Makes the daemon's directories with mode 0700 when missing; one already there is never chmodded,
    /// and used only when it is this user's alone (PrivateDirectory says why). Everything the daemon
    /// creates from now on is the user's alone: database, partial and delivered files.
    private static func makeDirectories(_ paths: DaemonPaths) throws {
        umask(0o077)
        let socketDirectory = (paths.socket as NSString).deletingLastPathComponent
        for (directory, purpose) in [
            (paths.stateDirectory, "ferryd's state"), (paths.partialDirectory, "partial downloads"),
            (paths.deliveryDirectory, "finished downloads"), (socketDirectory, "ferryd's control socket"),
        ] {
            try PrivateDirectory.make(directory, purpose: purpose)
        }
    }

    /// Opens the database and recovers the transfers the last run left running.
    private static func openStore(_ configuration: DaemonConfiguration, logger: Logger) throws -> FerryStore {
        let store: FerryStore
        do {
            store = try FerryStore(path: configuration.paths.database, clock: { [clock = configuration.clock] in clock.now() })
        } catch let error as FerryStoreError {
            throw FerryError(.cannotCreateFile, error.message)
        }
        let recovered = try store.recoverAfterRestart()
        if !recovered.isEmpty { logger.info("recovered \(recovered.count) interrupted transfer(s); they resume") }
        return store
    }

    /// The transports tasks run on. Tasks without recorded settings use ferryd's environment: no proxy
    /// variables (a task records its creator's), the system's trust roots.
    private static func makeTransports(_ configuration: DaemonConfiguration, metrics: DaemonMetrics) throws -> TransportCache {
        var options = StandardTransport.Options()
        options.idleTimeout = configuration.requestTimeout
        options.maximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        // Alt-Svc answers kept across restarts (curl's format): a task's origin that offered HTTP/3
        // is fetched over it (TCP when QUIC does not connect).
        // (A file that does not parse is started afresh: the first change overwrites it.)
        let altServicesFile = configuration.paths.stateDirectory + "/alt-svc.txt"
        options.altServices = (try? AltServiceStore(file: altServicesFile)) ?? AltServiceStore(replacing: altServicesFile)
        var plain = options
        plain.proxies = ProxySettings()
        return TransportCache(
            base: SessionTransport(
                try StandardTransport(options: plain),
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                metrics: metrics.transport,
                logger: Logger(label: "ferryd.transport")
            ),
            options: options,
            metrics: metrics.transport
        )
    }
}

/// Runs a housekeeping round (``Housekeeper``) every `interval` seconds, the first a minute after the
/// start, until shutdown.
struct HousekeepingService: Service {
    let housekeeper: Housekeeper
    let interval: Double

    func run() async throws {
        var wait = min(60, interval)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let pause = Duration.milliseconds(Int64(wait * 1000))
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
            } catch {
                break
            }
            housekeeper.round()
            wait = interval
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
