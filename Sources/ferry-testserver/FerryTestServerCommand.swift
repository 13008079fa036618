import ArgumentParser
import Dispatch
import FerryTestServer
import Foundation

/// `ferry-testserver`: the fault-injecting HTTP server of Ferry's tests and benchmarks, as a program.
/// Prints `listening on http://127.0.0.1:PORT` as its first line and serves until SIGINT or SIGTERM.
@main
struct FerryTestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-testserver",
        abstract: "The HTTP test server with fault injection used by Ferry's tests and benchmarks.",
        discussion: "Routes and fault knobs: docs/TESTSERVER.md. Every listener binds 127.0.0.1 only."
    )

    @Option(help: "Port of the main HTTP/1.1 listener (0 picks a free port).")
    var port: Int = 0

    @Option(name: .customLong("alt-port"), help: "Port of the second origin, for cross-origin redirects.")
    var alternatePort: Int = 0

    @Option(name: .customLong("tls-port"), help: "Port of the HTTPS listener (HTTP/2 and HTTP/1.1 by ALPN).")
    var tlsPort: Int = 0

    @Flag(name: .customLong("no-tls"), help: "Do not start the HTTPS listener.")
    var noTLS = false

    @Option(name: .customLong("resumable-port"), help: "Port of the resumable-upload listener.")
    var resumablePort: Int = 0

    @Flag(name: .customLong("no-resumable"), help: "Do not start the resumable-upload listener.")
    var noResumable = false

    @Option(help: "Serve the files of this directory under /files/.")
    var root: String?

    @Option(help: "PEM certificate chain for HTTPS (default: a generated test CA and leaf).")
    var cert: String?

    @Option(help: "PEM private key for --cert.")
    var key: String?

    @Option(name: .customLong("ca-out"), help: "Write the certificate clients must trust (PEM) to this file.")
    var caOut: String?

    @Option(help: "Event-loop threads.")
    var threads: Int = 2

    func validate() throws {
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
        if let root {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--root \(root) is not a directory")
            }
        }
        guard (0...65_535).contains(port), (0...65_535).contains(alternatePort), (0...65_535).contains(tlsPort),
            (0...65_535).contains(resumablePort)
        else { throw ValidationError("ports run from 0 to 65535") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
    }

    func run() async throws {
        // Catch the signals before announcing the port: a script may stop the server right away.
        let terminated = TerminationSignal()
        var configuration = TestServer.Configuration()
        configuration.port = port
        configuration.alternatePort = alternatePort
        configuration.tlsPort = noTLS ? nil : tlsPort
        configuration.resumablePort = noResumable ? nil : resumablePort
        configuration.root = root.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        configuration.threads = threads
        if let cert, let key {
            configuration.certificates = try TestCertificates.load(certificateFile: cert, keyFile: key)
        }
        let server = try await TestServer.start(configuration)
        if let caOut {
            try Data(server.certificates.trustRootPEM.utf8).write(to: URL(fileURLWithPath: caOut))
        }
        var lines = ["listening on \(server.baseURL)"]
        lines.append("alternate origin \(server.origin(.alternate)!)")
        if let tls = server.origin(.tls) {
            lines.append("https (h2, http/1.1) \(tls)" + (caOut.map { " trust root \($0)" } ?? ""))
        }
        if let resumable = server.origin(.resumable) { lines.append("resumable uploads \(resumable)") }
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))

        await terminated.wait()
        try await server.shutdown()
    }
}
/// SIGINT and SIGTERM, caught from creation on, awaited with ``wait()``.
private final class TerminationSignal: @unchecked Sendable {
    // Safe: `arrived` and `continuation` are only touched under `lock`.
    private let lock = NSLock()
    private var arrived = false
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "ferry-testserver.signals")

    init() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler { [weak self] in self?.fire() }
            sources.append(source)
            source.resume()
        }
    }

    private func fire() {
        lock.lock()
        arrived = true
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume()
    }

    /// Returns once a signal has arrived (at once if one already has).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if arrived {
                lock.unlock()
                continuation.resume()
            } else {
                self.continuation = continuation
                lock.unlock()
            }
        }
    }
}
