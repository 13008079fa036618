public import FerryCore
public import FerryEngine
public import Foundation

/// How a daemon runs: where it keeps things and its limits. Defaults suit a desktop; tests shorten the
/// intervals.
public struct DaemonConfiguration: Sendable {
    /// Socket and state paths.
    public var paths: DaemonPaths
    /// Transfers running at once, daemon-wide (S6.10); 0 runs none (the API conformance check: fuzzed
    /// tasks must not reach out).
    public var maximumConcurrentTransfers = 6
    /// Connections to one origin at once, daemon-wide: all tasks' together, a segmented download's
    /// included (it uses up to its ``Request/connections`` of them).
    public var maximumConnectionsPerHost = 8
    /// Bytes between durable checkpoints of a download (D1).
    public var checkpointBytes: Int64 = 8 << 20
    /// Seconds between durable checkpoints of a download (D1).
    public var checkpointSeconds = 1.0
    /// Automatic retries of network errors (S6.10).
    public var retry = RetryPolicy()
    /// A transfer slower than this many bytes a second over ``throughputWindow`` seconds is stopped
    /// with an error (S6.10); 0 turns the floor off.
    public var throughputFloor: Int64 = 1024
    /// See ``throughputFloor``.
    public var throughputWindow = 60.0
    /// Progress events a second, at most, per task.
    public var progressRate = 10.0
    /// Seconds between heartbeats on an attached stream (how fast a vanished client is noticed).
    public var heartbeatInterval = 1.0
    /// The first delay of the relaunch limiter (S6.6); each launch doubles it.
    public var launchBaseDelay = 1.0
    /// The largest relaunch delay.
    public var launchMaximumDelay = 300.0
    /// The resource timeout of a background transfer: 7 days, as Apple's.
    public var resourceTimeout = 7 * 24 * 3600.0
    /// The idle timeout of a background transfer's reads.
    public var requestTimeout = 60.0

    /// Finished tasks are removed this many seconds after they finished, with their events and leftover
    /// files (housekeeping); nil keeps them until `ferry clean`. Default: 7 days.
    public var pruneAfter: Double? = 7 * 24 * 3600
    /// The most tasks one session holds, finished ones included until they are removed: past it a
    /// creation is refused with 409 (a client creating tasks without end once grew ferryd to 500 MB and
    /// its status page to 27 s). Default 10,000; `FERRY_MAX_TASKS_PER_SESSION`.
    public var maximumTasksPerSession = 10_000
    /// What listings hide (credentials, query tokens): `GET /v1/tasks` unless asked with
    /// `?secrets=show`, the status page, the log. `FERRY_REDACT_QUERY` names the query parameters.
    public var redaction = Redaction()
    /// Seconds between housekeeping rounds (pruning, then compacting the database).
    public var housekeepingInterval = 3600.0
    /// A loopback address (`127.0.0.1:9466`, `[::1]:9466`) where `/metrics` is served over TCP too, for
    /// a Prometheus server; nil: on the control socket only.
    public var metricsAddress: String?

    /// A listening socket inherited from systemd (`ferryd.socket`, ``SocketActivation``): the control API
    /// is served on it (and the socket path is systemd's, left alone); nil: ferryd binds the path itself.
    public var inheritedSocket: Int32?

    /// Where the network's state comes from; nil: the machine (``SystemNetworkSource`` with the state
    /// directory's settings file, and `FERRY_NETWORK_STATE`'s fake state when that is set).
    public var networkSource: (any NetworkStateSource)?
    /// Seconds between readings of the network's state.
    public var networkPollInterval = 0.5

    /// The wall clock and waiting on it: times in the store, tasks' resource deadlines, retry backoff
    /// (tests move a clock of their own).
    public var clock: any DaemonClock = SystemDaemonClock()

    /// A configuration with `paths` and the defaults.
    public init(paths: DaemonPaths) {
        self.paths = paths
    }
}
