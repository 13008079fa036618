import CoreMetrics
import Prometheus

/// swift-metrics over a Prometheus registry, like swift-prometheus's own `PrometheusMetricsFactory`, with
/// one difference: each metric gets the help text ``MetricCatalog`` has for its label, where that
/// factory gives none (promtool's lint asks for HELP on every family).
struct CatalogMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, helpText: MetricCatalog.help[label])
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: descriptor(label),
            labels: dimensions,
            buckets: [0.001, 0.01, 0.1, 1, 10, 100, 1000]
        )
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let buckets =
            label == MetricCatalog.checkpointSync
            ? MetricCatalog.checkpointBuckets
            : [.milliseconds(1), .milliseconds(10), .milliseconds(100), .seconds(1), .seconds(10)]
        return registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: buckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? Histogram<Double> { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? Histogram<Duration> { registry.unregisterDurationHistogram(histogram) }
    }
}
