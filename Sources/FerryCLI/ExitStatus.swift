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
    /// The output went nowhere: `-o -`'s reader stopped reading (curl's 23, "failure writing output to
    /// destination": `ferry get -o - URL | head -c 100` must not look like a whole download).
    case outputClosed = 23
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
    /// What kind of failure, for `--json`: the engine's error code name (`timedOut`,
    /// `cannotConnectToHost`, …), `httpError` for an HTTP error status, else the exit status's name.
    public var kind: String
    /// The HTTP status that made the transfer fail, if one did.
    public var httpStatus: Int?
    /// `-w`'s figures of the failed transfer (curl prints its write-out for failures too).
    var writeOut: WriteOut.Values?

    /// A failure.
    public init(_ message: String, status: ExitStatus, kind: String? = nil, httpStatus: Int? = nil) {
        self.message = message
        self.status = status
        self.kind = kind ?? (httpStatus == nil ? "\(status)" : "httpError")
        self.httpStatus = httpStatus
    }

    /// The failure of an engine or daemon error.
    public init(_ error: FerryError, context: String? = nil) {
        // The library's advice in the command line's words (issue 41: "the session's TLS settings").
        let message = error.message.replacingOccurrences(
            of: FerryError.trustTheIssuerHint,
            with: "trust its CA with --cacert FILE (or SSL_CERT_FILE)"
        )
        let text = context.map { "\($0): \(message)" } ?? message
        self.init(text, status: .of(error), kind: error.code.name)
    }

    public var description: String { message }
}
