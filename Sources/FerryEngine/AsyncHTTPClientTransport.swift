import AsyncHTTPClient
import FerryCore
import Foundation
public import NIOCore
import NIOHTTP1
import NIOSSL

/// ``HTTPTransport`` over AsyncHTTPClient: HTTP/1.1 and HTTP/2 (ALPN), connection pooling and TLS. Used
/// when HTTP/2 is asked for, and for comparisons (`FERRY_HTTP1=asynchttpclient`).
///
/// One transport per session, so connections are reused within a session and a new session opens new
/// ones (SPEC S1.4). AsyncHTTPClient does not follow redirects or decompress here: the engine does both,
/// so the delegate can have its say and ranges refer to the bytes on the wire.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient

    /// Transport settings taken from a session's configuration.
    public typealias Options = TransportOptions

    /// Creates a transport with its own connection pool.
    /// - Throws: ``FerryError`` when a trust root is not a PEM certificate.
    public init(options: Options = Options()) throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        let idle = TimeAmount.milliseconds(Int64(options.idleTimeout * 1000))
        configuration.timeout = .init(connect: idle, read: idle)
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: options.maximumConnectionsPerHost
        )
        // Fail at once when a connection cannot be made (URLSession's cannotConnectToHost): Ferry retries
        // with its own policy (the daemon's backoff); AsyncHTTPClient's retry loop would otherwise hold a
        // refused request until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        guard options.tls.pinnedPublicKeys.isEmpty else {
            throw FerryError(
                .invalidOperation,
                "pinned public keys are checked on HTTP/1.1 connections only for now; drop --http2 (or the .http2 preference) to use them"
            )
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if options.tls.allowsUntrustedCertificates { tls.certificateVerification = .none }
        if let chain = options.tls.clientCertificatePEM, let key = options.tls.clientPrivateKeyPEM {
            do {
                tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(chain.utf8)).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem))
            } catch {
                throw FerryError(.invalidOperation, "the client certificate or key is not PEM")
            }
        }
        tls.minimumTLSVersion = TLSClient.nioVersion(options.minimumTLSVersion)
        tls.maximumTLSVersion = TLSClient.nioVersion(options.maximumTLSVersion)
        if !options.additionalTrustRootsPEM.isEmpty {
            do {
                let certificates = try options.additionalTrustRootsPEM.flatMap {
                    try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
                }
                tls.additionalTrustRoots = [.certificates(certificates)]
            } catch {
                throw FerryError(.invalidOperation, "an additional trust root is not a PEM certificate: \(error)")
            }
        }
        configuration.tlsConfiguration = tls
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        var headers = HTTPHeaders()
        for field in request.headers { headers.add(name: field.name, value: field.value) }
        let (delegate, sequence) = StreamingResponseDelegate.make()
        let body: HTTPClient.Body?
        switch request.body {
        case .bytes(let buffer):
            body = .byteBuffer(buffer)
        case .stream(let length, let stream):
            let loop = client.eventLoopGroup.next()
            body = .stream(contentLength: length) { writer in
                let written = loop.makePromise(of: Void.self)
                written.completeWithTask {
                    for try await chunk in stream { try await writer.write(.byteBuffer(chunk)).get() }
                    // Each write above completed, so the whole body is on the wire: the request's end.
                    delegate.requestBodyWritten()
                }
                return written.futureResult
            }
        case nil:
            body = nil
        }
        let head: HTTPResponseHead
        let timing: TransportTiming
        do {
            let outgoing = try HTTPClient.Request(
                url: request.url.absoluteString,
                method: HTTPMethod(rawValue: request.method),
                headers: headers,
                body: body
            )
            (head, timing) = try await delegate.send(outgoing, on: client, deadline: deadline)
        } catch {
            delegate.cancel()
            throw TransportErrors.ferryError(for: error, url: request.url.absoluteString)
        }
        var responseHeaders = Headers()
        for (name, value) in head.headers { responseHeaders.add(name: name, value: value) }
        return TransportResponse(
            status: Int(head.status.code),
            headers: responseHeaders,
            protocolName: head.version.major == 2 ? "h2" : "http/1.1",
            body: TransportBodyStream(sequence),
            timing: timing,
            latestTiming: { delegate.timing }
        )
    }

    /// The delegate API's deadline fails the exchange whatever its phase, body included.
    public var enforcesDeadlineOverBody: Bool { true }

    public func shutdown() async throws {
        try await client.shutdown()
    }
}
