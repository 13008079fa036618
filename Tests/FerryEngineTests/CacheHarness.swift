import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization

/// A session transport with an HTTP cache in memory and a clock the test moves, over a real transport
/// to a test server: what the cache conformance tests (issue 39) send through and read back.
final class CacheHarness: Sendable {
    /// What one request got: status, fields, body, and how each transaction was fetched.
    struct Got {
        var status: Int
        var headers: Headers
        var body: [UInt8]
        var fetchTypes: [TransactionMetrics.FetchType]
    }

    let server: TestServer
    let base: StandardTransport
    let transport: SessionTransport
    private let clock = Clock()

    /// The cache's clock: now, until the test moves it on.
    final class Clock: Sendable {
        let time = Mutex(Date())
        func now() -> Date { time.withLock { $0 } }
    }

    init(_ server: TestServer) throws {
        self.server = server
        base = try StandardTransport(options: trusting(server))
        let clock = clock
        transport = SessionTransport(
            base,
            maximumConnectionsPerHost: 6,
            cache: ResponseCache(memoryCapacity: 8 << 20, diskCapacity: 0, directory: nil),
            now: { clock.now() }
        )
    }

    /// The cache's clock now.
    func now() -> Date { clock.now() }

    /// When the newest entry stored for `url` arrived (by the cache's clock), if any.
    func storedAt(_ url: URL) -> Date? {
        transport.cache?.cachedResponses(for: url).map(\.responseDate).max()
    }

    /// Moves the cache's clock on by `seconds`.
    func advance(_ seconds: TimeInterval) {
        clock.time.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// `method` of the test server's `pathAndQuery` through the cache, its body read whole.
    func send(
        _ pathAndQuery: String,
        method: String = "GET",
        headers: [(String, String)] = [],
        policy: Request.CachePolicy = .useProtocolCachePolicy
    ) async throws -> Got {
        var fields = Headers()
        for (name, value) in headers { fields.add(name: name, value: value) }
        let request = TransportRequest(method: method, url: URL(string: server.url(pathAndQuery))!, headers: fields)
        let context = TransferContext(cache: CacheUse(policy: policy))
        return try await TransferContext.$current.withValue(context) {
            let response = try await transport.send(request, deadline: .now() + .seconds(90))
            var body: [UInt8] = []
            for try await chunk in response.body { body += chunk.readableBytesView }
            return Got(
                status: response.status,
                headers: response.headers,
                body: body,
                fetchTypes: context.recordedTransactions.map(\.resourceFetchType)
            )
        }
    }

    /// Requests the server received for `path` (its query aside).
    func received(_ path: String) -> Int { server.counters.requests(path: path) }

    func shutdown() async {
        try? await transport.shutdown()
    }

    /// A query knob's value, percent-encoded (`header=Age:7200, 0`).
    static func encoded(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }

    /// Runs `body` with a harness on a fresh test server.
    static func with(_ body: (CacheHarness) async throws -> Void) async throws {
        try await TestServer.withServer { server in
            let harness = try CacheHarness(server)
            do {
                try await body(harness)
            } catch {
                await harness.shutdown()
                throw error
            }
            await harness.shutdown()
        }
    }
}
