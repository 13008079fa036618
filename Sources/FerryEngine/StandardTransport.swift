public import FerryCore
import Foundation
public import NIOCore

/// The transport sessions, ferryd and the CLI use: ``HTTP1Transport`` (SwiftNIO, written for speed) for
/// `http://`, ``AsyncHTTPClientTransport`` for `https://` (TLS, HTTP/2 by ALPN).
public final class StandardTransport: HTTPTransport {
    /// Settings for both transports.
    public typealias Options = AsyncHTTPClientTransport.Options

    private let plain: (any HTTPTransport)?
    private let secure: AsyncHTTPClientTransport

    /// Creates both transports.
    /// - Parameter nativeHTTP1: false sends `http://` through AsyncHTTPClient too (for comparisons; the
    ///   environment variable `FERRY_HTTP1=asynchttpclient` does the same for programs using the default).
    /// - Throws: ``FerryError`` when a trust root is not a PEM certificate.
    public init(options: Options = Options(), nativeHTTP1: Bool = StandardTransport.nativeHTTP1ByDefault) throws {
        secure = try AsyncHTTPClientTransport(options: options)
        plain = nativeHTTP1 ? HTTP1Transport(options: options) : nil
    }

    /// False when the environment sets `FERRY_HTTP1=asynchttpclient`.
    public static var nativeHTTP1ByDefault: Bool {
        ProcessInfo.processInfo.environment["FERRY_HTTP1"]?.lowercased() != "asynchttpclient"
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        if let plain, request.url.scheme?.lowercased() == "http" {
            return try await plain.send(request, deadline: deadline)
        }
        return try await secure.send(request, deadline: deadline)
    }

    /// Both transports enforce the deadline over the body.
    public var enforcesDeadlineOverBody: Bool { true }

    public func shutdown() async throws {
        try await plain?.shutdown()
        try await secure.shutdown()
    }
}
