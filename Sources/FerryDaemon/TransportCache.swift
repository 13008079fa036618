import FerryCore
import FerryEngine
import Foundation
import Logging
import NIOCore
import Synchronization

/// ferryd's transports: one for tasks that recorded no connection settings, and one per distinct
/// ``ConnectionSettings`` that tasks recorded (their creator's CA, proxy, TLS versions), made on first
/// use and kept until the daemon stops, so tasks with the same settings share connections.
///
/// Each has its own per-host limit (``DaemonConfiguration/maximumConnectionsPerHost``).
final class TransportCache: Sendable {
    private let base: any HTTPTransport
    private let options: TransportOptions
    private let made = Mutex<[ConnectionSettings: any HTTPTransport]>([:])
    private let metrics: TransportMetrics

    /// `base` carries tasks without settings; `options` gives the others their timeouts and limits, and
    /// `metrics` their counters.
    init(base: any HTTPTransport, options: TransportOptions, metrics: TransportMetrics = TransportMetrics()) {
        self.base = base
        self.options = options
        self.metrics = metrics
    }

    /// The transport for a task's settings.
    /// - Throws: ``FerryError`` when the settings cannot be used (checked at creation, so only a store
    ///   written by another version gets here).
    func transport(for settings: ConnectionSettings?) throws -> any HTTPTransport {
        guard let settings else { return base }
        if let existing = made.withLock({ $0[settings] }) { return existing }
        var specific = TransportOptions(settings)
        specific.idleTimeout = options.idleTimeout
        specific.maximumConnectionsPerHost = options.maximumConnectionsPerHost
        specific.altServices = options.altServices
        let transport = SessionTransport(
            try StandardTransport(options: specific),
            maximumConnectionsPerHost: options.maximumConnectionsPerHost,
            cookies: try settings.cookies.map(Self.cookieStore),
            metrics: metrics,
            logger: Logger(label: "ferryd.transport")
        )
        return made.withLock { cache in
            if let raced = cache[settings] { return raced }
            cache[settings] = transport
            return transport
        }
    }

    /// The store cookie settings describe: the shared file's, or one in memory, loaded with the
    /// Netscape file `load` names.
    /// - Throws: ``FerryError`` when `load` cannot be read.
    static func cookieStore(_ settings: CookieSettings) throws -> CookieStore {
        let store =
            settings.file.map { CookieStore(file: $0, acceptPolicy: settings.acceptPolicy) }
            ?? CookieStore(acceptPolicy: settings.acceptPolicy)
        if let load = settings.load { try store.load(netscapeFile: load) }
        return store
    }

    /// Closes every transport.
    /// The machine moved to another network: every transport's connections that can follow do.
    func networkPathChanged() async {
        for transport in [base] + made.withLock({ Array($0.values) }) {
            await (transport as? any NetworkPathFollowing)?.networkPathChanged()
        }
    }

    func shutdown() async {
        try? await base.shutdown()
        for transport in made.withLock({ Array($0.values) }) { try? await transport.shutdown() }
    }
}
