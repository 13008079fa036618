public import FerryCore
public import Foundation
import Synchronization

/// What one task's transfer carries through the engine without threading it through every call: its
/// priority (for connection slots), its bandwidth throttle, and the record of its transactions (metrics, SPEC S3).
///
/// Bound with ``TransferContext/$current`` around a transfer; child tasks (deadline races) inherit it.
public final class TransferContext: Sendable {
    /// The context of the transfer running on this task, if any.
    @TaskLocal public static var current: TransferContext?

    /// The task's priority, 0...1 (URLSessionTask.priority); higher gets a connection slot first.
    public let priority: Float
    /// Whether the session's cookies go with the task's requests and its responses' cookies are kept
    /// (``Request/httpShouldHandleCookies``).
    public let handlesCookies: Bool
    /// How the task uses the session's HTTP cache; nil: not at all (download and upload tasks, as with
    /// URLSession; an unsafe request still invalidates what it changes).
    public let cache: CacheUse?
    /// How the task's bytes are shaped (its own bandwidth limit and its share of a pool); nil: not at all.
    public let throttle: TaskThrottle?
    /// Whether the transactions are recorded: false when nobody will read the task's metrics (an async
    /// call without a delegate), which spares every exchange building them.
    public let recordsTransactions: Bool
    /// The transfer's own cancellation, when it runs in its caller's task (see ``TransferCancellation``);
    /// nil: Swift task cancellation alone.
    public let cancellation: TransferCancellation?
    /// Hears each informational (1xx other than 101) answer a request of the transfer gets before its
    /// final one: the request's URL, the status and the fields. Called on a connection's event loop, in
    /// the order they arrive and before the final answer is handed over; it must not block.
    public typealias InformationalResponses = @Sendable (_ url: URL, _ status: Int, _ headers: Headers) -> Void
    /// Where the transfer's informational answers go (URLSession's didReceiveInformationalResponse); nil:
    /// they are read and dropped.
    public let informationalResponses: InformationalResponses?
    private let transactions = Mutex<[TransactionMetrics]>([])

    /// A context for a task with `priority`.
    public init(
        priority: Float = 0.5,
        handlesCookies: Bool = true,
        cache: CacheUse? = nil,
        throttle: TaskThrottle? = nil,
        recordsTransactions: Bool = true,
        cancellation: TransferCancellation? = nil,
        informationalResponses: InformationalResponses? = nil
    ) {
        self.cancellation = cancellation
        self.informationalResponses = informationalResponses
        self.throttle = throttle
        self.recordsTransactions = recordsTransactions
        self.priority = priority
        self.handlesCookies = handlesCookies
        self.cache = cache
    }

    /// The transactions so far, in the order their requests were sent.
    public var recordedTransactions: [TransactionMetrics] { transactions.withLock { $0 } }

    /// Starts a transaction and returns its index.
    func begin(_ metrics: TransactionMetrics) -> Int {
        transactions.withLock { list in
            list.append(metrics)
            return list.count - 1
        }
    }

    /// Changes the transaction at `index`.
    func update(_ index: Int, _ change: (inout TransactionMetrics) -> Void) {
        transactions.withLock { list in
            guard list.indices.contains(index) else { return }
            change(&list[index])
        }
    }
}

/// How one task uses the HTTP cache.
public struct CacheUse: Sendable {
    /// The request's cache policy.
    public var policy: Request.CachePolicy
    /// Asked before a response is stored (the willCacheResponse delegate): the entry to store, changed
    /// or not, or nil to store nothing. Nil: store as it is.
    public var willStore: (@Sendable (CachedResponse) async -> CachedResponse?)?

    /// A use under `policy`.
    public init(policy: Request.CachePolicy, willStore: (@Sendable (CachedResponse) async -> CachedResponse?)? = nil) {
        self.policy = policy
        self.willStore = willStore
    }
}
