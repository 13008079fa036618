#if canImport(Glibc)
import Glibc
#endif

/// Writes to stdout and stderr without Foundation's FileHandle, which traps when a reader closes the
/// pipe (`ferry events | head -1`). A closed stdout ends the process quietly: what was not printed
/// (e.g. events not yet acknowledged) stays for next time.
enum Console {
    /// Writes `text` to stdout.
    static func out(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `bytes` to stdout.
    static func out(bytes: some Sequence<UInt8>) { write(Array(bytes), to: STDOUT_FILENO) }

    /// Writes `text` to stderr.
    static func error(_ text: String) { write(text, to: STDERR_FILENO) }

    /// An error line: `ferry: text`.
    static func errorLine(_ text: String) {
        // Above a board of progress bars (-Z on a terminal), not into its last line.
        if let board = ProgressBoard.drawing.withLock({ $0 }) {
            board.message("ferry: \(text)\n")
        } else {
            error("ferry: \(text)\n")
        }
    }

    /// Writes a body's bytes to stdout (`-o -`), failing when they cannot be written (a full disk
    /// behind a redirection, say). A reader that went away (EPIPE) ends the command quietly, as `head`
    /// expects.
    static func outBody(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE {
                    // curl's words and status: the body did not all reach its reader.
                    errorLine("failure writing output to destination: stdout was closed before the body ended")
                    exit(ExitStatus.outputClosed.rawValue)
                }
                throw CLIFailure("cannot write to stdout: \(String(cString: strerror(errno)))", status: .localFile)
            }
            offset += written
        }
    }

    private static func write(_ text: String, to descriptor: Int32) {
        write(Array(text.utf8), to: descriptor)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE, descriptor == STDOUT_FILENO { exit(0) }
                return
            }
            offset += written
        }
    }
}
