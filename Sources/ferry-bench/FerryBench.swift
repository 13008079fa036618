import Ferry
import FerryEngine
import Foundation
import NIOCore

/// `ferry-bench`: runs one piece of Ferry's work and prints what it measured, for the benchmark scripts
/// (Benchmarks/). Not a user tool: `ferry` is.
///
///     ferry-bench download URL PATH     one download through Session, moved to PATH
///     ferry-bench gets URL COUNT        COUNT sequential GETs of URL through one Session
///     ferry-bench gets-parallel URL COUNT WIDTH   COUNT GETs, WIDTH in flight at once
///     ferry-bench gets-engine URL COUNT   COUNT sequential GETs through the engine alone (DataLoader over
///                                         StandardTransport, no Session): what the session layer costs
///     ferry-bench discard URL           one GET whose body is read and thrown away
///     ferry-bench layers COUNT          COUNT sequential GETs answered in memory (no network, no event
///                                         loop): what a request costs in the session and engine layers alone
///     ferry-bench background-download URL PATH   one download through ferryd (a background session)
///     ferry-bench background-submit URL COUNT [SUBMITTERS]   COUNT downloads created in ferryd one a
///                                         request, timed; SUBMITTERS clients at once (default 1)
///     ferry-bench background-submit-batch URL COUNT   the same through the batch route, 1,000 a request
///     ferry-bench upload-chunked URL FILE IN_FLIGHT   FILE in parallel chunks (tus), IN_FLIGHT at once
///     ferry-bench autobahn WS_URL [--deflate]   the Autobahn suite's client cases against a fuzzing
///                                         server (Benchmarks/autobahn.sh)
@main
struct FerryBench {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("download", 3):
                try await download(arguments[1], to: arguments[2])
            case ("gets", 3):
                guard let count = Int(arguments[2]), count > 0 else { throw usage() }
                try await gets(arguments[1], count: count)
            case ("gets-engine", 3):
                guard let count = Int(arguments[2]), count > 0 else { throw usage() }
                try await engineGets(arguments[1], count: count)
            case ("gets-parallel", 4):
                guard let count = Int(arguments[2]), count > 0, let width = Int(arguments[3]), width > 0 else {
                    throw usage()
                }
                try await parallelGets(arguments[1], count: count, width: width)
            case ("upload-chunked", 4):
                guard let width = Int(arguments[3]), width > 0 else { throw usage() }
                try await uploadChunked(arguments[1], file: arguments[2], inFlight: width)
            case ("layers", 2):
                guard let count = Int(arguments[1]), count > 0 else { throw usage() }
                try await layers(count: count)
            case ("discard", 2):
                try await discard(arguments[1])
            case ("background-download", 3):
                try await backgroundDownload(arguments[1], to: arguments[2])
            case ("background-submit-batch", 3):
                guard let count = Int(arguments[2]), count > 0 else { throw usage() }
                try await backgroundSubmit(arguments[1], count: count, batched: true)
            case ("background-submit", 3), ("background-submit", 4):
                guard let count = Int(arguments[2]), count > 0,
                    let submitters = arguments.count == 4 ? Int(arguments[3]) : 1, submitters > 0
                else { throw usage() }
                try await backgroundSubmit(arguments[1], count: count, submitters: submitters)
            case ("autobahn", 2), ("autobahn", 3):
                guard arguments.count == 2 || arguments[2] == "--deflate" else { throw usage() }
                try await autobahn(arguments[1], deflate: arguments.count == 3)
            default:
                throw usage()
            }
        } catch {
            FileHandle.standardError.write(Data("ferry-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func usage() -> FerryError {
        FerryError(
            .invalidOperation,
            "usage: ferry-bench download URL PATH | gets URL COUNT | gets-engine URL COUNT | gets-parallel URL COUNT WIDTH | discard URL | layers COUNT | background-download URL PATH | background-submit URL COUNT [SUBMITTERS] | background-submit-batch URL COUNT | upload-chunked URL FILE IN_FLIGHT | autobahn WS_URL [--deflate]"
        )
    }

    /// The sessions' configuration: ephemeral, without an HTTP cache (the rows compare requests that reach
    /// the server with curl's, which has no cache: with one, repeated GETs of one URL would be served from
    /// memory); `FERRY_BENCH_HTTP=1.1` in the environment keeps https on HTTP/1.1 (as curl's
    /// `--http1.1`), `FERRY_BENCH_HTTP=3` on HTTP/3 (`--http3-only`), for side-by-side rows.
    static func configuration() -> SessionConfiguration {
        var configuration = SessionConfiguration.ephemeral
        configuration.urlCache = nil
        switch ProcessInfo.processInfo.environment["FERRY_BENCH_HTTP"] {
        case "1.1": configuration.httpVersionPreference = .http1Only
        case "3": configuration.httpVersionPreference = .http3Only
        default: break
        }
        return configuration
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw FerryError(.badURL, "not a URL: \(text)") }
        return url
    }

    static func download(_ text: String, to path: String) async throws {
        let session = Session(configuration: Self.configuration())
        defer { session.invalidateAndCancel() }
        let start = ContinuousClock.now
        let (file, response) = try await session.download(from: try url(text))
        let elapsed = ContinuousClock.now - start
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(at: file, to: URL(fileURLWithPath: path))
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        let seconds = Self.seconds(elapsed)
        print("status=\(response.statusCode) bytes=\(size) seconds=\(seconds) MBps=\(Double(size) / seconds / 1e6)")
    }

    static func uploadChunked(_ text: String, file: String, inFlight: Int) async throws {
        var configuration = Self.configuration()
        configuration.httpMaximumConnectionsPerHost = max(inFlight, 1)
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        var options = ChunkPlanner.Options()
        options.maximumChunksInFlight = inFlight
        options.targetChunkSeconds = 1
        let start = ContinuousClock.now
        let (_, response) = try await session.uploadInParallelChunks(
            for: Request(url: try url(text)),
            fromFile: URL(fileURLWithPath: file),
            options: options
        )
        let elapsed = ContinuousClock.now - start
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
        let seconds = Self.seconds(elapsed)
        print("status=\(response.statusCode) bytes=\(size) seconds=\(seconds) MBps=\(Double(size) / seconds / 1e6)")
        guard response.statusCode == 201 else { throw FerryError(.badServerResponse, "the upload was not assembled") }
    }

    static func parallelGets(_ text: String, count: Int, width: Int) async throws {
        var configuration = Self.configuration()
        configuration.httpMaximumConnectionsPerHost = width
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let request = Request(url: try url(text))
        let start = ContinuousClock.now
        let bytes = try await withThrowingTaskGroup(of: Int.self) { group in
            var started = 0
            var total = 0
            func add() {
                group.addTask {
                    let (data, response) = try await session.data(for: request)
                    guard response.statusCode == 200 else {
                        throw FerryError(.badServerResponse, "status \(response.statusCode)")
                    }
                    return data.count
                }
                started += 1
            }
            while started < min(width, count) { add() }
            while let done = try await group.next() {
                total += done
                if started < count { add() }
            }
            return total
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Self.seconds(elapsed)
        print("requests=\(count) bytes=\(bytes) seconds=\(seconds) rps=\(Double(count) / seconds)")
    }

    /// The CPU a request costs above the network: `count` GETs through a Session and through the engine
    /// alone (DataLoader), over a transport that answers at once from memory with a whole 1 KiB body.
    static func layers(count: Int) async throws {
        let request = Request(url: try url("http://127.0.0.1:9/small.bin"))
        let transport = InstantTransport()
        let session = Session(configuration: Self.configuration(), delegate: nil, transport: transport)
        defer { session.invalidateAndCancel() }
        var start = ContinuousClock.now
        for _ in 0..<count {
            let (data, _) = try await session.data(for: request)
            guard data.count == 1024 else { throw FerryError(.badServerResponse, "\(data.count) bytes") }
        }
        let sessionSeconds = Self.seconds(ContinuousClock.now - start)
        let loader = DataLoader(transport: transport)
        var hooks = DataLoader.Hooks()
        hooks.collect = true
        start = ContinuousClock.now
        for _ in 0..<count {
            let outcome = try await loader.perform(request, deadline: .now() + .seconds(60), hooks: hooks)
            guard case .loaded(let loaded) = outcome, loaded.body.readableBytes == 1024 else {
                throw FerryError(.badServerResponse, "not 1 KiB")
            }
        }
        let engineSeconds = Self.seconds(ContinuousClock.now - start)
        print(
            "requests=\(count) session_us=\(sessionSeconds / Double(count) * 1e6) engine_us=\(engineSeconds / Double(count) * 1e6)"
        )
    }

    static func discard(_ text: String) async throws {
        let session = Session(configuration: Self.configuration())
        defer { session.invalidateAndCancel() }
        let start = ContinuousClock.now
        let (bytes, response) = try await session.bytes(from: try url(text))
        var size = 0
        for try await chunk in bytes.chunks { size += chunk.count }
        let elapsed = ContinuousClock.now - start
        let seconds = Self.seconds(elapsed)
        print("status=\(response.statusCode) bytes=\(size) seconds=\(seconds) MBps=\(Double(size) / seconds / 1e6)")
    }

    static func engineGets(_ text: String, count: Int) async throws {
        var options = TransportOptions()
        options.httpVersion = configuration().httpVersionPreference
        let transport = try StandardTransport(options: options)
        let loader = DataLoader(transport: transport)
        let request = Request(url: try url(text))
        var hooks = DataLoader.Hooks()
        hooks.collect = true
        var bytes = 0
        let start = ContinuousClock.now
        for _ in 0..<count {
            let outcome = try await loader.perform(request, deadline: .now() + .seconds(60), hooks: hooks)
            guard case .loaded(let loaded) = outcome, loaded.status == 200 else {
                throw FerryError(.badServerResponse, "not a 200")
            }
            bytes += loaded.body.readableBytes
        }
        let elapsed = ContinuousClock.now - start
        try await transport.shutdown()
        let seconds = Self.seconds(elapsed)
        print("requests=\(count) bytes=\(bytes) seconds=\(seconds) rps=\(Double(count) / seconds)")
    }

    static func gets(_ text: String, count: Int) async throws {
        let session = Session(configuration: Self.configuration())
        defer { session.invalidateAndCancel() }
        let request = Request(url: try url(text))
        var bytes = 0
        let start = ContinuousClock.now
        for _ in 0..<count {
            let (data, response) = try await session.data(for: request)
            guard response.statusCode == 200 else {
                throw FerryError(.badServerResponse, "status \(response.statusCode)")
            }
            bytes += data.count
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Self.seconds(elapsed)
        print("requests=\(count) bytes=\(bytes) seconds=\(seconds) rps=\(Double(count) / seconds)")
    }
}

/// Background work through ferryd (this user's, or the one FERRY_HOME names).
extension FerryBench {
    /// One download through a background session: from resume to the file handed over, moved to `path`.
    static func backgroundDownload(_ text: String, to path: String) async throws {
        let delegate = MovingDelegate(destination: path)
        let session = Session(configuration: .background(identifier: "ferry-bench-\(getpid())"), delegate: delegate)
        defer { session.invalidateAndCancel() }
        let task = session.downloadTask(with: try url(text))
        let start = ContinuousClock.now
        task.resume()
        await task.waitUntilFinished()
        let elapsed = ContinuousClock.now - start
        if let error = task.error { throw error }
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        let seconds = Self.seconds(elapsed)
        print(
            "status=\(task.response?.statusCode ?? 0) bytes=\(size) seconds=\(seconds) MBps=\(Double(size) / seconds / 1e6)"
        )
    }

    /// `count` tasks created in the daemon through its control API, one request each, as the CLI does,
    /// from `submitters` concurrent clients (each with its own connection).
    static func backgroundSubmit(_ text: String, count: Int, submitters: Int = 1, batched: Bool = false) async throws {
        let client = try DaemonClient.forCurrentUser()
        try await client.ensureRunning()
        let session = "ferry-bench-submit-\(getpid())"
        let request = Request(url: try url(text))
        let start = ContinuousClock.now
        if batched {
            var left = count
            while left > 0 {
                let size = min(left, ControlAPI.TaskBatch.maximumCount)
                let batch = ControlAPI.TaskBatch(
                    tasks: Array(repeating: ControlAPI.TaskCreation(kind: .download, request: request), count: size)
                )
                let _: [BackgroundTaskInfo] = try await client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks/batch",
                    body: batch
                )
                left -= size
            }
        }
        if !batched {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for submitter in 0..<submitters {
                    // The first `count % submitters` submitters take one more.
                    let share = count / submitters + (submitter < count % submitters ? 1 : 0)
                    let own = submitter == 0 ? client : try DaemonClient.forCurrentUser()
                    group.addTask {
                        for _ in 0..<share {
                            let _: BackgroundTaskInfo = try await own.call(
                                "POST",
                                "/v1/sessions/\(session)/tasks",
                                body: ControlAPI.TaskCreation(kind: .download, request: request)
                            )
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Self.seconds(elapsed)
        print(
            "session=\(session) tasks=\(count) submitters=\(batched ? 1 : submitters) seconds=\(seconds) perSecond=\(Double(count) / seconds)"
        )
    }
}

/// Moves the delivered file to its destination during didFinishDownloadingTo.
final class MovingDelegate: DownloadDelegate, Sendable {
    let destination: String
    init(destination: String) { self.destination = destination }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        try? FileManager.default.removeItem(atPath: destination)
        try? FileManager.default.moveItem(atPath: location.path, toPath: destination)
    }
}

