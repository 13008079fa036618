// AsyncHTTPClient alone on the benchmark work (modes as ferry-bench: download, discard, gets,
// gets-parallel); prints the same key=value line.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

let arguments = Array(CommandLine.arguments.dropFirst())
var configuration = HTTPClient.Configuration()
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)

func get(_ url: String, each: (ByteBuffer) throws -> Void) async throws -> Int {
    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(300))
    guard response.status == .ok else { throw HTTPClientError.invalidURL }
    for try await buffer in response.body { try each(buffer) }
    return 200
}

do {
    switch (arguments.first, arguments.count) {
    case ("download", 3):
        FileManager.default.createFile(atPath: arguments[2], contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: arguments[2]))
        var size = 0
        let start = ContinuousClock.now
        _ = try await get(arguments[1]) { buffer in
            size += buffer.readableBytes
            try buffer.withUnsafeReadableBytes { try handle.write(contentsOf: $0) }
        }
        try handle.close()
        let time = seconds(since: start)
        print("bytes=\(size) seconds=\(time) MBps=\(Double(size) / time / 1e6)")
    case ("discard", 2):
        var size = 0
        let start = ContinuousClock.now
        _ = try await get(arguments[1]) { size += $0.readableBytes }
        let time = seconds(since: start)
        print("bytes=\(size) seconds=\(time) MBps=\(Double(size) / time / 1e6)")
    case ("gets", 3):
        let count = Int(arguments[2])!
        let start = ContinuousClock.now
        for _ in 0..<count { _ = try await get(arguments[1]) { _ in } }
        let time = seconds(since: start)
        print("requests=\(count) seconds=\(time) rps=\(Double(count) / time)")
    case ("gets-parallel", 4):
        let count = Int(arguments[2])!
        let width = Int(arguments[3])!
        let url = arguments[1]
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            while started < min(width, count) {
                group.addTask { _ = try await get(url) { _ in } }
                started += 1
            }
            while try await group.next() != nil, started < count {
                group.addTask { _ = try await get(url) { _ in } }
                started += 1
            }
            try await group.waitForAll()
        }
        let time = seconds(since: start)
        print("requests=\(count) seconds=\(time) rps=\(Double(count) / time)")
    default:
        FileHandle.standardError.write(Data("usage: ahc-bench download URL PATH | discard URL | gets URL N | gets-parallel URL N W\n".utf8))
        exit(2)
    }
    try await client.shutdown()
} catch {
    FileHandle.standardError.write(Data("ahc-bench: \(error)\n".utf8))
    exit(1)
}
