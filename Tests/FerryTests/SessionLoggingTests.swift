import Ferry
import FerryTestServer
import Foundation
import Logging
import Synchronization
import Testing

/// A session given a Logger logs its exchanges at debug level; without one it logs nothing.
@Suite struct SessionLoggingTests {
    @Test func eachExchangeIsLoggedAtDebugLevel() async throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "app") { label in
            var handler = CapturingLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
            handler.logLevel = .debug
            return handler
        }
        logger.logLevel = .debug
        try await TestServer.withServer { server in
            let session = Session(configuration: .ephemeral, logger: logger)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(for: request(server.url("/bytes/10")))
            _ = try? await session.data(for: request("http://127.0.0.1:1/refused"))
        }
        let logged = lines.withLock { $0 }
        #expect(logged.contains { $0.hasPrefix("debug GET http://127.0.0.1:") && $0.hasSuffix("/bytes/10 → 200 over http/1.1") })
        #expect(logged.contains { $0.hasPrefix("debug GET http://127.0.0.1:1/refused failed: ") })
    }
}

/// A handler that hands each line to a closure: `LEVEL message`.
struct CapturingLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String
    let output: @Sendable (String) -> Void

    init(label: String, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.output = output
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        output("\(event.level) \(event.message)")
    }
}
