import FerryCore
import FerryDaemon
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

// Thin main: the daemon lives in FerryDaemon (docs/ARCHITECTURE.md, docs/OPERATIONS.md).
let usage = """
    usage: ferryd [--log-level LEVEL] [--log-file PATH|-] [--log-max-bytes N] [--metrics-address HOST:PORT]
                  [--prune-after DURATION|off] [--version]
    Runs Ferry's per-user transfer daemon in the foreground until SIGTERM or SIGINT.
      --log-level LEVEL          trace, debug, info (default), notice, warning, error or critical
                                 (FERRY_LOG_LEVEL)
      --log-file PATH|-          JSON lines, rotated to PATH.1 past --log-max-bytes (default: ferryd.log in
                                 the state directory; -: standard error) (FERRY_LOG_FILE)
      --log-max-bytes N          the log's size cap (default 10485760) (FERRY_LOG_MAX_BYTES)
      --metrics-address H:P      serve /metrics over TCP on a loopback address too, e.g. 127.0.0.1:9466
                                 (FERRY_METRICS_ADDRESS); it is always on the control socket
      --prune-after D|off        remove finished tasks this long after they finished: 90s, 30m, 12h, 7d
                                 (default 7d) (FERRY_PRUNE_AFTER)
    Environment: FERRY_HOME puts the socket, database and files under one directory;
    FERRY_SOCKET overrides the socket path; FERRY_CONNECTIONS_PER_HOST caps connections to one origin,
    all tasks together (8); FERRY_MAX_TASKS_PER_SESSION caps the tasks one session holds, finished
    ones included until removed (10000; past it a creation gets 409); FERRY_REDACT_QUERY names the
    URL query parameters whose values listings hide (comma-separated; default token, key, sig and
    the like; empty: none). Socket activation: a listening socket passed by systemd (LISTEN_FDS,
    contrib/systemd/ferryd.socket) is served instead of binding the path.
    Tuning for tests: FERRY_CHECKPOINT_BYTES, FERRY_CHECKPOINT_SECONDS, FERRY_MAX_TRANSFERS (0: no
    task runs; the control API still works), FERRY_RETRY_BASE_DELAY, FERRY_LAUNCH_BASE_DELAY,
    FERRY_THROUGHPUT_FLOOR, FERRY_THROUGHPUT_WINDOW, FERRY_HOUSEKEEPING_INTERVAL (seconds).
    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("ferryd: \(message)\n".utf8))
    exit(status)
}

// Options: flags win over their environment variables.
var options = ProcessInfo.processInfo.environment
let flags = ["--log-level": "FERRY_LOG_LEVEL", "--log-file": "FERRY_LOG_FILE", "--log-max-bytes": "FERRY_LOG_MAX_BYTES",
    "--metrics-address": "FERRY_METRICS_ADDRESS", "--prune-after": "FERRY_PRUNE_AFTER"]
var arguments = CommandLine.arguments.dropFirst()[...]
while let argument = arguments.popFirst() {
    switch argument {
    case "--version":
        print(FerryVersion.current)
        exit(0)
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        let (name, inline) = argument.split(separator: "=", maxSplits: 1).map(String.init).splitFirst()
        guard let variable = flags[name] else { fail("unknown option '\(argument)'; see ferryd --help", status: 2) }
        guard let value = inline ?? arguments.popFirst() else { fail("\(name) needs a value; see ferryd --help", status: 2) }
        options[variable] = value
    }
}

// A destination FIFO whose reader went away fails its task (EPIPE) instead of killing the daemon.
signal(SIGPIPE, SIG_IGN)
let paths: DaemonPaths
do {
    paths = try DaemonPaths(environment: options)
} catch {
    fail("\(error)", status: 1)
}
let level: Logger.Level
if let text = options["FERRY_LOG_LEVEL"] {
    guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
        fail("the log level '\(text)' is not one of trace, debug, info, notice, warning, error, critical", status: 2)
    }
    level = parsed
} else {
    level = .info
}
let logPath = options["FERRY_LOG_FILE"].flatMap { $0.isEmpty ? nil : $0 } ?? paths.logFile
let output: @Sendable (String) -> Void
if logPath == "-" {
    output = { line in FileHandle.standardError.write(Data(line.utf8)) }
} else {
    let cap = options["FERRY_LOG_MAX_BYTES"].map { text -> Int64 in
        guard let value = Int64(text), value > 0 else { fail("FERRY_LOG_MAX_BYTES must be a number of bytes", status: 2) }
        return value
    }
    do {
        try FileManager.default.createDirectory(
            atPath: (logPath as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let file = try RotatingLogFile(path: logPath, maximumBytes: cap ?? 10 << 20)
        output = { line in file.append(line) }
    } catch {
        fail("\(error)", status: 1)
    }
}
LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level, output: output) }
let logger = Logger(label: "ferryd")

var configuration = DaemonConfiguration(paths: paths)
if let value = options["FERRY_CHECKPOINT_BYTES"].flatMap(Int64.init) { configuration.checkpointBytes = value }
if let value = options["FERRY_CHECKPOINT_SECONDS"].flatMap(Double.init) { configuration.checkpointSeconds = value }
if let value = options["FERRY_MAX_TRANSFERS"].flatMap(Int.init), value >= 0 {
    configuration.maximumConcurrentTransfers = value
}
if let value = options["FERRY_CONNECTIONS_PER_HOST"].flatMap(Int.init), value > 0 {
    configuration.maximumConnectionsPerHost = value
}
if let value = options["FERRY_MAX_TASKS_PER_SESSION"].flatMap(Int.init), value > 0 {
    configuration.maximumTasksPerSession = value
}
configuration.redaction = Redaction.fromEnvironment(options)
if let value = options["FERRY_RETRY_BASE_DELAY"].flatMap(Double.init) { configuration.retry.baseDelay = value }
if let value = options["FERRY_LAUNCH_BASE_DELAY"].flatMap(Double.init) { configuration.launchBaseDelay = value }
if let value = options["FERRY_THROUGHPUT_FLOOR"].flatMap(Int64.init) { configuration.throughputFloor = value }
if let value = options["FERRY_THROUGHPUT_WINDOW"].flatMap(Double.init) { configuration.throughputWindow = value }
if let value = options["FERRY_HOUSEKEEPING_INTERVAL"].flatMap(Double.init), value > 0 {
    configuration.housekeepingInterval = value
}
if let text = options["FERRY_PRUNE_AFTER"] {
    if text == "off" || text == "never" {
        configuration.pruneAfter = nil
    } else if let seconds = DurationText.seconds(text) {
        configuration.pruneAfter = seconds
    } else {
        fail("the prune age '\(text)' is not a duration (90s, 30m, 12h, 7d) or 'off'", status: 2)
    }
}
if let address = options["FERRY_METRICS_ADDRESS"], !address.isEmpty {
    configuration.metricsAddress = address
}
do {
    configuration.inheritedSocket = try SocketActivation.inheritedSocket(environment: options)
    try await Daemon.run(configuration, logger: logger)
} catch {
    logger.critical("ferryd cannot run: \(error)")
    fail("\(error)", status: 1)
}

extension Array where Element == String {
    /// The first element and, when there is one, the second (`--flag=value`).
    fileprivate func splitFirst() -> (String, String?) { (self[0], count > 1 ? self[1] : nil) }
}
