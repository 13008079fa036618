/// Where a daemon keeps its socket and state (docs/ARCHITECTURE.md, "Processes"), worked out from the
/// environment without touching the disk.
///
/// - `FERRY_HOME` set: everything under that one directory (tests and scripts run isolated daemons).
/// - else the socket in `$XDG_RUNTIME_DIR/ferry/` (or the state directory when that is unset) and the
///   state in `$XDG_STATE_HOME/ferry` (default `~/.local/state/ferry`).
/// - `FERRY_SOCKET` overrides the socket path alone.
public struct DaemonPaths: Sendable, Hashable {
    /// The control socket.
    public var socket: String
    /// The state directory: database, partial and delivered files.
    public var stateDirectory: String

    /// Paths as given.
    public init(socket: String, stateDirectory: String) {
        self.socket = socket
        self.stateDirectory = stateDirectory
    }

    /// The paths for `environment` (normally `ProcessInfo.processInfo.environment`).
    /// - Throws: ``FerryError`` when no directory can be worked out (no `HOME`), or a socket path is too
    ///   long for a unix socket (107 bytes).
    public init(environment: [String: String]) throws {
        func nonEmpty(_ key: String) -> String? {
            guard let value = environment[key], !value.isEmpty else { return nil }
            return value
        }
        let runtime: String?
        if let home = nonEmpty("FERRY_HOME") {
            stateDirectory = home
            runtime = home
        } else {
            if let state = nonEmpty("XDG_STATE_HOME") {
                stateDirectory = state + "/ferry"
            } else if let home = nonEmpty("HOME") {
                stateDirectory = home + "/.local/state/ferry"
            } else {
                throw FerryError(.invalidOperation, "cannot place ferryd's state: set FERRY_HOME or HOME")
            }
            runtime = nonEmpty("XDG_RUNTIME_DIR").map { $0 + "/ferry" }
        }
        socket = nonEmpty("FERRY_SOCKET") ?? (runtime ?? stateDirectory) + "/ferryd.sock"
        guard socket.utf8.count <= 107 else {
            throw FerryError(
                .invalidOperation,
                "the socket path \(socket) is longer than a unix socket allows (107 bytes); set FERRY_SOCKET to a shorter one"
            )
        }
    }

    /// The SQLite database.
    public var database: String { stateDirectory + "/ferry.sqlite" }
    /// Partial files of downloads in progress.
    public var partialDirectory: String { stateDirectory + "/partial" }
    /// Finished downloads waiting to be handed to their client.
    public var deliveryDirectory: String { stateDirectory + "/deliver" }
    /// The lock held by the running daemon (stops a double start).
    public var lockFile: String { stateDirectory + "/ferryd.lock" }
    /// Where ferryd writes its log: JSON lines, rotated to `ferryd.log.1` when it passes its size cap.
    public var logFile: String { stateDirectory + "/ferryd.log" }
    /// Where the standard output and error of a daemon started on demand, and of the client programs it
    /// launches, go (a crash's last words land here, not in the JSON log).
    public var outputFile: String { stateDirectory + "/ferryd.out" }
    /// The user's network settings (metered and constrained overrides, the daemon-wide bandwidth limit),
    /// read by ferryd and by in-process sessions.
    public var networkSettingsFile: String { stateDirectory + "/network.json" }
}
