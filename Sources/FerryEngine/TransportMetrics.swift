import FerryCore
public import Metrics
import Synchronization

/// What a ``SessionTransport`` counts, through swift-metrics: body bytes each way, responses by protocol
/// and status class, and exchanges that failed before a response, by reason. The factory is the
/// process's `MetricsSystem` by default (nothing is recorded until a program bootstraps one); ferryd
/// passes its own, which it exports in the Prometheus format.
public final class TransportMetrics: Sendable {
    /// The labels, as they appear in exports.
    public enum Label {
        public static let receivedBytes = "ferry_received_bytes_total"
        public static let sentBytes = "ferry_sent_bytes_total"
        public static let responses = "ferry_http_responses_total"
        public static let exchangeErrors = "ferry_http_errors_total"
    }

    private let factory: any MetricsFactory
    let received: Counter
    let sent: Counter
    /// The response counters by protocol and status class, made on first use: a response costs a
    /// lookup (by a key that builds no string), not a counter made through the factory.
    private let responses = Mutex<[ResponseKey: Counter]>([:])

    private struct ResponseKey: Hashable {
        let protocolName: String
        let statusClass: Int
    }

    /// Metrics made by `factory` (default: `MetricsSystem.factory`, read when first used).
    public init(factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        received = Counter(label: Label.receivedBytes, factory: factory)
        sent = Counter(label: Label.sentBytes, factory: factory)
    }

    /// A response head arrived over `protocolName` with `status`.
    func response(protocolName: String, status: Int) {
        let key = ResponseKey(protocolName: protocolName, statusClass: status / 100)
        let counter = responses.withLock { counters in
            if let counter = counters[key] { return counter }
            let made = Counter(
                label: Label.responses,
                dimensions: [("protocol", protocolName), ("status", "\(key.statusClass)xx")],
                factory: factory
            )
            counters[key] = made
            return made
        }
        counter.increment()
    }

    /// An exchange failed before a response head arrived.
    func failed(_ error: any Error) {
        let reason = (error as? FerryError)?.code.name ?? "other"
        Counter(label: Label.exchangeErrors, dimensions: [("reason", reason)], factory: factory).increment()
    }
}
