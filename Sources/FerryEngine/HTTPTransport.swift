public import FerryCore
public import Foundation
public import NIOCore

/// One HTTP exchange as the engine needs it. The engine follows redirects, resumes and retries itself,
/// so a transport only sends one request and hands back the response head and a streaming body.
///
/// The engine talks to this protocol rather than to AsyncHTTPClient, so a faster transport (a
/// SwiftNIO-native HTTP/1.1 one, say) can replace it where measurements say so.
public protocol HTTPTransport: Sendable {
    /// Sends `request`, returning once the response head has arrived.
    /// - Parameter deadline: when the whole exchange, body included, must be over.
    /// - Throws: ``FerryError`` (cannotConnectToHost, timedOut, secureConnectionFailed, ...).
    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse

    /// Closes every connection. Requests in flight fail with ``FerryError/Code/cancelled``.
    func shutdown() async throws

    /// Whether `send`'s deadline also ends a body still being read (with a ``FerryError/Code/timedOut``
    /// error). When false, the engine races bodies against the deadline itself. Default: false.
    var enforcesDeadlineOverBody: Bool { get }

    /// Whether requests to `url`'s origin share one connection now (HTTP/2 streams), so that a limit on
    /// connections per host does not apply to them. Default: false.
    func multiplexes(_ url: URL) -> Bool
}

extension HTTPTransport {
    public var enforcesDeadlineOverBody: Bool { false }

    public func multiplexes(_ url: URL) -> Bool { false }
}

/// A request for ``HTTPTransport/send(_:deadline:)``.
public struct TransportRequest: Sendable {
    /// The method.
    public var method: String
    /// The absolute http or https URL.
    public var url: URL
    /// The header fields, already validated.
    public var headers: Headers
    /// The body, if any.
    public var body: TransportRequestBody?
    /// Seconds without a byte after which this exchange fails with `timedOut` (``Request/timeoutInterval``);
    /// the shorter of this and the transport's own idle timeout applies. Nil: the transport's.
    public var idleTimeout: Double?
    /// Try HTTP/3 first even where nothing advertised it (``Request/assumesHTTP3Capable``).
    public var assumesHTTP3Capable = false

    /// Creates a request.
    public init(method: String, url: URL, headers: Headers, body: TransportRequestBody? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The transport request for a Ferry request.
    public init(_ request: Request, body: TransportRequestBody? = nil) {
        self.init(method: request.method, url: request.url, headers: request.headers, body: body)
        idleTimeout = request.timeoutInterval
        assumesHTTP3Capable = request.assumesHTTP3Capable
    }
}

extension TransportRequest {
    /// The request as metrics report it: URL, method and header fields as sent.
    var sentRequest: Request {
        var request = Request(url: url)
        request.method = method
        request.headers = headers
        return request
    }
}

/// A request body: bytes in memory, or a stream read as it is sent (constant memory whatever its size).
public enum TransportRequestBody: Sendable {
    /// Bytes in memory.
    case bytes(ByteBuffer)
    /// Bytes produced as they are sent; `length` nil sends them chunked.
    case stream(length: Int64?, TransportBodyStream)
}

/// The head of a response and its body, to be read once.
public struct TransportResponse: Sendable, CustomReflectable {
    /// The fields, in one copy-on-write box, as FerryCore's `CopyOnWrite` keeps a request's: a response
    /// is copied on its way up through the layers (transport, session transport, redirects, loader), and
    /// holds references in most fields (headers, body, timing's strings, three closures). A box of its
    /// own, not `CopyOnWrite<Fields>`: that generic type's methods ran unspecialised from this module
    /// (perf: `isKnownUniquelyReferenced<A>` and generic metadata look-ups for every response).
    private var box: Box

    private final class Box: @unchecked Sendable {
        // Changed only through `modify(_:)`, once the box is one response's alone.
        @exclusivity(unchecked) var fields: Fields
        init(_ fields: Fields) { self.fields = fields }

        /// `box`, copied first when it is shared: the one to change the fields in.
        static func modify(_ box: inout Box) -> Box {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            return box
        }
    }

    private struct Fields {
        var status: Int
        var headers: Headers
        var protocolName: String
        var body: TransportBodyStream
        var timing: TransportTiming
        var latestTiming: (@Sendable () -> TransportTiming)?
        var cancel: (@Sendable () -> Void)?
        var detach: (@Sendable () async throws -> ByteStreamConnection)?
    }

    /// Printed and dumped as its fields, as before they were boxed.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: box.fields).children, displayStyle: .struct)
    }

    /// The status code.
    public var status: Int {
        get { box.fields.status }
        _modify { yield &Box.modify(&box).fields.status }
    }
    /// The header fields.
    public var headers: Headers {
        get { box.fields.headers }
        _modify { yield &Box.modify(&box).fields.headers }
    }
    /// The protocol, `http/1.1` or `h2`.
    public var protocolName: String {
        get { box.fields.protocolName }
        _modify { yield &Box.modify(&box).fields.protocolName }
    }
    /// The body, as it arrives, with backpressure: the next chunk is read when this one is taken.
    public var body: TransportBodyStream {
        get { box.fields.body }
        _modify { yield &Box.modify(&box).fields.body }
    }
    /// When the phases of the exchange happened, as far as the transport saw them when the head arrived.
    public var timing: TransportTiming {
        get { box.fields.timing }
        _modify { yield &Box.modify(&box).fields.timing }
    }
    /// The timing as it is now (the request may finish being written after the head arrived), if the
    /// transport keeps it up to date.
    public var latestTiming: (@Sendable () -> TransportTiming)? {
        get { box.fields.latestTiming }
        _modify { yield &Box.modify(&box).fields.latestTiming }
    }
    /// Ends the exchange from outside (its body reader then fails with ``FerryError/Code/cancelled``), if
    /// the transport can: for a transfer cancelled on its own (``TransferCancellation``).
    public var cancel: (@Sendable () -> Void)? {
        get { box.fields.cancel }
        _modify { yield &Box.modify(&box).fields.cancel }
    }
    /// Takes the connection the response came on as a byte stream (a data task that becomes a stream
    /// task): its first bytes are the body's still unread ones, then whatever the server sends. Nil
    /// where the transport cannot hand a connection over (HTTP/2 streams, a protocol handler's answer).
    /// The body is not read after it. Throws ``FerryError/Code/invalidOperation`` saying why when this
    /// response's connection cannot be handed over (a chunked body, or one already complete).
    public var detach: (@Sendable () async throws -> ByteStreamConnection)? {
        get { box.fields.detach }
        _modify { yield &Box.modify(&box).fields.detach }
    }

