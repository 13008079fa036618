// Ferry is the public API: Session, configuration, tasks, delegates and async/await. In-process sessions
// run on FerryEngine; background sessions go through ferryd (docs/ARCHITECTURE.md).
@_exported public import FerryCore
public import FerryEngine

/// The cookie store a session uses (``Session/cookies``).
public typealias CookieStore = FerryEngine.CookieStore
/// The credential store a session uses (``Session/credentials``).
public typealias CredentialStore = FerryEngine.CredentialStore
/// The HTTP cache a session uses (``Session/cache``).
public typealias ResponseCache = FerryEngine.ResponseCache
