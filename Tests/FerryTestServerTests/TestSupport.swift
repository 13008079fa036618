import AsyncHTTPClient
import FerryTestServer
import Foundation
import NIOCore
import NIOHTTP1
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
        _ url: String, method: HTTPMethod = .GET, headers: [(String, String)] = [], body: [UInt8]? = nil
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
            status: Int(response.status.code), headers: response.headers, body: received, version: response.version,
            bodyError: bodyError,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

/// The bytes `/bytes/{count}?seed={seed}` serves.
func expectedBytes(_ count: Int, seed: UInt64, version: Int = 0, offset: Int64 = 0) -> [UInt8] {
    DeterministicBytes(seed: seed, version: version).bytes(offset: offset, count: count)
}

/// A fresh empty directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
