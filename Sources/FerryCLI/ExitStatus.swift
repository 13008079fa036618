public import FerryCore

/// The exit statuses of `ferry`, a contract for scripts (docs/CLI.md lists them).
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Everything asked for is complete (and verified, when asked).
    case success = 0
    /// A transfer failed: the network, a timeout, an HTTP error status, a server that lied.
    case transferFailed = 1
    /// The command line or an input is wrong: an unknown option, a bad URL or header.
    case usage = 2
    /// A download's checksum did not match; nothing was kept.
    case checksumMismatch = 3
    /// A local file could not be created, written or read (a full disk, a missing directory).
    case localFile = 4
    /// ferryd is not running, could not be started, or refused the request.
    case daemon = 5
    /// Interrupted (SIGINT or SIGTERM); a download can be continued with `-C`.
    case interrupted = 130

    /// The status for an error of the engine or the daemon.
    public static func of(_ error: FerryError) -> ExitStatus {
        switch error.code {
        case .badURL, .unsupportedURL, .invalidHeader, .invalidOperation:
            return .usage
        case .cannotCreateFile, .cannotWriteToFile, .cannotMoveFile, .fileDoesNotExist, .fileIsDirectory,
            .noPermissionsToReadFile:
            return .localFile
        case .backgroundSessionWasDisconnected, .backgroundSessionInUseByAnotherProcess:
            return .daemon
        default:
            return .transferFailed
        }
    }
}

/// A failure the command reports in one line on stderr and exits with.
public struct CLIFailure: Error, CustomStringConvertible, Sendable {
    /// The one line (without the `ferry: ` prefix).
    public var message: String
    /// The exit status.
    public var status: ExitStatus

    /// A failure.
    public init(_ message: String, status: ExitStatus) {
        self.message = message
        self.status = status
    }

    /// The failure of an engine or daemon error.
    public init(_ error: FerryError, context: String? = nil) {
        let text = context.map { "\($0): \(error.message)" } ?? error.message
        self.init(text, status: .of(error))
    }

    public var description: String { message }
}
