import FerryEngine

/// Every metric ferryd exports, with its help text (docs/OPERATIONS.md lists the same). A metric made
/// through swift-metrics carries no help; ``CatalogMetricsFactory`` adds it from here, so that each
/// family in `/metrics` has a `# HELP` line.
enum MetricCatalog {
    static let tasks = "ferry_tasks"
    static let transferRate = "ferry_transfer_rate_bytes_per_second"
    static let retries = "ferry_retries_total"
    static let failures = "ferry_failures_total"
    static let checkpointSync = "ferry_checkpoint_sync_seconds"
    static let eventBacklog = "ferry_event_backlog"
    static let launches = "ferry_launches_total"
    static let launchDelay = "ferry_launch_delay_seconds"
    static let storeSize = "ferry_store_bytes"
    static let pruned = "ferry_pruned_tasks_total"
    static let waiting = "ferry_tasks_waiting"
    static let network = "ferry_network"
    static let bandwidthLimit = "ferry_bandwidth_limit_bytes_per_second"

    static let help: [String: String] = [
        tasks: "Background tasks by session and state (pending, running, suspended, completed).",
        transferRate: "Bytes a second moved by the transfers running now, all together.",
        retries: "Attempts that failed and will be tried again, by reason (the error code's name).",
        failures: "Tasks that completed with an error, by reason (cancellations are not failures).",
        checkpointSync: "Time to make a download checkpoint durable: the partial file's fdatasync and its database record.",
        eventBacklog: "Events journaled for a session and not yet acknowledged by its client.",
        launches: "Client programs launched because their session had events and no client.",
        launchDelay: "The relaunch limiter's current delay before a session's next launch, in seconds.",
        storeSize: "Bytes the state database takes on disk (main file, write-ahead log and shared memory).",
        pruned: "Finished tasks removed by housekeeping or ferry clean.",
        waiting: "Pending tasks the network does not allow now, by reason (offline, metered network, constrained network, on battery).",
        network: "The network as ferryd judges tasks by: 1 when the condition holds (online, metered, constrained, on_battery).",
        bandwidthLimit: "The daemon-wide bandwidth limit, bytes a second; 0: none.",
        TransportMetrics.Label.receivedBytes: "Response body bytes received, all transfers together.",
        TransportMetrics.Label.sentBytes: "Request body bytes sent, all transfers together.",
        TransportMetrics.Label.responses: "Response heads received, by protocol and status class.",
        TransportMetrics.Label.exchangeErrors: "Exchanges that failed before a response head arrived, by reason.",
    ]

    /// Checkpoint sync buckets: a page-cache sync takes microseconds, a loaded disk seconds.
    static let checkpointBuckets: [Duration] = [
        .microseconds(100), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
        .seconds(5),
    ]
}
