import NIOConcurrencyHelpers

/// Counters a test can assert on, as one consistent snapshot.
public struct TestServerCounters: Sendable, Hashable, Codable {
    /// TCP connections accepted, over all listeners.
    public var connectionsAccepted: Int = 0
    /// TCP connections open now, over all listeners.
    public var connectionsOpen: Int = 0
    /// The most connections that were open at once: a client's per-host limit is judged by it (a client
    /// may replace a connection it closed, so ``connectionsAccepted`` can be higher).
    public var mostConnectionsAtOnce: Int = 0
    /// Requests whose head was received (HTTP/2 streams count one each).
    public var requestsServed: Int = 0
    /// Requests per path (the path without its query).
    public var requestsByPath: [String: Int] = [:]
    /// Response body bytes written per path (what left the server, before any cut-off by a fault).
    public var bodyBytesSentByPath: [String: Int64] = [:]
    /// Requests per HTTP version seen (`HTTP/1.1`, `HTTP/2`).
    public var requestsByProtocol: [String: Int] = [:]
    /// Request body bytes that arrived per path, on the wire (HTTP/1.1 listeners; for resumable uploads
    /// the appends' paths, `/resumable/…`): what clients sent, counted before anything refuses it.
    public var requestBodyBytesByPath: [String: Int64] = [:]
    /// Requests per method as they arrived on the wire (HTTP/1.1 listeners), including those a protocol
    /// layer answers itself (the resumable-upload listener's HEAD, PATCH, DELETE, OPTIONS).
    public var wireRequestsByMethod: [String: Int] = [:]

    /// The requests served for `path`.
    public func requests(path: String) -> Int { requestsByPath[path] ?? 0 }
    /// The body bytes sent for `path`.
    public func bodyBytesSent(path: String) -> Int64 { bodyBytesSentByPath[path] ?? 0 }
    /// The request body bytes that arrived for paths starting with `prefix`.
    public func requestBodyBytes(pathPrefix prefix: String) -> Int64 {
        requestBodyBytesByPath.filter { $0.key.hasPrefix(prefix) }.values.reduce(0, +)
    }
}

/// An upload the sink kept because the request asked for it (`keep=KEY`).
public struct StoredUpload: Sendable, Hashable {
    /// The request method.
    public var method: String
    /// The Content-Type of the request, if any.
    public var contentType: String?
    /// The body as received (for a resumable upload: the assembled body).
    public var body: [UInt8]
}

/// A tus 1.0 upload (`/tus/`): its declared length and the bytes received so far.
struct TusUpload: Sendable {
    var length: Int64
    var bytes: [UInt8] = []
    /// Created with `Upload-Concat: partial`: a piece of a later final upload.
    var isPartial: Bool

    var offset: Int64 { Int64(bytes.count) }
    var isComplete: Bool { offset == length }
}

/// The server's shared, thread-safe state: counters, per-key request counts, kept uploads, digest nonces.
final class TestServerState: Sendable {
    private struct Storage {
        var counters = TestServerCounters()
        var keyCounts: [String: Int] = [:]
        var uploads: [String: StoredUpload] = [:]
        var nonces: Set<String> = []
        var tusUploads: [String: TusUpload] = [:]
        var tusNext = 0
        /// `gate=` names: open ones, and what waits for the closed ones.
        var openGates: Set<String> = []
        var gateWaiters: [String: [@Sendable () -> Void]] = [:]
    }

    private let storage = NIOLockedValueBox(Storage())

    func connectionAccepted() {
        storage.withLockedValue {
            $0.counters.connectionsAccepted += 1
            $0.counters.connectionsOpen += 1
            $0.counters.mostConnectionsAtOnce = max($0.counters.mostConnectionsAtOnce, $0.counters.connectionsOpen)
        }
    }

    func connectionClosed() {
        storage.withLockedValue { $0.counters.connectionsOpen -= 1 }
    }

    func requestReceived(path: String, protocolName: String) {
        storage.withLockedValue {
            $0.counters.requestsServed += 1
            $0.counters.requestsByPath[path, default: 0] += 1
            $0.counters.requestsByProtocol[protocolName, default: 0] += 1
        }
    }

    func wireRequest(method: String) {
        storage.withLockedValue { $0.counters.wireRequestsByMethod[method, default: 0] += 1 }
    }

    func requestBodyBytesReceived(_ count: Int, path: String) {
        storage.withLockedValue { $0.counters.requestBodyBytesByPath[path, default: 0] += Int64(count) }
    }

    func bodyBytesSent(_ count: Int, path: String) {
        storage.withLockedValue { $0.counters.bodyBytesSentByPath[path, default: 0] += Int64(count) }
    }

    /// Counts one more request for `key`; returns how many came before it (0 for the first).
    func nextRequestIndex(key: String) -> Int {
        storage.withLockedValue { storage in
            let index = storage.keyCounts[key, default: 0]
            storage.keyCounts[key] = index + 1
            return index
        }
    }

    func store(_ upload: StoredUpload, key: String) {
        storage.withLockedValue { $0.uploads[key] = upload }
    }

    func upload(key: String) -> StoredUpload? {
        storage.withLockedValue { $0.uploads[key] }
    }

    /// Changes the tus uploads (``Router`` `/tus/`) under the lock; `change` returns the response.
    func withTusUploads<Value>(_ change: (inout [String: TusUpload], () -> String) -> Value) -> Value {
        storage.withLockedValue { storage in
            var uploads = storage.tusUploads
            var next = storage.tusNext
            let value = change(&uploads) {
                next += 1
                return "u\(next)"
            }
            storage.tusUploads = uploads
            storage.tusNext = next
            return value
        }
    }

    /// Calls `body` once the gate named `gate` is open: now, or when ``openGate(_:)`` opens it.
    func whenGateOpens(_ gate: String, _ body: @escaping @Sendable () -> Void) {
        let isOpen = storage.withLockedValue { storage -> Bool in
            if storage.openGates.contains(gate) { return true }
            storage.gateWaiters[gate, default: []].append(body)
            return false
        }
        if isOpen { body() }
    }

    /// Opens a gate for good: what waits goes on, later requests pass at once.
    func openGate(_ gate: String) {
        let waiters = storage.withLockedValue { storage -> [@Sendable () -> Void] in
            storage.openGates.insert(gate)
            return storage.gateWaiters.removeValue(forKey: gate) ?? []
        }
        for waiter in waiters { waiter() }
    }

    func issueNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        let nonce = String(generator.next(), radix: 16) + String(generator.next(), radix: 16)
        storage.withLockedValue { _ = $0.nonces.insert(nonce) }
        return nonce
    }

    func isKnownNonce(_ nonce: String) -> Bool {
        storage.withLockedValue { $0.nonces.contains(nonce) }
    }

    var counters: TestServerCounters {
        storage.withLockedValue { $0.counters }
    }

    func resetCounters() {
        storage.withLockedValue { $0.counters = TestServerCounters() }
    }
}
