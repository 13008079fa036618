import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Launches a session's registered command when it has events and no client (S6.5), once per batch:
/// when none of its tasks is pending or running any more. The relaunch limiter (S6.6) spaces launches
/// out; its state is kept in the store so that a restart does not reset it.
actor Launcher {
    let store: FerryStore
    let hub: EventHub
    let configuration: DaemonConfiguration
    let logger: Logger
    let metrics: DaemonMetrics
    private let now: @Sendable () -> Double
    private var waiting: Set<String> = []
    private var launchedNotAttached: Set<String> = []
    /// Sessions force-quit by the user (S6.4 scenario 5): no launch until a client attaches by itself.
    private var suppressed: Set<String> = []

    init(
        store: FerryStore,
        hub: EventHub,
        configuration: DaemonConfiguration,
        logger: Logger,
        metrics: DaemonMetrics = DaemonMetrics(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.metrics = metrics
        self.store = store
        self.hub = hub
        self.configuration = configuration
        self.logger = logger
        self.now = now
    }

    /// Events may have been journaled for `session`: launch its client if the rules say so.
    func eventsJournaled(_ session: String) {
        guard shouldLaunch(session), !waiting.contains(session) else { return }
        let limiter = self.limiter(session)
        let at = limiter.earliestLaunch(now: now())
        let delay = at - now()
        if delay <= 0 {
            launch(session)
        } else {
            waiting.insert(session)
            logger.info("launch of '\(session)' waits \(delay) s (relaunch limiter)")
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                self.fireWaiting(session)
            }
        }
    }

    /// The user force-quit the session's client: it is not launched until it attaches by itself.
    func suppressUntilAttach(_ session: String) {
        suppressed.insert(session)
    }

    /// A client attached: if the daemon did not launch it, the limiter starts over (S6.6).
    func clientAttached(_ session: String) {
        suppressed.remove(session)
        if launchedNotAttached.remove(session) == nil {
            var limiter = self.limiter(session)
            limiter.clientAttachedByItself()
            save(limiter, session)
        }
    }

    private func fireWaiting(_ session: String) {
        waiting.remove(session)
        if shouldLaunch(session) { launch(session) }
    }

    private func shouldLaunch(_ session: String) -> Bool {
        guard !hub.isAttached(session), !suppressed.contains(session) else { return false }
        // A client that is alive but detached gets its events when it attaches again: no launch (S6.4 2).
        if let pid = hub.lastClient(of: session), pid > 0, kill(pid, 0) == 0 { return false }
        do {
            guard try store.launchCommand(session: session) != nil, !(try store.events(session: session).isEmpty)
            else { return false }
            return try store.tasks(session: session).allSatisfy { $0.state == .completed || $0.state == .suspended }
        } catch {
            logger.error("cannot decide on a launch of '\(session)': \(error)")
            return false
        }
    }

    private func launch(_ session: String) {
        guard let command = try? store.launchCommand(session: session) else { return }
        var limiter = self.limiter(session)
        limiter.launched(at: now())
        save(limiter, session)
        launchedNotAttached.insert(session)
        var environment = ProcessInfo.processInfo.environment
        environment["FERRY_SESSION"] = session
        environment["FERRY_LAUNCHED_BY_DAEMON"] = "1"
        let logger = self.logger
        do {
            let pid = try DetachedProcess.spawn(
                "/bin/sh",
                arguments: ["-c", command],
                environment: environment,
                log: configuration.paths.outputFile,
                // In ferryd's own directory, not wherever the client that started ferryd happened to
                // be: what the command writes by a relative name stays there (a fuzzed registration
                // once left a file in the working directory of the shell that started ferryd).
                directory: configuration.paths.stateDirectory
            ) { status in
                logger.info("launch command of '\(session)' exited with status \(status)")
            }
            logger.info("launched '\(command)' for '\(session)' (pid \(pid); next launch waits \(limiter.delay) s)")
            metrics.launched(session: session, nextDelay: limiter.delay)
        } catch {
            logger.error("cannot run the launch command of '\(session)': \(error)")
        }
    }

    private func limiter(_ session: String) -> LaunchLimiter {
        let saved = try? store.launchLimiter(session: session)
        return LaunchLimiter(
            baseDelay: configuration.launchBaseDelay,
            maximumDelay: configuration.launchMaximumDelay,
            delay: saved?.delaySeconds ?? 0,
            lastLaunch: saved?.lastLaunchAt?.timeIntervalSince1970
        )
    }

    private func save(_ limiter: LaunchLimiter, _ session: String) {
        try? store.setLaunchLimiter(
            session: session,
            delaySeconds: limiter.delay,
            lastLaunchAt: limiter.lastLaunch.map { Date(timeIntervalSince1970: $0) }
        )
    }
}
