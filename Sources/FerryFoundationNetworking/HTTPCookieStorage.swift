import FerryCore
import FerryEngine
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Apple's `HTTPCookieStorage` as a view of Ferry's cookie stores: what a session sends and keeps is what
/// this object reads and writes.
///
/// - ``shared`` is Ferry's per-user store (the file `ferry get -b/-c` and ferryd use), which default
///   sessions send from.
/// - An ephemeral configuration has a store of its own, in memory; sessions made from that
///   configuration (or its copies) share it, as Apple's do.
///
/// FoundationNetworking's `HTTPCookieStorage` cannot be subclassed (its initializer is private), so this
/// module declares its own: code that imports this module and calls `HTTPCookieStorage.shared` reads
/// the cookies Ferry stored.
open class HTTPCookieStorage: NSObject, @unchecked Sendable {
    /// The Ferry store this object shows.
    let store: CookieStore

    init(store: CookieStore) {
        self.store = store
        super.init()
    }

    private static let sharedStorage = HTTPCookieStorage(store: .shared)

    /// Ferry's per-user cookie store.
    open class var shared: HTTPCookieStorage { sharedStorage }

    /// Linux has no app groups: the shared store, whatever the identifier.
    open class func sharedCookieStorage(forGroupContainerIdentifier identifier: String) -> HTTPCookieStorage { shared }

    /// Which cookies the store takes from responses.
    open var cookieAcceptPolicy: HTTPCookie.AcceptPolicy {
        get {
            switch store.acceptPolicy {
            case .always: .always
            case .never: .never
            case .onlyFromMainDocumentDomain: .onlyFromMainDocumentDomain
            }
        }
        set {
            switch newValue {
            case .never: store.acceptPolicy = .never
            case .onlyFromMainDocumentDomain: store.acceptPolicy = .onlyFromMainDocumentDomain
            default: store.acceptPolicy = .always
            }
        }
    }

    /// Every cookie not expired.
    open var cookies: [HTTPCookie]? { store.cookies.compactMap(Self.apple) }

    /// The cookies a request to `url` carries now.
    open func cookies(for url: URL) -> [HTTPCookie]? { store.cookies(for: url).compactMap(Self.apple) }

    /// Stores `cookie`, replacing the one with its name, domain and path (the accept policy does not
    /// apply: the application chose it).
    open func setCookie(_ cookie: HTTPCookie) {
        store.setCookie(Self.ferry(cookie))
    }

    /// Stores `cookies` as if `url` (from the page at `mainDocumentURL`) had set them, as the accept
    /// policy allows.
    open func setCookies(_ cookies: [HTTPCookie], for url: URL?, mainDocumentURL: URL?) {
        switch store.acceptPolicy {
        case .never: return
        case .always: break
        case .onlyFromMainDocumentDomain:
            guard let main = mainDocumentURL?.host?.lowercased() else { break }
            for cookie in cookies {
                let domain = cookie.domain.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
                if main == domain || main.hasSuffix("." + domain) { store.setCookie(Self.ferry(cookie)) }
            }
            return
        }
        for cookie in cookies { store.setCookie(Self.ferry(cookie)) }
    }

    /// Removes `cookie`.
    open func deleteCookie(_ cookie: HTTPCookie) {
        store.deleteCookie(Self.ferry(cookie))
    }

    /// Removes the cookies stored at or after `date`.
    open func removeCookies(since date: Date) {
        for cookie in store.cookies where cookie.created >= date { store.deleteCookie(cookie) }
    }

    /// Every cookie, sorted by the descriptors (key paths of `HTTPCookie`), the first one first.
    open func sortedCookies(using sortOrder: [NSSortDescriptor]) -> [HTTPCookie] {
        (cookies ?? []).sorted { left, right in
            for descriptor in sortOrder {
                switch descriptor.compare(left, to: right) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return false
        }
    }

    /// Stores `cookies` for `task`'s current URL.
    open func storeCookies(_ cookies: [HTTPCookie], for task: URLSessionTask) {
        setCookies(cookies, for: task.currentRequest?.url, mainDocumentURL: task.currentRequest?.mainDocumentURL)
    }

    /// The cookies `task`'s current request carries.
    open func getCookiesFor(_ task: URLSessionTask, completionHandler: @escaping @Sendable ([HTTPCookie]?) -> Void) {
        completionHandler(task.currentRequest?.url.flatMap { cookies(for: $0) })
    }

    // MARK: Conversions

    /// Apple's cookie for Ferry's (a domain cookie's domain starts with a dot, as Apple writes it).
    static func apple(_ cookie: Cookie) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: cookie.name,
            .value: cookie.value,
            .domain: cookie.isHostOnly ? cookie.domain : "." + cookie.domain,
            .path: cookie.path,
        ]
        if let expires = cookie.expires { properties[.expires] = expires }
        if cookie.isSecure { properties[.secure] = "TRUE" }
        if cookie.isHTTPOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        return HTTPCookie(properties: properties)
    }

    /// Ferry's cookie for Apple's.
    static func ferry(_ cookie: HTTPCookie) -> Cookie {
        let domain = cookie.domain
        return Cookie(
            name: cookie.name,
            value: cookie.value,
            domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain,
            isHostOnly: !domain.hasPrefix("."),
            path: cookie.path,
            expires: cookie.expiresDate,
            isSecure: cookie.isSecure,
            isHTTPOnly: cookie.isHTTPOnly
        )
    }
}
