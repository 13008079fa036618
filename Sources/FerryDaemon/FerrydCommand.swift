public import ArgumentParser
import FerryCore
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `ferryd`'s command line (swift-argument-parser): its flags, each of which wins over its environment
/// variable, then the daemon in the foreground until SIGTERM or SIGINT. The `ferryd` executable only
/// calls ``main(arguments:)``.
public struct FerrydCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ferryd",
        abstract: "Runs Ferry's per-user transfer daemon in the foreground until SIGTERM or SIGINT.",
        discussion: """
            Environment: FERRY_HOME puts the socket, database and files under one directory; \
            FERRY_SOCKET overrides the socket path; FERRY_CONNECTIONS_PER_HOST caps connections to one origin, \
            all tasks together (8); FERRY_MAX_TASKS_PER_SESSION caps the tasks one session holds, finished \
            ones included until removed (10000; past it a creation gets 409); FERRY_REDACT_QUERY names the \
            URL query parameters whose values listings hide (comma-separated; default token, key, sig and \
            the like; empty: none). Socket activation: a listening socket passed by systemd (LISTEN_FDS, \
            contrib/systemd/ferryd.socket) is served instead of binding the path.

            Tuning for tests: FERRY_CHECKPOINT_BYTES, FERRY_CHECKPOINT_SECONDS, FERRY_MAX_TRANSFERS (0: no \
            task runs; the control API still works), FERRY_RETRY_BASE_DELAY, FERRY_LAUNCH_BASE_DELAY, \
            FERRY_THROUGHPUT_FLOOR, FERRY_THROUGHPUT_WINDOW, FERRY_HOUSEKEEPING_INTERVAL (seconds).
            """,
        version: FerryVersion.current
    )

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp(
            "trace, debug, info (default), notice, warning, error or critical (FERRY_LOG_LEVEL).",
            valueName: "level"
        )
    )
    var logLevel: String?

    @Option(
        name: .customLong("log-file"),
        help: ArgumentHelp(
            "JSON lines, rotated to PATH.1 past --log-max-bytes (default: ferryd.log in the state directory; -: standard error) (FERRY_LOG_FILE).",
            valueName: "path"
        )
    )
    var logFile: String?

    @Option(
        name: .customLong("log-max-bytes"),
        help: ArgumentHelp("The log's size cap (default 10485760) (FERRY_LOG_MAX_BYTES).", valueName: "n")
    )
    var logMaxBytes: String?

    @Option(
        name: .customLong("metrics-address"),
        help: ArgumentHelp(
            "Serve /metrics over TCP on a loopback address too, e.g. 127.0.0.1:9466 (FERRY_METRICS_ADDRESS); it is always on the control socket.",
            valueName: "host:port"
        )
    )
    var metricsAddress: String?

    @Option(
        name: .customLong("prune-after"),
        help: ArgumentHelp(
            "Remove finished tasks this long after they finished: 90s, 30m, 12h, 7d (default 7d), or off (FERRY_PRUNE_AFTER).",
            valueName: "duration"
        )
    )
    var pruneAfter: String?

    public init() {}

    /// The environment with the flags given in place of their variables.
    func settings(_ environment: [String: String]) -> [String: String] {
        var settings = environment
        let flags: [(String?, String)] = [
            (logLevel, "FERRY_LOG_LEVEL"), (logFile, "FERRY_LOG_FILE"), (logMaxBytes, "FERRY_LOG_MAX_BYTES"),
            (metricsAddress, "FERRY_METRICS_ADDRESS"), (pruneAfter, "FERRY_PRUNE_AFTER"),
        ]
        for case (let value?, let variable) in flags { settings[variable] = value }
        return settings
    }

    public func run() async throws {
        let settings = settings(ProcessInfo.processInfo.environment)
        // A destination FIFO whose reader went away fails its task (EPIPE) instead of killing the daemon.
        signal(SIGPIPE, SIG_IGN)
        let configuration: DaemonConfiguration
        let level: Logger.Level
        do {
            configuration = try DaemonConfiguration(settings: settings)
            level = try Self.logLevel(settings["FERRY_LOG_LEVEL"])
        } catch let error as UsageError {
            throw error
        } catch {
            throw StartError(message: "\(error)")
        }
        let output = try Self.logOutput(settings, paths: configuration.paths)
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level, output: output) }
        let logger = Logger(label: "ferryd")
        do {
            var configuration = configuration
            configuration.inheritedSocket = try SocketActivation.inheritedSocket(environment: settings)
            try await Daemon.run(configuration, logger: logger)
        } catch {
            logger.critical("ferryd cannot run: \(error)")
            throw StartError(message: "\(error)")
        }
    }

    /// A value a flag or variable cannot take: exit status 2, as for an unknown option.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// The daemon could not start or stopped with an error: exit status 1.
    struct StartError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    static func logLevel(_ text: String?) throws -> Logger.Level {
        guard let text else { return .info }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw UsageError(description: "the log level '\(text)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        return level
    }

    /// Where the log's lines go: standard error for `-`, else a rotating file.
    static func logOutput(_ settings: [String: String], paths: DaemonPaths) throws -> @Sendable (String) -> Void {
        let path = settings["FERRY_LOG_FILE"].flatMap { $0.isEmpty ? nil : $0 } ?? paths.logFile
        if path == "-" { return { line in FileHandle.standardError.write(Data(line.utf8)) } }
        var cap: Int64 = 10 << 20
        if let text = settings["FERRY_LOG_MAX_BYTES"] {
            guard let value = Int64(text), value > 0 else { throw UsageError(description: "FERRY_LOG_MAX_BYTES must be a number of bytes") }
            cap = value
        }
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            let file = try RotatingLogFile(path: path, maximumBytes: cap)
            return { line in file.append(line) }
        } catch {
            throw StartError(message: "\(error)")
        }
    }

    /// Parses `arguments` and runs the daemon; exits 0 after `--help` or `--version`, 2 for an unknown
    /// option or a value that cannot be used, 1 when the daemon cannot run (each with a line saying why).
    public static func main(arguments: [String]) async -> Never {
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            Foundation.exit(0)
        } catch let error as UsageError {
            fail(error.description, status: 2)
        } catch let error as StartError {
            fail(error.message, status: 1)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version.
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data("ferryd: \(message)\n".utf8))
        Foundation.exit(status)
    }
}

