import FerryCore
import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Apple's `URLCredentialStorage` as a view of Ferry's credential stores: what a session answers
/// challenges with is what this object holds.
///
/// - ``shared`` is Ferry's per-user store (permanent credentials in `$XDG_DATA_HOME/ferry/credentials.json`),
///   which default sessions use.
/// - An ephemeral configuration has a store of its own in memory, shared by its copies; `init()` makes
///   another such store.
///
/// Ferry keeps one credential per protection space: setting a credential for another user of the same
/// space replaces the first (Apple keeps one per user and answers with the default one).
open class URLCredentialStorage: NSObject, @unchecked Sendable {
    /// The Ferry store this object shows.
    let store: CredentialStore

    init(store: CredentialStore) {
        self.store = store
        super.init()
    }

    /// A store of its own, in memory: give it to a configuration (`urlCredentialStorage`) and the
    /// sessions made from it answer challenges with what it holds.
    public override convenience init() {
        self.init(store: CredentialStore())
    }

    private static let sharedStorage = URLCredentialStorage(store: .shared)

    /// Ferry's per-user credential store.
    open class var shared: URLCredentialStorage { sharedStorage }

    /// The credentials for `space`, by user.
    open func credentials(for space: URLProtectionSpace) -> [String: URLCredential]? {
        guard let credential = store.credential(for: Self.ferry(space)) else { return nil }
        return [credential.user: Self.apple(credential)]
    }

    /// Every credential, by space and user.
    open var allCredentials: [URLProtectionSpace: [String: URLCredential]] {
        var all: [URLProtectionSpace: [String: URLCredential]] = [:]
        for entry in store.all { all[Self.apple(entry.space), default: [:]][entry.credential.user] = Self.apple(entry.credential) }
        return all
    }

    /// Keeps `credential` for `space` as its persistence says (`.none`: not kept).
    open func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard let user = credential.user, let password = credential.password else { return }
        store.set(Credential(user: user, password: password), for: Self.ferry(space), persistence: Self.persistence(credential))
    }

    /// Removes `credential` from `space`.
    open func remove(_ credential: URLCredential, for space: URLProtectionSpace) {
        remove(credential, for: space, options: nil)
    }

    /// Removes `credential` from `space` (the options are Apple's iCloud synchronisation: none on Linux).
    open func remove(_ credential: URLCredential, for space: URLProtectionSpace, options: [String: AnyObject]? = [:]) {
        let ferrySpace = Self.ferry(space)
        guard store.credential(for: ferrySpace)?.user == credential.user else { return }
        store.remove(for: ferrySpace)
    }

    /// The credential a challenge for `space` is answered with.
    open func defaultCredential(for space: URLProtectionSpace) -> URLCredential? {
        store.credential(for: Self.ferry(space)).map(Self.apple)
    }

    /// Makes `credential` the one `space` is answered with.
    open func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        set(credential, for: space)
    }

    /// `credentials(for:)`, for a task.
    open func getCredentials(
        for protectionSpace: URLProtectionSpace,
        task: URLSessionTask,
        completionHandler: @escaping @Sendable ([String: URLCredential]?) -> Void
    ) {
        completionHandler(credentials(for: protectionSpace))
    }

    /// `set(_:for:)`, for a task.
    open func set(_ credential: URLCredential, for protectionSpace: URLProtectionSpace, task: URLSessionTask) {
        set(credential, for: protectionSpace)
    }

    /// `remove(_:for:options:)`, for a task.
    open func remove(_ credential: URLCredential, for protectionSpace: URLProtectionSpace, options: [String: AnyObject]? = [:], task: URLSessionTask) {
        remove(credential, for: protectionSpace, options: options)
    }

    /// `defaultCredential(for:)`, for a task.
    open func getDefaultCredential(
        for space: URLProtectionSpace,
        task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLCredential?) -> Void
    ) {
        completionHandler(defaultCredential(for: space))
    }

    /// `setDefaultCredential(_:for:)`, for a task.
    open func setDefaultCredential(_ credential: URLCredential, for protectionSpace: URLProtectionSpace, task: URLSessionTask) {
        setDefaultCredential(credential, for: protectionSpace)
    }

    // MARK: Conversions

    /// Ferry's space: host, port, realm and the authentication scheme (`basic`, `digest`; `socks5` for a
    /// SOCKS proxy). Ferry does not tell spaces apart by URL scheme.
    static func ferry(_ space: URLProtectionSpace) -> ProtectionSpace {
        let scheme: String
        if space.isProxy(), space.proxyType == NSURLProtectionSpaceSOCKSProxy {
            scheme = "socks5"
        } else if space.authenticationMethod == NSURLAuthenticationMethodHTTPDigest {
            scheme = "digest"
        } else {
            scheme = "basic"
        }
        return ProtectionSpace(host: space.host, port: space.port, scheme: scheme, realm: space.realm, isProxy: space.isProxy())
    }

    static func apple(_ space: ProtectionSpace) -> URLProtectionSpace {
        let method = space.scheme == "digest" ? NSURLAuthenticationMethodHTTPDigest : NSURLAuthenticationMethodHTTPBasic
        if space.isProxy {
            let type = space.scheme == "socks5" ? NSURLProtectionSpaceSOCKSProxy : NSURLProtectionSpaceHTTPProxy
            return URLProtectionSpace(proxyHost: space.host, port: space.port, type: type, realm: space.realm, authenticationMethod: method)
        }
        return URLProtectionSpace(host: space.host, port: space.port, protocol: nil, realm: space.realm, authenticationMethod: method)
    }

    static func apple(_ credential: Credential) -> URLCredential {
        URLCredential(user: credential.user, password: credential.password, persistence: .forSession)
    }

    private static func persistence(_ credential: URLCredential) -> CredentialStore.Persistence {
        switch credential.persistence {
        case .none: .none
        case .forSession: .forSession
        default: .permanent
        }
    }
}
