public import FerryCore
import Foundation
import Synchronization

/// The network's state at one moment, with what detection alone said of metered.
public struct NetworkReading: Sendable, Hashable {
    /// The state tasks are judged by (the overrides applied).
    public var state: NetworkState
    /// NetworkManager's metered value; nil when it does not answer.
    public var detectedMetered: Bool?
    /// The persisted settings the state was read with.
    public var settings: NetworkSettings

    public init(state: NetworkState, detectedMetered: Bool? = nil, settings: NetworkSettings = NetworkSettings()) {
        self.state = state
        self.detectedMetered = detectedMetered
        self.settings = settings
    }
}

/// Where a ``NetworkMonitor`` reads the state from: the machine (``SystemNetworkSource``), or a fake.
public protocol NetworkStateSource: Sendable {
    /// The state now.
    func read() async -> NetworkReading
}

/// The machine's network and power, as Linux exposes them:
/// - online: a default route in `/proc/net/route` or `/proc/net/ipv6_route`;
/// - metered: NetworkManager's `Metered` property over D-Bus (`busctl`, at most once a second, only
///   when NetworkManager runs), unless the settings file overrides it;
/// - constrained: the settings file only (Linux has no Low Data Mode);
/// - power: `/sys/class/power_supply`.
///
/// `stateFile` (ferryd's `FERRY_NETWORK_STATE`) replaces detection with a JSON ``NetworkState``, read on
/// every poll: a fake network for tests and for machines whose detection is wrong; the settings file's
/// overrides still apply on top.
public final class SystemNetworkSource: NetworkStateSource {
    private let settingsFile: String?
    private let stateFile: String?
    private let root: String
    private let networkManagerQuery: [String]?
    private let networkManager = Mutex<(at: Double, value: Bool?)?>(nil)

    /// The command that asks NetworkManager for its `Metered` property over D-Bus, when NetworkManager
    /// runs here (`/run/NetworkManager`) and `busctl` exists; nil otherwise.
    public static var busctlQuery: [String]? {
        guard FileManager.default.fileExists(atPath: "/run/NetworkManager"),
            let busctl = ["/usr/bin/busctl", "/bin/busctl"].first(where: FileManager.default.isExecutableFile(atPath:))
        else { return nil }
        return [
            busctl, "--system", "get-property", "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager",
            "org.freedesktop.NetworkManager", "Metered",
        ]
    }

    /// A source reading `settingsFile` for the overrides (nil: none), `stateFile` instead of detection
    /// when given, `/proc` and `/sys` under `root` ("" for the machine's own), and NetworkManager's
    /// metered value from what `networkManagerQuery` prints (default ``busctlQuery``; nil: not asked).
    public init(
        settingsFile: String?,
        stateFile: String? = nil,
        root: String = "",
        networkManagerQuery: [String]? = SystemNetworkSource.busctlQuery
    ) {
        self.settingsFile = settingsFile
        self.stateFile = stateFile
        self.root = root
        self.networkManagerQuery = networkManagerQuery
    }

    public func read() async -> NetworkReading {
        let settings = Self.settings(at: settingsFile)
        var state: NetworkState
        var detectedMetered: Bool?
        if let stateFile {
            state =
                (try? JSONDecoder().decode(NetworkState.self, from: Data(contentsOf: URL(fileURLWithPath: stateFile))))
                ?? NetworkState(isOnline: false)
            detectedMetered = state.isMetered
        } else {
            let path = NetworkProbe.defaultRoutePath(ipv4: ProcFile.read(root + "/proc/net/route"), ipv6: ProcFile.read(root + "/proc/net/ipv6_route"))
            state = NetworkState(isOnline: path != nil, power: NetworkProbe.power(powerSupplies()))
            state.path = path
            detectedMetered = settings.metered == .auto ? await networkManagerMetered() : nil
            state.isMetered = detectedMetered ?? false
        }
        state.isMetered = settings.metered.resolve(state.isMetered)
        state.isConstrained = settings.constrained.resolve(stateFile == nil ? false : state.isConstrained)
        return NetworkReading(state: state, detectedMetered: detectedMetered, settings: settings)
    }

    /// The settings in `path`; the defaults when it is absent or unreadable.
    public static func settings(at path: String?) -> NetworkSettings {
        guard let path, let data = FileManager.default.contents(atPath: path),
            let settings = try? JSONDecoder().decode(NetworkSettings.self, from: data)
        else { return NetworkSettings() }
        return settings
    }

