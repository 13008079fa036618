public import Foundation

/// A loader for requests a program handles itself (NSURLProtocol's idea): an app's own scheme, canned
/// answers in tests, an in-memory store. Registered in ``SessionConfiguration/protocolHandlers``, in
/// order; the first whose ``canHandle(_:)`` says yes loads the request instead of the network, http and
/// https included. Data, upload and download tasks use it alike in process; background sessions refuse
/// handlers (ferryd cannot run the program's code).
///
/// A handler is made for one request, told to ``startLoading()``, and reports through its client: a
/// response, then data, then the end (or a failure, or a redirect). ``stopLoading()`` comes when the
/// task is cancelled or no longer wants the body; after it the client's calls are ignored.
public protocol ProtocolHandler: AnyObject, Sendable {
    /// Whether this handler loads `request`. Called for every request of the session, redirects included.
    static func canHandle(_ request: Request) -> Bool

    /// A handler for `request`, whose body (an upload's, whole) is `body`.
    init(request: Request, body: Data?, client: any ProtocolHandlerClient)

    /// Starts loading; report through the client, from any thread, now or later.
    func startLoading()

    /// Stops loading: the task was cancelled or has what it needs.
    func stopLoading()
}

/// What a ``ProtocolHandler`` reports to (URLProtocolClient). Thread safe; calls after the end are
/// ignored.
public protocol ProtocolHandlerClient: Sendable {
    /// The response head; once, before any data.
    func didReceive(_ response: Response)
    /// Some of the body, in order.
    func didLoad(_ data: Data)
    /// The body is complete.
    func didFinishLoading()
    /// Loading failed.
    func didFail(with error: FerryError)
    /// The request goes to `request` instead (its URL is followed as a redirect, with the task's redirect
    /// rules and delegate); `redirectResponse` is the 3xx answer (another status is sent as 302).
    func wasRedirected(to request: Request, redirectResponse: Response)
}

/// The protocol handlers of a configuration, in order. Compared by type; not encoded (a configuration
/// that travels to ferryd carries none, and background sessions refuse them).
public struct ProtocolHandlerList: Sendable, Hashable, Codable, ExpressibleByArrayLiteral {
    /// The handler types, first consulted first.
    public var types: [any ProtocolHandler.Type]

    public init(_ types: [any ProtocolHandler.Type] = []) {
        self.types = types
    }

    public init(arrayLiteral elements: (any ProtocolHandler.Type)...) {
        self.types = elements
    }

    /// The first handler that loads `request`, if any.
    public func handler(for request: Request) -> (any ProtocolHandler.Type)? {
        types.first { $0.canHandle(request) }
    }

    public var isEmpty: Bool { types.isEmpty }

    public static func == (a: ProtocolHandlerList, b: ProtocolHandlerList) -> Bool {
        a.types.map(ObjectIdentifier.init) == b.types.map(ObjectIdentifier.init)
    }

    public func hash(into hasher: inout Hasher) {
        for type in types { hasher.combine(ObjectIdentifier(type)) }
    }

    public init(from decoder: any Decoder) throws {
        self.types = []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode([String]())
    }
}