    /// Creates a response.
    public init(
        status: Int,
        headers: Headers,
        protocolName: String,
        body: TransportBodyStream,
        timing: TransportTiming = TransportTiming(),
        latestTiming: (@Sendable () -> TransportTiming)? = nil,
        cancel: (@Sendable () -> Void)? = nil
    ) {
        box = Box(
            Fields(
                status: status,
                headers: headers,
                protocolName: protocolName,
                body: body,
                timing: timing,
                latestTiming: latestTiming,
                cancel: cancel,
                detach: nil
            )
        )
    }
}

/// Moments of one exchange a transport observed; nil where it could not see them (metrics, SPEC S3).
public struct TransportTiming: Sendable, Hashable {
    /// The request head had been written to a connection.
    public var requestStart: Date?
    /// The whole request had been written.
    public var requestEnd: Date?
    /// The response head had arrived.
    public var responseStart: Date?
    /// A new connection was being opened (nil when one was reused, or the transport cannot tell).
    public var connectStart: Date?
    /// The new connection was open.
    public var connectEnd: Date?
    /// Whether the exchange went over a connection an earlier exchange had used (nil: unknown).
    public var reusedConnection: Bool?
    /// The TLS handshake of a new connection began (nil: plain http, reused, or not seen).
    public var secureConnectionStart: Date?
    /// The TLS handshake ended.
    public var secureConnectionEnd: Date?
    /// The connection's TLS version (`TLSv1.3`), nil for plain http or when not seen.
    public var tlsVersion: String?
    /// The peer's address and port as connected (`127.0.0.1:8443`; the proxy's, through a proxy).
    public var remoteAddress: String?
    /// This side's address and port.
    public var localAddress: String?
    /// The proxy the exchange went through (`http://proxy:3128`), nil when direct.
    public var proxy: String?

    /// Creates a timing.
    public init(
        requestStart: Date? = nil,
        requestEnd: Date? = nil,
        responseStart: Date? = nil,
        connectStart: Date? = nil,
        connectEnd: Date? = nil,
        reusedConnection: Bool? = nil
    ) {
        self.requestStart = requestStart
        self.requestEnd = requestEnd
        self.responseStart = responseStart
        self.connectStart = connectStart
        self.connectEnd = connectEnd
        self.reusedConnection = reusedConnection
    }
}

/// A body as a sequence of byte buffers: a response's as it arrives (with backpressure), or a request's as
/// it is produced. Errors are ``FerryError``s.
public struct TransportBodyStream: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    private enum Source: Sendable {
        case buffer(ByteBuffer)
        case sequence(@Sendable () -> Iterator)
    }

    private let source: Source

    /// A body over any sequence of buffers (a transport's own body type, or a test's).
    public init<Base: AsyncSequence & Sendable>(_ base: Base) where Base.Element == ByteBuffer {
        self.source = .sequence { Iterator(base.makeAsyncIterator()) }
    }

    /// A body that is already complete: read as one piece (as none when empty), without suspending.
    public init(buffer: ByteBuffer) {
        self.source = .buffer(buffer)
    }

    /// The whole body when it was complete before anyone read it (``init(buffer:)``); nil for a body
    /// that streams.
    public var completeBody: ByteBuffer? {
        if case .buffer(let buffer) = source { return buffer }
        return nil
    }

    public func makeAsyncIterator() -> Iterator {
        switch source {
        case .buffer(let buffer): Iterator(buffer: buffer)
        case .sequence(let make): make()
        }
    }

    /// Reads the body; a transport's error is turned into a ``FerryError``.
    public struct Iterator: AsyncIteratorProtocol {
        private enum State {
            case buffer(ByteBuffer?)
            case pull(() async throws -> ByteBuffer?)
        }

        private var state: State

        init<Base: AsyncIteratorProtocol>(_ base: Base) where Base.Element == ByteBuffer {
            var base = base
            self.state = .pull { try await base.next() }
        }

        init(buffer: ByteBuffer) {
            self.state = .buffer(buffer.readableBytes > 0 ? buffer : nil)
        }

        public mutating func next() async throws -> ByteBuffer? {
            switch state {
            case .buffer(let buffer):
                state = .buffer(nil)
                return buffer
            case .pull(let pull):
                do {
                    return try await pull()
                } catch {
                    throw TransportErrors.ferryError(for: error)
                }
            }
        }
    }
}

/// A transport whose connections can follow the machine to another network (HTTP/3's connection
/// migration, RFC 9000 §9): told when the default route changes.
public protocol NetworkPathFollowing: Sendable {
    /// The machine moved to another network: connections that can move to it do so.
    func networkPathChanged() async
}
