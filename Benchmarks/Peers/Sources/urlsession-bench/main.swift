// Foundation's URLSession (FoundationNetworking) on the benchmark work (modes as ferry-bench);
// prints the same key=value line. The main package builds this same file against
// FerryFoundationNetworking as `urlsession-bench-ferry` (Benchmarks/URLSessionOnFerry, -D FERRY).
import Foundation
#if FERRY
import FerryEngine
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

let arguments = Array(CommandLine.arguments.dropFirst())
let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = 16
// No HTTP cache: the rows compare requests that reach the server (as curl's and ferry-bench's do).
configuration.urlCache = nil
let session = URLSession(configuration: configuration)

func check(_ response: URLResponse) throws {
    guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
}

/// The sequential loop, off the main actor (top-level code runs on it): as ferry-bench's loop, each
/// request is awaited from the global executor, not with a hop to the main thread and back.
func sequentialGets(_ session: URLSession, _ url: URL, _ count: Int) async throws {
    for _ in 0..<count {
        let (_, response) = try await session.data(from: url)
        try check(response)
    }
}

/// `width` requests in flight until `count` are done, off the main actor as ``sequentialGets``.
func parallelGets(_ session: URLSession, _ url: URL, _ count: Int, _ width: Int) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var started = 0
        func add() {
            group.addTask {
                let (_, response) = try await session.data(from: url)
                try check(response)
            }
            started += 1
        }
        while started < min(width, count) { add() }
        while try await group.next() != nil, started < count { add() }
        try await group.waitForAll()
    }
}

do {
    switch (arguments.first, arguments.count) {
    case ("download", 3):
        let start = ContinuousClock.now
        let (file, response) = try await session.download(from: URL(string: arguments[1])!)
        try check(response)
        try? FileManager.default.removeItem(atPath: arguments[2])
        try FileManager.default.moveItem(at: file, to: URL(fileURLWithPath: arguments[2]))
        let time = seconds(since: start)
        let size = (try FileManager.default.attributesOfItem(atPath: arguments[2])[.size] as? NSNumber)?.intValue ?? 0
        print("bytes=\(size) seconds=\(time) MBps=\(Double(size) / time / 1e6)")
    case ("discard", 2):
        // dataTask keeps the body in memory; bytes(from:) is not available on Linux: count via a delegate.
        final class Counter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
            var size = 0
            let done = DispatchSemaphore(value: 0)
            func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) { size += data.count }
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) { done.signal() }
        }
        let counter = Counter()
        let streaming = URLSession(configuration: configuration, delegate: counter, delegateQueue: nil)
        let start = ContinuousClock.now
        streaming.dataTask(with: URL(string: arguments[1])!).resume()
        counter.done.wait()
        let time = seconds(since: start)
        print("bytes=\(counter.size) seconds=\(time) MBps=\(Double(counter.size) / time / 1e6)")
    case ("gets", 3):
        let count = Int(arguments[2])!
        let url = URL(string: arguments[1])!
        let start = ContinuousClock.now
        try await sequentialGets(session, url, count)
        let time = seconds(since: start)
        print("requests=\(count) seconds=\(time) rps=\(Double(count) / time)")
    case ("gets-parallel", 4):
        let count = Int(arguments[2])!
        let width = Int(arguments[3])!
        let url = URL(string: arguments[1])!
        let start = ContinuousClock.now
        try await parallelGets(session, url, count, width)
        let time = seconds(since: start)
        print("requests=\(count) seconds=\(time) rps=\(Double(count) / time)")
    #if FERRY
    case ("layers", 2):
        // This module's CPU a request without a network: N sequential requests over a transport that
        // answers at once (as `ferry-bench layers` measures Session's).
        let count = Int(arguments[1])!
        let instant = URLSession(configuration: configuration, delegate: nil, delegateQueue: nil, daemon: nil, transport: InstantTransport())
        let start = ContinuousClock.now
        try await sequentialGets(instant, URL(string: "http://127.0.0.1:9/small.bin")!, count)
        print("requests=\(count) urlsession_us=\(seconds(since: start) / Double(count) * 1e6)")
    #endif
    default:
        FileHandle.standardError.write(Data("usage: urlsession-bench download URL PATH | discard URL | gets URL N | gets-parallel URL N W\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("urlsession-bench: \(error)\n".utf8))
    exit(1)
}
