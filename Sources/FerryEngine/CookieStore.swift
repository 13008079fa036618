public import FerryCore
public import Foundation
import Synchronization

/// A cookie store a session uses, in the spirit of HTTPCookieStorage: a ``CookieJar`` under a lock, the
/// cookies for a URL, set, delete, all, and change notifications. ``SessionTransport`` applies it on
/// every exchange, so every hop of a redirect sends and stores cookies.
///
/// A store made with ``init(file:acceptPolicy:publicSuffixes:clock:)`` keeps its persistent cookies in
/// a file that several processes share: every change takes the file's lock, reads what the others
/// wrote, applies itself and writes the result back, so no process loses another's cookies; a reader
/// picks up other processes' changes when the file changes. Session cookies stay in the process.
/// ``shared``, the store of default sessions, is the user's file; a store made with ``init()`` lives in
/// memory only (ephemeral sessions: nothing on disk).
public final class CookieStore: Sendable {
    /// The store default sessions share: the user's file (`$XDG_DATA_HOME/ferry/cookies.json`, default
    /// `~/.local/share/ferry/cookies.json`), in memory when no home directory can be found.
    public static let shared: CookieStore = {
        guard let file = defaultFile(ProcessInfo.processInfo.environment) else { return CookieStore() }
        return CookieStore(file: file)
    }()

    /// Where the user's cookie file is for `environment`.
    public static func defaultFile(_ environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/ferry/cookies.json" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/share/ferry/cookies.json"
    }

    private struct State {
        var jar: CookieJar
        var observers: [UInt64: @Sendable () -> Void] = [:]
        var nextObserver: UInt64 = 0
        /// The file's identity when it was last read: a change by another process shows in it.
        var seen: LockedJSONFile<Cookie>.Stamp?
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Date
    private let file: LockedJSONFile<Cookie>?

    /// An empty store in memory.
    public init(
        acceptPolicy: CookieJar.AcceptPolicy = .always,
        publicSuffixes: PublicSuffixList = .system,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        state = Mutex(State(jar: CookieJar(acceptPolicy: acceptPolicy, publicSuffixes: publicSuffixes)))
        self.clock = clock
        self.file = nil
    }

    /// A store whose persistent cookies live in `file` (created with its directory when first written,
    /// mode 0600), shared with every process that uses the same file.
    public init(
        file: String,
        acceptPolicy: CookieJar.AcceptPolicy = .always,
        publicSuffixes: PublicSuffixList = .system,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        state = Mutex(State(jar: CookieJar(acceptPolicy: acceptPolicy, publicSuffixes: publicSuffixes)))
        self.clock = clock
        self.file = LockedJSONFile(path: file)
    }

    /// The file persistent cookies live in, if any.
    public var path: String? { file?.path }

    /// Which cookies it takes.
    public var acceptPolicy: CookieJar.AcceptPolicy {
        get { state.withLock { $0.jar.acceptPolicy } }
        set { state.withLock { $0.jar.acceptPolicy = newValue } }
    }

    /// Every cookie.
    public var cookies: [Cookie] {
        let now = clock()
        return state.withLock { state in
            refresh(&state, now: now)
            return state.jar.all
        }
    }

    /// The cookies a request to `url` would carry now.
    public func cookies(for url: URL) -> [Cookie] {
        let now = clock()
        return state.withLock { state in
            refresh(&state, now: now)
            return state.jar.cookies(for: url, now: now)
        }
    }

    /// Stores `cookie`, replacing the one with its name, domain and path.
    public func setCookie(_ cookie: Cookie) {
        let now = clock()
        change(now: now) { $0.set(cookie, now: now) }
    }

    /// Removes the cookie with `cookie`'s name, domain and path.
    public func deleteCookie(_ cookie: Cookie) {
        change(now: clock()) { $0.remove(cookie) }
    }

    /// Removes every cookie.
    public func removeAll() {
        change(now: clock()) { $0.removeAll() }
    }

    /// Adds the cookies of a Netscape cookie file (as `curl -c` and `wget --save-cookies` write), those
    /// not expired.
    /// - Throws: ``FerryError`` (``FerryError/Code/noPermissionsToReadFile``) when the file cannot be read.
    public func load(netscapeFile path: String) throws {
        guard let text = UserNamedFile.text(of: path) else {
            throw FerryError(.noPermissionsToReadFile, "cannot read the cookie file \(path)")
        }
        for cookie in NetscapeCookieFile.parse(text, now: clock()) { setCookie(cookie) }
    }

    /// Writes every cookie, session cookies included (as curl does), to a Netscape cookie file.
    /// - Throws: ``FerryError`` (``FerryError/Code/cannotWriteToFile``) saying why it could not.
    public func write(netscapeFile path: String) throws {
        do {
            // As the user named it: `-c /dev/null` is written through, a link followed (UserNamedFile).
            try UserNamedFile.replace(path, with: Data(NetscapeCookieFile.serialize(cookies).utf8))
        } catch {
            throw FerryError(.cannotWriteToFile, "cannot write the cookie jar \(path): \(error.message)")
        }
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
        return state.withLock { state in
            refresh(&state, now: now)
            return state.jar.cookieHeader(for: url, now: now)
        }
    }

    /// Takes the `Set-Cookie` fields of a response to `url`.
    public func receive(_ headers: Headers, from url: URL, mainDocument: URL? = nil) {
        guard headers["set-cookie"] != nil else { return }
        let now = clock()
        change(now: now) { $0.receive(headers, from: url, now: now, mainDocument: mainDocument) }
    }

    /// Applies `body` to the cookies; with a file, under its lock to what the file holds now plus this
    /// process's session cookies, and writes the persistent ones back.
    private func change(now: Date, _ body: (inout CookieJar) -> Void) {
        let observers = state.withLock { state -> [@Sendable () -> Void] in
            let before = state.jar
            if let file {
                do {
                    try file.update { stored, stamp in
                        var jar = state.jar
                        jar.replacePersistent(with: stored, now: now)
                        body(&jar)
                        state.jar = jar
                        return jar.all.filter { !$0.isSessionOnly }
                    } written: { state.seen = $0 }
                } catch {
                    // The file cannot be used (a read-only home): the change holds for this process.
                    body(&state.jar)
                }
            } else {
                body(&state.jar)
            }
            return state.jar == before ? [] : Array(state.observers.values)
        }
        for observer in observers { observer() }
    }

    /// Takes other processes' changes when the file has changed since this process last read it.
    private func refresh(_ state: inout State, now: Date) {
        guard let file else { return }
        let stamp = file.stamp()
        guard stamp != state.seen else { return }
        guard let stored = try? file.read() else { return }
        state.jar.replacePersistent(with: stored, now: now)
        state.seen = stamp
    }
}
