/// The bookkeeping of ``ConnectionPool`` as a value, with no I/O and no lock: which connections are open,
/// which are idle (HTTP/1.1) or shared (HTTP/2), which keys have a first connection under way, and what a
/// request claiming a connection gets. The pool applies its answers under its lock; tests drive it with
/// plain objects (async-http-client's `HTTPConnectionPool+StateMachine.swift` is the model).
///
/// Generic over the two kinds of connection and over what a request waits on, so that it needs
/// neither a channel nor an event loop.
struct ConnectionPoolStateMachine<HTTP1: AnyObject, HTTP2: AnyObject, Waiter> {
    /// How a request gets a connection.
    enum Claim {
        /// An idle HTTP/1.1 connection, taken out of the idle list.
        case idle(HTTP1)
        /// A stream reserved on a shared HTTP/2 connection.
        case shared(HTTP2)
        /// Another request is connecting to the key and may find `h2`: claim again once `Waiter` is done.
        case wait(Waiter)
        /// Connect. With `first`, this request is the one the others wait for: it calls
        /// ``settle(_:first:speaksHTTP1:)`` when its connection is open or has failed.
        case connect(first: Waiter?)
    }

    /// Idle HTTP/1.1 connections kept per key; more are closed.
    let maximumIdlePerKey: Int
    /// Idle HTTP/1.1 connections by key, most recently used last.
    private var idle: [PoolKey: [HTTP1]] = [:]
    private var open: [ObjectIdentifier: HTTP1] = [:]
    /// HTTP/2 connections that take new streams, by key.
    private var shared: [PoolKey: [HTTP2]] = [:]
    private var openShared: [ObjectIdentifier: HTTP2] = [:]
    /// Keys with a first connection under way whose protocol may be `h2`.
    private var connecting: [PoolKey: Waiter] = [:]
    /// Keys whose server chose HTTP/1.1 (no waiting for a shared connection there).
    private var speaksHTTP1: Set<PoolKey> = []
    private(set) var isShutDown = false

    init(maximumIdlePerKey: Int) {
        self.maximumIdlePerKey = maximumIdlePerKey
    }

    /// A connection for a request to `key`. `mayShare`: the request may go over HTTP/2 (https, and `h2`
    /// offered). `isOpen` tells an idle connection that closed under the pool from one that can be used;
    /// `reserve` takes a stream on a shared one if it has room; `makeWaiter` makes what the others wait
    /// on when this request becomes the first.
    mutating func claim(
        _ key: PoolKey,
        mayShare: Bool,
        isOpen: (HTTP1) -> Bool,
        reserve: (HTTP2) -> Bool,
        makeWaiter: () -> Waiter
    ) -> Claim {
        if mayShare {
            for connection in shared[key] ?? [] where reserve(connection) {
                return .shared(connection)
            }
        }
        while let connection = idle[key]?.popLast() {
            if isOpen(connection) { return .idle(connection) }
        }
        guard mayShare, !speaksHTTP1.contains(key), !isShutDown else { return .connect(first: nil) }
        if let pending = connecting[key] { return .wait(pending) }
        let first = makeWaiter()
        connecting[key] = first
        return .connect(first: first)
    }

    /// The first connection to `key` is open (its protocol known) or failed. `isFirst` picks out the
    /// waiter the claim gave (a shut-down pool may have forgotten it, and a later first taken its place).
    mutating func settle(_ key: PoolKey, first isFirst: (Waiter) -> Bool, speaksHTTP1 http1: Bool) {
        if let pending = connecting[key], isFirst(pending) { connecting[key] = nil }
        if http1 { speaksHTTP1.insert(key) }
    }

    /// Whether requests to `origin` go over a shared HTTP/2 connection now, directly or through a proxy.
    func isShared(origin: PoolKey.Origin) -> Bool {
        shared.contains { key, connections in !connections.isEmpty && key.origin == origin }
    }

    /// A new HTTP/1.1 connection for `key`: returns false when the pool is shut down (close it). One that
    /// closed before this (`isOpen` false) is not recorded.
    mutating func opened(_ connection: HTTP1, isOpen: Bool) -> Bool {
        guard !isShutDown else { return false }
        if isOpen { open[ObjectIdentifier(connection)] = connection }
        return true
    }

    /// A new HTTP/2 connection for `key`, shared with other requests to it unless it closed or got
    /// GOAWAY already (`takesStreams` false): returns false when the pool is shut down (close it).
    mutating func opened(_ connection: HTTP2, key: PoolKey, takesStreams: Bool) -> Bool {
        guard !isShutDown else { return false }
        if takesStreams {
            openShared[ObjectIdentifier(connection)] = connection
            shared[key, default: []].append(connection)
        }
        return true
    }

    /// An HTTP/1.1 connection's exchange ended with it reusable: returns false when it is not kept
    /// (the pool is shut down, or `key` has as many idle as it keeps): close it.
    mutating func offer(_ connection: HTTP1, key: PoolKey) -> Bool {
        guard !isShutDown, idle[key, default: []].count < maximumIdlePerKey else { return false }
        idle[key, default: []].append(connection)
        return true
    }

    /// An HTTP/1.1 connection closed.
    mutating func closed(_ connection: HTTP1, key: PoolKey) {
        open[ObjectIdentifier(connection)] = nil
        idle[key]?.removeAll { $0 === connection }
    }

    /// An HTTP/2 connection got GOAWAY or closed: its open streams go on, new ones go elsewhere. It is
    /// forgotten once closed (`isOpen` false).
    mutating func retire(_ connection: HTTP2, key: PoolKey, isOpen: Bool) {
        shared[key]?.removeAll { $0 === connection }
        if !isOpen { openShared[ObjectIdentifier(connection)] = nil }
    }

    /// Refuses new connections from now on; returns every open connection (to close) and every waiter
    /// (to release, so that its requests claim again and find the pool shut).
    mutating func shutDown() -> (http1: [HTTP1], http2: [HTTP2], waiters: [Waiter]) {
        isShutDown = true
        idle = [:]
        shared = [:]
        let waiters = Array(connecting.values)
        connecting = [:]
        return (Array(open.values), Array(openShared.values), waiters)
    }

    /// Idle HTTP/1.1 connections for `key` (tests).
    func idleCount(_ key: PoolKey) -> Int { idle[key]?.count ?? 0 }
}

extension ConnectionPoolStateMachine: Sendable where HTTP1: Sendable, HTTP2: Sendable, Waiter: Sendable {}
