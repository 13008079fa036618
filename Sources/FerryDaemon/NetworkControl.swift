import FerryCore
import FerryEngine
import Foundation
import Logging

/// ferryd's side of the network: watches its state (``NetworkMonitor``) and tells the ``Scheduler`` of
/// every change, and owns the persisted settings (`ferry daemon network`, `ferry limit --global`): each
/// change is written to the settings file before it is answered, and applied at once.
actor NetworkControl {
    let monitor: NetworkMonitor
    let scheduler: Scheduler
    private let settingsFile: String
    private let logger: Logger
    private var watcher: Task<Void, Never>?

    init(configuration: DaemonConfiguration, scheduler: Scheduler, logger: Logger) {
        settingsFile = configuration.paths.networkSettingsFile
        let source =
            configuration.networkSource
            ?? SystemNetworkSource(
                settingsFile: settingsFile,
                stateFile: ProcessInfo.processInfo.environment["FERRY_NETWORK_STATE"]
            )
        monitor = NetworkMonitor(source: source, interval: configuration.networkPollInterval)
        self.scheduler = scheduler
        self.logger = logger
    }

    /// Reads the state and the settings once (the scheduler knows both before it starts anything), then
    /// keeps watching.
    func start() async {
        let reading = await monitor.refresh()
        scheduler.pool.setLimit(reading.settings.globalBandwidthLimit)
        await scheduler.networkChanged(reading.state)
        monitor.start()
        let (monitor, scheduler) = (self.monitor, self.scheduler)
        let logger = logger
        watcher = Task {
            var path = reading.state.path
            for await reading in monitor.changes() {
                await scheduler.networkChanged(reading.state)
                // Another network while online: HTTP/3 connections migrate (RFC 9000 §9), their
                // transfers going on without a new request.
                if let now = reading.state.path, now != path {
                    if path != nil {
                        logger.info("network path changed (\(path ?? "") to \(now)): moving HTTP/3 connections")
                        await scheduler.transports.networkPathChanged()
                    }
                    path = now
                }
            }
        }
    }

    func stop() {
        watcher?.cancel()
        monitor.stop()
    }

    /// The network now, and the settings.
    func report() async -> ControlAPI.NetworkReport {
        let reading = await monitor.refresh()
        await scheduler.networkChanged(reading.state)
        return ControlAPI.NetworkReport(
            state: reading.state,
            detectedMetered: reading.detectedMetered,
            settings: reading.settings
        )
    }

    /// Changes the overrides: persisted, then applied (running transfers the new state forbids stop at a
    /// checkpoint before this returns).
    func update(_ update: ControlAPI.NetworkUpdate) async throws -> ControlAPI.NetworkReport {
        var settings = SystemNetworkSource.settings(at: settingsFile)
        if let metered = update.metered { settings.metered = metered }
        if let constrained = update.constrained { settings.constrained = constrained }
        try write(settings)
        logger.info("network settings: metered \(settings.metered.rawValue), constrained \(settings.constrained.rawValue)")
        return await report()
    }

    /// The daemon-wide bandwidth limit.
    func bandwidth() -> ControlAPI.BandwidthLimit {
        ControlAPI.BandwidthLimit(bytesPerSecond: SystemNetworkSource.settings(at: settingsFile).globalBandwidthLimit)
    }

    /// Changes the daemon-wide bandwidth limit (nil or 0: none): persisted, then applied to the running
    /// transfers at once.
    func setBandwidth(_ limit: ControlAPI.BandwidthLimit) throws -> ControlAPI.BandwidthLimit {
        let bytes = limit.bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        var settings = SystemNetworkSource.settings(at: settingsFile)
        settings.globalBandwidthLimit = bytes
        try write(settings)
        scheduler.pool.setLimit(bytes)
        logger.info("daemon-wide bandwidth limit: \(bytes.map { "\($0) B/s" } ?? "none")")
        return ControlAPI.BandwidthLimit(bytesPerSecond: bytes)
    }

    private func write(_ settings: NetworkSettings) throws {
        do {
            try SystemNetworkSource.write(settings, to: settingsFile)
        } catch {
            throw FerryError(.cannotWriteToFile, "cannot write the network settings to \(settingsFile): \(error)")
        }
    }
}
