import Crypto
import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization

/// Transport options that trust `server`'s test CA, changed by `change`.
func trusting(_ server: TestServer, _ change: (inout TransportOptions) -> Void = { _ in }) -> TransportOptions {
    var options = TransportOptions()
    options.additionalTrustRootsPEM = [server.certificates.trustRootPEM]
    change(&options)
    return options
}

/// A GET of `url` through `transport`, its whole body read, within `limit`.
func fetch(
    _ transport: any HTTPTransport,
    _ url: String,
    within limit: TimeAmount
) async throws -> (TransportResponse, [UInt8]) {
    let response = try await transport.send(
        TransportRequest(method: "GET", url: URL(string: url)!, headers: Headers()),
        deadline: .now() + limit
    )
    var bytes: [UInt8] = []
    for try await chunk in response.body { bytes += chunk.readableBytesView }
    return (response, bytes)
}

/// Runs `body` with a test server and a transport that trusts it.
func withServerAndTransport<Result>(
    _ body: (TestServer, StandardTransport) async throws -> Result
) async throws -> Result {
    try await TestServer.withServer { server in
        let transport = try StandardTransport(options: trusting(server))
        do {
            let result = try await body(server, transport)
            try await transport.shutdown()
            return result
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }
}

/// A request for a URL string.
func request(_ url: String) -> Request {
    Request(url: URL(string: url)!)
}

/// A fresh file path in a fresh temporary directory (``TestDirectory``: removed when the process exits).
func temporaryPath(_ name: String = "download") throws -> String {
    try TestDirectory.make().appendingPathComponent(name).path
}

/// The SHA-256 of a file, in hex.
func sha256(ofFile path: String) throws -> String {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return sha256(Array(data))
}

/// The SHA-256 of bytes, in hex.
func sha256(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// The SHA-256 of `/bytes/{count}?seed={seed}` (version `version`).
func expectedSHA256(_ count: Int, seed: UInt64, version: Int = 0) -> String {
    sha256(DeterministicBytes(seed: seed, version: version).bytes(offset: 0, count: count))
}

/// A deadline far enough away for any test.
var testDeadline: NIODeadline { .now() + .seconds(120) }

/// Records the events of a download.
final class EventLog: Sendable {
    private let resumes = Mutex<[(Int64, Int64?)]>([])
    private let written = Mutex<Int64>(0)

    var events: Downloader.Events {
        var events = Downloader.Events()
        events.didResume = { offset, total in self.resumes.withLock { $0.append((offset, total)) } }
        events.didWrite = { _, total, _ in self.written.withLock { $0 = total } }
        return events
    }

    var resumedAt: [Int64] { resumes.withLock { $0.map(\.0) } }
    var lastTotalWritten: Int64 { written.withLock { $0 } }
}

/// Runs a download that must fail (the server cuts or stalls it) and returns its error.
func failingDownload(_ downloader: Downloader, _ url: String, to path: String) async throws -> FerryError {
    do {
        let result = try await downloader.download(request(url), to: path, deadline: testDeadline)
        throw FerryError(.invalidOperation, "expected \(url) to fail, but it gave \(result.length) bytes")
    } catch let error as FerryError where error.code != .invalidOperation {
        return error
    }
}

/// Continues `resumeData` into `path`; returns the result and the offsets didResume reported.
func resumeDownload(
    _ downloader: Downloader,
    _ resumeData: ResumeData,
    to path: String
) async throws -> (Downloader.Result, [Int64]) {
    let log = EventLog()
    let result = try await downloader.download(
        resumeData.currentRequest,
        resumingFrom: resumeData,
        to: path,
        deadline: testDeadline,
        events: log.events
    )
    return (result, log.resumedAt)
}

extension Array where Element: Sendable {
    /// The array as an async sequence (request bodies made of buffers, for instance).
    var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