    /// Writes `settings` to `path` whole (a temporary file renamed over it: a reader never sees half).
    public static func write(_ settings: NetworkSettings, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(settings).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    private func powerSupplies() -> [NetworkProbe.PowerSupply] {
        let directory = root + "/sys/class/power_supply"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.compactMap { name in
            func file(_ field: String) -> String? {
                try? String(contentsOfFile: "\(directory)/\(name)/\(field)", encoding: .utf8)
            }
            guard let type = file("type") else { return nil }
            return NetworkProbe.PowerSupply(type: type, online: file("online"), status: file("status"))
        }
    }

    /// NetworkManager's Metered property, asked at most once a second; nil when it does not run.
    private func networkManagerMetered() async -> Bool? {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        if let cached = networkManager.withLock({ $0 }), now - cached.at < 1 { return cached.value }
        var value: Bool?
        if let query = networkManagerQuery, let executable = query.first,
            let output = await Self.output(of: executable, Array(query.dropFirst()))
        {
            value = NetworkProbe.networkManagerMetered(output)
        }
        networkManager.withLock { $0 = (now, value) }
        return value
    }

    /// What `executable` prints, or nil when it fails or takes more than 2 s.
    private static func output(of executable: String, _ arguments: [String]) async -> String? {
        await HelperProgram.output(of: executable, arguments, timeout: 2)
    }
}

/// Watches the network's state: reads its source every `interval` (half a second by default: changes are
/// seen within a second) and tells its subscribers when the state changes. ferryd keeps one; in-process
/// sessions share ``shared``, started on first use.
public final class NetworkMonitor: Sendable {
    private struct State {
        var current: NetworkReading?
        var subscribers: [Int: AsyncStream<NetworkReading>.Continuation] = [:]
        var nextSubscriber = 0
        var poller: Task<Void, Never>?
    }

    private let source: any NetworkStateSource
    private let interval: Double
    private let state = Mutex(State())

    /// A monitor of `source`, polling every `interval` seconds once started.
    public init(source: any NetworkStateSource, interval: Double = 0.5) {
        self.source = source
        self.interval = interval
    }

    /// The process's monitor for in-process sessions: the machine's state with the overrides of
    /// `FERRY_HOME`'s (or the default state directory's) settings file.
    public static let shared: NetworkMonitor = {
        let paths = try? DaemonPaths(environment: ProcessInfo.processInfo.environment)
        return NetworkMonitor(
            source: SystemNetworkSource(
                settingsFile: paths?.networkSettingsFile,
                stateFile: ProcessInfo.processInfo.environment["FERRY_NETWORK_STATE"]
            )
        )
    }()

    /// The state now: the last reading while polling, else a fresh one.
    public func current() async -> NetworkReading {
        if let last = state.withLock({ $0.poller == nil ? nil : $0.current }) { return last }
        return await refresh()
    }

    /// Reads the source now and tells the subscribers when the state changed.
    @discardableResult
    public func refresh() async -> NetworkReading {
        let reading = await source.read()
        let subscribers = state.withLock { state -> [AsyncStream<NetworkReading>.Continuation] in
            guard state.current != reading else { return [] }
            state.current = reading
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(reading) }
        return reading
    }

    /// Starts polling (once; later calls do nothing).
    public func start() {
        state.withLock { state in
            guard state.poller == nil else { return }
            let interval = self.interval
            state.poller = Task.detached { [weak self] in
                while !Task.isCancelled {
                    guard let self else { return }
                    await self.refresh()
                    try? await Task.sleep(for: .seconds(interval))
                }
            }
        }
    }

    /// Stops polling and ends every subscription.
    public func stop() {
        let (poller, subscribers) = state.withLock { state in
            defer {
                state.poller = nil
                state.subscribers = [:]
            }
            return (state.poller, Array(state.subscribers.values))
        }
        poller?.cancel()
        for subscriber in subscribers { subscriber.finish() }
    }

    /// The readings from now on, each change once (the current one first, when there is one).
    public func changes() -> AsyncStream<NetworkReading> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkReading.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            if let current = state.current { continuation.yield(current) }
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Waits until `allowed` holds for the state (checked at once, then at every change).
    /// - Throws: CancellationError when the waiting task is cancelled.
    public func wait(until allowed: @Sendable (NetworkState) -> Bool) async throws {
        start()
        for await reading in changes() {
            if allowed(reading.state) { return }
        }
        try Task.checkCancellation()
    }
}
