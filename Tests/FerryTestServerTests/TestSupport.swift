import AsyncHTTPClient
import FerryTestServer
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A response as a test sees it, including an error that cut the body short.
struct Fetched {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var version: HTTPVersion
    /// The error that ended the body early, if any.
    var bodyError: (any Error)?
    /// Seconds from sending the request to the end of the body.
    var seconds: Double

    func header(_ name: String) -> String? { headers.first(name: name) }

    func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] ?? [:]
    }
}

/// Runs `body` with a fresh server and an AsyncHTTPClient that trusts it, follows no redirect unless
/// asked and does not decompress; both are shut down afterwards.
@discardableResult
func withServerAndClient<Result>(
    _ configuration: TestServer.Configuration = TestServer.Configuration(),
    followRedirects: Bool = false,
    httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
    _ body: (TestServer, HTTPClient) async throws -> Result
) async throws -> Result {
    try await TestServer.withServer(configuration) { server in
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.redirectConfiguration =
            followRedirects ? .follow(max: 10, allowCycles: false) : .disallow
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try server.certificates.trustRoot])
        clientConfiguration.tlsConfiguration = tls
        clientConfiguration.httpVersion = httpVersion
        clientConfiguration.decompression = .disabled
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        do {
            let result = try await body(server, client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}

extension HTTPClient {
    /// Sends a request and collects the response; a failure while reading the body is kept in
    /// ``Fetched/bodyError`` with the bytes received until then.
    func fetch(
        _ url: String,
        method: HTTPMethod = .GET,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> Fetched {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let started = ContinuousClock.now
        let response = try await execute(request, timeout: .seconds(60))
        var received: [UInt8] = []
        var bodyError: (any Error)?
        do {
            for try await chunk in response.body { received.append(contentsOf: chunk.readableBytesView) }
        } catch {
            bodyError = error
        }
        let elapsed = ContinuousClock.now - started
        return Fetched(
            status: Int(response.status.code),
            headers: response.headers,
            body: received,
            version: response.version,
            bodyError: bodyError,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        )
    }
}

/// The bytes `/bytes/{count}?seed={seed}` serves.
func expectedBytes(_ count: Int, seed: UInt64, version: Int = 0, offset: Int64 = 0) -> [UInt8] {
    DeterministicBytes(seed: seed, version: version).bytes(offset: offset, count: count)
}

/// A fresh empty directory (``TestDirectory``: removed when the process exits).
func makeTemporaryDirectory() throws -> URL {
    try TestDirectory.make()
}

/// Bytes compared in a test: equal when the bytes are, described by length and SHA-256 so a failure
/// message stays short.
struct Bytes: Equatable, CustomStringConvertible {
    var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    init<S: Sequence>(_ bytes: S) where S.Element == UInt8 { self.bytes = Array(bytes) }
    var description: String { "\(bytes.count) bytes, sha256 \(sha256Hex(bytes).prefix(16))…" }
}

/// A response read off the wire byte for byte, for the faults where an HTTP client would hide what the
/// server really sent (AsyncHTTPClient drops body bytes it had buffered when the connection is cut).
struct RawResponse {
    var statusLine: String
    var headers: [(name: String, value: String)]
    /// Everything after the blank line that ends the headers, until the server closed the connection.
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first(where: { $0.name.lowercased() == name.lowercased() })?.value
    }
}

/// Sends `request` (raw HTTP/1.1 text) to 127.0.0.1:`port` and reads until the server closes.
func rawExchange(port: Int, _ request: String) async throws -> RawResponse {
    try await rawExchange(port: port, Array(request.utf8))
}

/// Sends `request` (raw HTTP/1.1 bytes) to 127.0.0.1:`port` and reads until the server closes.
func rawExchange(port: Int, _ request: [UInt8]) async throws -> RawResponse {
    final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var bytes: [UInt8] = []
        let done: EventLoopPromise<[UInt8]>
        init(done: EventLoopPromise<[UInt8]>) { self.done = done }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytesView
        }
        func channelInactive(context: ChannelHandlerContext) { done.succeed(bytes) }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
    let group = MultiThreadedEventLoopGroup.singleton
    let done = group.next().makePromise(of: [UInt8].self)
    let channel: any Channel
    do {
        channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    } catch {
        done.fail(error)
        throw error
    }
    try await channel.writeAndFlush(ByteBuffer(bytes: request))
    let bytes = try await done.futureResult.get()
    guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else {
        return RawResponse(statusLine: "", headers: [], body: bytes)
    }
    let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    let headers = head.dropFirst().compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    return RawResponse(statusLine: head.first ?? "", headers: headers, body: Array(bytes[end.upperBound...]))
}

/// A GET for `target` that asks the server to close the connection afterwards.
func rawGET(_ target: String) -> String {
    "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
}
