public import FerryCore
public import Foundation
import Synchronization

/// A cookie store a session uses, in the spirit of HTTPCookieStorage: a ``CookieJar`` under a lock, the
/// cookies for a URL, set, delete, all, and change notifications. ``SessionTransport`` applies it on
/// every exchange, so every hop of a redirect sends and stores cookies.
///
/// In memory: ``shared`` lives as long as the process (default sessions share it), a new one is
/// private to its session (ephemeral sessions).
public final class CookieStore: Sendable {
    /// The store default sessions share in this process.
    public static let shared = CookieStore()

    private struct State {
        var jar: CookieJar
        var observers: [UInt64: @Sendable () -> Void] = [:]
        var nextObserver: UInt64 = 0
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Date

    /// An empty store.
    public init(
        acceptPolicy: CookieJar.AcceptPolicy = .always,
        publicSuffixes: PublicSuffixList = .system,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        state = Mutex(State(jar: CookieJar(acceptPolicy: acceptPolicy, publicSuffixes: publicSuffixes)))
        self.clock = clock
    }

    /// Which cookies it takes.
    public var acceptPolicy: CookieJar.AcceptPolicy {
        get { state.withLock { $0.jar.acceptPolicy } }
        set { state.withLock { $0.jar.acceptPolicy = newValue } }
    }

    /// Every cookie.
    public var cookies: [Cookie] { state.withLock { $0.jar.all } }

    /// The cookies a request to `url` would carry now.
    public func cookies(for url: URL) -> [Cookie] {
        let now = clock()
        return state.withLock { $0.jar.cookies(for: url, now: now) }
    }

    /// Stores `cookie`, replacing the one with its name, domain and path.
    public func setCookie(_ cookie: Cookie) {
        let now = clock()
        change { $0.set(cookie, now: now) }
    }

    /// Removes the cookie with `cookie`'s name, domain and path.
    public func deleteCookie(_ cookie: Cookie) {
        change { $0.remove(cookie) }
    }

    /// Removes every cookie.
    public func removeAll() {
        change { $0.removeAll() }
    }

    /// Calls `observer` after every change (cookies received, set or deleted), on the changing thread.
    /// - Returns: what ``removeObserver(_:)`` takes.
    public func addObserver(_ observer: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
    }

    /// Stops calling an observer.
    public func removeObserver(_ token: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: token) }
    }

    /// The `Cookie` header for a request to `url`, or nil.
    public func cookieHeader(for url: URL) -> String? {
        let now = clock()
        return state.withLock { $0.jar.cookieHeader(for: url, now: now) }
    }

    /// Takes the `Set-Cookie` fields of a response to `url`.
    public func receive(_ headers: Headers, from url: URL, mainDocument: URL? = nil) {
        guard headers["set-cookie"] != nil else { return }
        let now = clock()
        change { $0.receive(headers, from: url, now: now, mainDocument: mainDocument) }
    }

    private func change(_ body: (inout CookieJar) -> Void) {
        let observers = state.withLock { state -> [@Sendable () -> Void] in
            let before = state.jar
            body(&state.jar)
            return state.jar == before ? [] : Array(state.observers.values)
        }
        for observer in observers { observer() }
    }
}
