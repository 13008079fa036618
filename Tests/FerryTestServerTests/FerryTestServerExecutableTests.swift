import FerryTestServer
import Foundation
import Testing

/// Runs the built `ferry-testserver` as people and scripts do.
@Suite(.serialized) struct FerryTestServerExecutableTests {
    /// The directory of the built products: the test bundle sits beside the executables.
    static var productsDirectory: URL {
        URL(fileURLWithPath: ChildProcess.builtProduct("ferry-testserver")).deletingLastPathComponent()
    }

    /// A running `ferry-testserver`, stopped with SIGTERM.
    final class RunningServer {
        let process: ChildProcess
        var firstLine = ""
        /// The lines after the first: the other listeners.
        var otherLines: [String] = []
        var startupSeconds = 0.0

        init(arguments: [String]) async throws {
            let started = Date()
            process = try ChildProcess.spawn(
                FerryTestServerExecutableTests.productsDirectory.appendingPathComponent("ferry-testserver").path,
                arguments: arguments,
                output: .pipes
            )
            let handle = process.standardOutput!
            // The server prints all its lines in one write (atomic on a pipe), so one read has them all.
            // Read on a thread of its own: a blocking read stalls the cooperative pool.
            let buffer = await offPool {
                var buffer: [UInt8] = []
                while !buffer.contains(UInt8(ascii: "\n")) {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    buffer += data
                }
                return buffer
            }
            startupSeconds = Date().timeIntervalSince(started)
            let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
            firstLine = lines.first ?? ""
            otherLines = Array(lines.dropFirst())
        }

        var baseURL: String { firstLine.replacingOccurrences(of: "listening on ", with: "") }

        func stop() async -> Int32 {
            process.terminate()
            await process.exited()
            return process.terminationStatus
        }
    }

    static func curl(_ arguments: [String]) async throws -> (status: Int32, output: [UInt8]) {
        let process = try ChildProcess.spawn("/usr/bin/env", arguments: ["curl", "-s"] + arguments)
        let data = await process.standardOutput!.readToEndOffPool()
        await process.exited()
        return (process.terminationStatus, Array(data))
    }

    /// Runs `body` with a server started with `arguments`, stopped afterwards (also when `body` throws).
    /// - Returns: the server's exit status after SIGTERM.
    @discardableResult
    static func withRunningServer(
        _ arguments: [String],
        _ body: (RunningServer) async throws -> Void
    ) async throws -> Int32 {
        let server = try await RunningServer(arguments: arguments)
        do {
            try await body(server)
        } catch {
            _ = await server.stop()
            throw error
        }
        return await server.stop()
    }

    @Test func startsAndServesRangesToCurl() async throws {
        try await Self.withRunningServer(["--port", "0"]) { server in
            #expect(server.firstLine.hasPrefix("listening on http://127.0.0.1:"))
            #expect(Int(server.baseURL.split(separator: ":").last ?? "") ?? 0 > 0)
            // How long it took is printed, not judged: inside a loaded full run it took 7.5 s (timing
            // claims belong in benchmarks).
            print("ferry-testserver started in \(server.startupSeconds) s")

            let whole = try await Self.curl(["\(server.baseURL)/bytes/1000?seed=7"])
            #expect(whole.status == 0, "curl must be installed (.ci/run installs it)")
            #expect(whole.output.count == 1000)
            let range = try await Self.curl(["-r", "100-199", "\(server.baseURL)/bytes/1000?seed=7"])
            #expect(Bytes(range.output) == Bytes(Array(whole.output[100..<200])))
            let unsatisfiable = try await Self.curl([
                "-o", "/dev/null", "-w", "%{http_code}", "-r", "2000-", "\(server.baseURL)/bytes/1000",
            ])
            #expect(String(decoding: unsatisfiable.output, as: UTF8.self) == "416")
        }
    }

    @Test func cutsAreExactOverHTTP2() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let trustRoot = directory.appendingPathComponent("ca.pem").path
        try await Self.withRunningServer(["--port", "0", "--ca-out", trustRoot]) { server in
            let tlsPort = try #require(
                server.otherLines.first(where: { $0.hasPrefix("https") })?.split(separator: ":").last
            )
            .prefix(while: { $0.isNumber })
            let result = try await Self.curl([
                "--http2", "--cacert", trustRoot, "-o", "/dev/null", "-w", "%{http_version} %{size_download}",
                "https://127.0.0.1:\(tlsPort)/bytes/1000000?close_after=70000",
            ])
            #expect(result.status != 0, "curl reports the cut")
            #expect(String(decoding: result.output, as: UTF8.self) == "2 70000")
        }
    }

    @Test func stopsCleanlyOnSIGTERM() async throws {
        let status = try await Self.withRunningServer(["--port", "0", "--no-tls", "--no-resumable"]) { server in
            #expect(server.firstLine.hasPrefix("listening on "))
        }
        #expect(status == 0)
    }

    @Test func refusesBadArguments() async throws {
        let process = try ChildProcess.spawn(
            Self.productsDirectory.appendingPathComponent("ferry-testserver").path,
            arguments: ["--root", "/definitely/not/here"]
        )
        let message = String(decoding: await process.standardError!.readToEndOffPool(), as: UTF8.self)
        await process.exited()
        #expect(process.terminationStatus != 0)
        #expect(message.contains("is not a directory"))
    }
}
