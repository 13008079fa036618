import NIOConcurrencyHelpers
import NIOPosix

/// The listeners of one test server.
public enum ListenerKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// Plain HTTP/1.1 on the configured port.
    case main
    /// Plain HTTP/1.1 on a second port: another origin, for cross-origin redirects.
    case alternate
    /// HTTPS with ALPN: HTTP/2 or HTTP/1.1.
    case tls
    /// Plain HTTP/1.1 with the resumable-upload protocol (IETF draft) in front of the usual routes.
    case resumable
}

/// The origins (`http://127.0.0.1:PORT`) of every listener, filled in once each is bound.
final class Origins: Sendable {
    private let box = NIOLockedValueBox<[ListenerKind: String]>([:])

    subscript(kind: ListenerKind) -> String? {
        get { box.withLockedValue { $0[kind] } }
        set { box.withLockedValue { $0[kind] = newValue } }
    }
}

/// What a request handler needs to know about its server and listener.
struct ListenerContext: Sendable {
    let kind: ListenerKind
    let state: TestServerState
    let origins: Origins
    let root: String?
    let pool: NIOThreadPool
}