extension DaemonConfiguration {
    /// The configuration `settings` (the environment, with ferryd's flags in place of their variables)
    /// asks for.
    /// - Throws: ``FerrydCommand/UsageError`` for a value that cannot be used; what ``DaemonPaths``
    ///   throws when the state directory cannot be found.
    init(settings: [String: String]) throws {
        self.init(paths: try DaemonPaths(environment: settings))
        if let value = settings["FERRY_CHECKPOINT_BYTES"].flatMap(Int64.init) { checkpointBytes = value }
        if let value = settings["FERRY_CHECKPOINT_SECONDS"].flatMap(Double.init) { checkpointSeconds = value }
        if let value = settings["FERRY_MAX_TRANSFERS"].flatMap(Int.init), value >= 0 { maximumConcurrentTransfers = value }
        if let value = settings["FERRY_CONNECTIONS_PER_HOST"].flatMap(Int.init), value > 0 { maximumConnectionsPerHost = value }
        if let value = settings["FERRY_MAX_TASKS_PER_SESSION"].flatMap(Int.init), value > 0 { maximumTasksPerSession = value }
        redaction = Redaction.fromEnvironment(settings)
        if let value = settings["FERRY_RETRY_BASE_DELAY"].flatMap(Double.init) { retry.baseDelay = value }
        if let value = settings["FERRY_LAUNCH_BASE_DELAY"].flatMap(Double.init) { launchBaseDelay = value }
        if let value = settings["FERRY_THROUGHPUT_FLOOR"].flatMap(Int64.init) { throughputFloor = value }
        if let value = settings["FERRY_THROUGHPUT_WINDOW"].flatMap(Double.init) { throughputWindow = value }
        if let value = settings["FERRY_HOUSEKEEPING_INTERVAL"].flatMap(Double.init), value > 0 { housekeepingInterval = value }
        if let text = settings["FERRY_PRUNE_AFTER"] {
            if text == "off" || text == "never" {
                pruneAfter = nil
            } else if let seconds = DurationText.seconds(text) {
                pruneAfter = seconds
            } else {
                throw FerrydCommand.UsageError(description: "the prune age '\(text)' is not a duration (90s, 30m, 12h, 7d) or 'off'")
            }
        }
        if let address = settings["FERRY_METRICS_ADDRESS"], !address.isEmpty { metricsAddress = address }
    }
}
