import FerryCore
import Foundation
public import NIOCore

/// The transport sessions, ferryd and the CLI use: ``HTTP1Transport`` (SwiftNIO, written for speed) for
/// `http://` and `https://` over HTTP/1.1; ``AsyncHTTPClientTransport`` when HTTP/2 is asked for
/// (``TransportOptions/httpVersion`` `.http2`), until Ferry's own HTTP/2 lands.
public final class StandardTransport: HTTPTransport {
    /// Settings for both transports.
    public typealias Options = TransportOptions

    private let native: HTTP1Transport?
    private let fallback: AsyncHTTPClientTransport?
    private let preference: SessionConfiguration.HTTPVersionPreference

    /// Creates the transports the options call for.
    /// - Parameter nativeHTTP1: false sends every request through AsyncHTTPClient (for comparisons; the
    ///   environment variable `FERRY_HTTP1=asynchttpclient` does the same for programs using the default).
    /// - Throws: ``FerryError`` when a trust root or client identity is not PEM, or when a setting the
    ///   HTTP/2 path cannot honour (pins) is combined with `.http2`.
    public init(options: Options = Options(), nativeHTTP1: Bool = StandardTransport.nativeHTTP1ByDefault) throws {
        preference = options.httpVersion
        let useNative = nativeHTTP1
        native = useNative ? HTTP1Transport(options: options) : nil
        try native?.checkSettings()
        fallback = !useNative || options.httpVersion == .http2 ? try AsyncHTTPClientTransport(options: options) : nil
    }

    /// False when the environment sets `FERRY_HTTP1=asynchttpclient`.
    public static var nativeHTTP1ByDefault: Bool {
        ProcessInfo.processInfo.environment["FERRY_HTTP1"]?.lowercased() != "asynchttpclient"
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let secure = request.url.scheme?.lowercased() == "https"
        if let native, !(secure && preference == .http2) {
            return try await native.send(request, deadline: deadline)
        }
        guard let fallback else { preconditionFailure("a transport for every request is made in init") }
        return try await fallback.send(request, deadline: deadline)
    }

    /// Throws what is wrong with the TLS or proxy settings (already checked by ``init(options:nativeHTTP1:)``).
    public func checkSettings() throws {
        try native?.checkSettings()
    }

    /// Both transports enforce the deadline over the body.
    public var enforcesDeadlineOverBody: Bool { true }

    public func shutdown() async throws {
        try await native?.shutdown()
        try await fallback?.shutdown()
    }
}
