import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Metrics
import Prometheus
import Synchronization

/// ferryd's metrics (issue "Operations"): counters and histograms recorded as things happen, through
/// swift-metrics, and gauges read when `/metrics` is scraped (tasks by state, event backlogs, the
/// transfer rate, the store's size). One Prometheus registry holds them all, the engine's transport
/// counters included; ``exposition(store:rate:)`` renders it in the Prometheus text format.
final class DaemonMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    /// The factory the daemon's and the engine's swift-metrics instruments are made by.
    let factory: CatalogMetricsFactory
    /// The engine's transport counters, recorded into this registry (one set, shared by every transport).
    let transport: TransportMetrics
    private let checkpointTimer: Metrics.Timer
    /// Scrape-time gauges by name and labels, so that a label set that disappeared (a session's last
    /// task pruned) is unregistered instead of repeating its last value.
    private let sampled = Mutex<[String: Prometheus.Gauge]>([:])

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        factory = CatalogMetricsFactory(registry: registry)
        transport = TransportMetrics(factory: factory)
        checkpointTimer = Metrics.Timer(label: MetricCatalog.checkpointSync, factory: factory)
        // Unlabelled families exist before their first event, so that a scrape shows them at zero (the
        // transport's byte counters are made with it; a labelled family appears with its first label
        // set: the registry refuses to mix the two).
        _ = Metrics.Counter(label: MetricCatalog.pruned, factory: factory)
    }


    /// An attempt failed with `error` and the task will try again.
    func retried(_ error: FerryError) {
        Metrics.Counter(label: MetricCatalog.retries, dimensions: [("reason", error.code.name)], factory: factory).increment()
    }

    /// A task completed with `error` (not a cancellation).
    func failed(_ error: FerryError) {
        Metrics.Counter(label: MetricCatalog.failures, dimensions: [("reason", error.code.name)], factory: factory).increment()
    }

    /// A durable checkpoint took `duration`.
    func checkpointSynchronized(_ duration: Duration) {
        checkpointTimer.recordNanoseconds(
            Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        )
    }

    /// The daemon launched `session`'s client; the limiter now waits `delay` seconds before the next.
    func launched(session: String, nextDelay delay: Double) {
        Metrics.Counter(label: MetricCatalog.launches, dimensions: [("session", session)], factory: factory).increment()
        Metrics.Gauge(label: MetricCatalog.launchDelay, dimensions: [("session", session)], factory: factory).record(delay)
    }

    /// Housekeeping removed `count` finished tasks.
    func pruned(_ count: Int) {
        Metrics.Counter(label: MetricCatalog.pruned, factory: factory).increment(by: Int64(count))
    }

    /// What the scheduler knows that the store does not: the network, the pending tasks it holds back by
    /// reason, and the daemon-wide bandwidth limit.
    struct NetworkSample: Sendable {
        var state: NetworkState
        var waiting: [String: Int]
        var bandwidthLimit: Int64?
    }

    /// The registry in the Prometheus text format, after the scrape-time gauges are read: task counts
    /// and event backlogs from `store`, its size, `rate` (the running transfers' bytes a second) and
    /// `network`.
    func exposition(store: FerryStore, rate: Double, network: NetworkSample? = nil) throws -> String {
        var values: [(name: String, labels: [(String, String)], value: Double)] = []
        if let network {
            for reason in NetworkPolicy.WaitReason.allCases {
                values.append((MetricCatalog.waiting, [("reason", reason.rawValue)], Double(network.waiting[reason.rawValue] ?? 0)))
            }
            let conditions = [
                ("online", network.state.isOnline), ("metered", network.state.isMetered),
                ("constrained", network.state.isConstrained), ("on_battery", network.state.power == .battery),
            ]
            for (condition, holds) in conditions {
                values.append((MetricCatalog.network, [("condition", condition)], holds ? 1 : 0))
            }
            values.append((MetricCatalog.bandwidthLimit, [], Double(network.bandwidthLimit ?? 0)))
        }
        // Every state appears for every session that has tasks, 0 included, so that a rate() or an
        // alert on a state does not see gaps.
        let counts = try store.taskCounts()
        for session in Set(counts.map(\.session)).sorted() {
            for state in [StoredTask.State.pending, .running, .suspended, .completed] {
                let count = counts.first { $0.session == session && $0.state == state }?.count ?? 0
                values.append((MetricCatalog.tasks, [("session", session), ("state", state.rawValue)], Double(count)))
            }
        }
        for backlog in try store.eventBacklog() {
            values.append((MetricCatalog.eventBacklog, [("session", backlog.session)], Double(backlog.count)))
        }
        values.append((MetricCatalog.transferRate, [], rate))
        values.append((MetricCatalog.storeSize, [], Double(store.sizeOnDisk())))
        sampled.withLock { gauges in
            var seen = Set<String>()
            for value in values {
                let key = value.name + "|" + value.labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
                seen.insert(key)
                let gauge =
                    gauges[key]
                    ?? registry.makeGauge(
                        descriptor: MetricNameDescriptor(metricName: value.name, helpText: MetricCatalog.help[value.name]),
                        labels: value.labels
                    )
                gauges[key] = gauge
                gauge.set(to: value.value)
            }
            for (key, gauge) in gauges where !seen.contains(key) {
                registry.unregisterGauge(gauge)
                gauges[key] = nil
            }
        }
        return registry.emitToString()
    }
}
