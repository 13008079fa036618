import FerryCore
import FerryDaemon
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

// Thin main: the daemon lives in FerryDaemon (docs/ARCHITECTURE.md).
let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--version") {
    print(FerryVersion.current)
    exit(0)
}
if arguments.contains("--help") || arguments.contains("-h") {
    print(
        """
        usage: ferryd [--version]
        Runs Ferry's per-user transfer daemon in the foreground until SIGTERM or SIGINT.
        Environment: FERRY_HOME puts the socket, database and files under one directory;
        FERRY_SOCKET overrides the socket path; FERRY_LOG_LEVEL sets the log level (info);
        FERRY_CONNECTIONS_PER_HOST caps connections to one origin, all tasks together (8).
        Tuning for tests: FERRY_CHECKPOINT_BYTES, FERRY_CHECKPOINT_SECONDS, FERRY_MAX_TRANSFERS (0: no
        task runs; the control API still works), FERRY_RETRY_BASE_DELAY, FERRY_LAUNCH_BASE_DELAY,
        FERRY_THROUGHPUT_FLOOR, FERRY_THROUGHPUT_WINDOW.
        """
    )
    exit(0)
}

// A destination FIFO whose reader went away fails its task (EPIPE) instead of killing the daemon.
signal(SIGPIPE, SIG_IGN)
let environment = ProcessInfo.processInfo.environment
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = environment["FERRY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return handler
}
let logger = Logger(label: "ferryd")
do {
    var configuration = DaemonConfiguration(paths: try DaemonPaths(environment: environment))
    if let value = environment["FERRY_CHECKPOINT_BYTES"].flatMap(Int64.init) { configuration.checkpointBytes = value }
    if let value = environment["FERRY_CHECKPOINT_SECONDS"].flatMap(Double.init) {
        configuration.checkpointSeconds = value
    }
    if let value = environment["FERRY_MAX_TRANSFERS"].flatMap(Int.init), value >= 0 {
        configuration.maximumConcurrentTransfers = value
    }
    if let value = environment["FERRY_CONNECTIONS_PER_HOST"].flatMap(Int.init), value > 0 {
        configuration.maximumConnectionsPerHost = value
    }
    if let value = environment["FERRY_RETRY_BASE_DELAY"].flatMap(Double.init) { configuration.retry.baseDelay = value }
    if let value = environment["FERRY_LAUNCH_BASE_DELAY"].flatMap(Double.init) {
        configuration.launchBaseDelay = value
    }
    if let value = environment["FERRY_THROUGHPUT_FLOOR"].flatMap(Int64.init) { configuration.throughputFloor = value }
    if let value = environment["FERRY_THROUGHPUT_WINDOW"].flatMap(Double.init) {
        configuration.throughputWindow = value
    }
    try await Daemon.run(configuration, logger: logger)
} catch {
    FileHandle.standardError.write(Data("ferryd: \(error)\n".utf8))
    exit(1)
}
