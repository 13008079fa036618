public import ArgumentParser
import Ferry
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `ferry` command: downloads and uploads in the foreground, background transfers through ferryd,
/// and the daemon itself. Errors are one line on stderr; the exit statuses are ``ExitStatus``.
public struct FerryCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ferry",
        abstract: "Fast, resumable HTTP transfers; background transfers that survive the command (ferryd).",
        discussion: """
            Exit status: 0 success, 1 a transfer failed, 2 bad usage or input, 3 checksum mismatch, \
            4 a local file problem, 5 ferryd unavailable, 130 interrupted (continue a download with -C).
            """,
        version: FerryVersion.current,
        subcommands: [
            GetCommand.self, PutCommand.self, WebSocketCommand.self, ListCommand.self, WatchCommand.self, WaitCommand.self,
            PauseCommand.self, ResumeCommand.self, CancelCommand.self, EventsCommand.self, CleanCommand.self,
            PolicyCommand.self, PriorityCommand.self, LimitCommand.self, UICommand.self, DaemonCommand.self,
        ]
    )

    public init() {}

    /// Runs the command line: help and version on stdout, every error as one line on stderr with its
    /// exit status.
    public static func runCommandLine() async {
        signal(SIGPIPE, SIG_IGN)
        // `ferry --version` alone, as scripts ask it, prints what ArgumentParser would without building
        // the command tree: parsing reflects over every command's options, and the Swift runtime's
        // first look-up of each option type's conformances was most of the process's 16–20 ms (perf).
        if CommandLine.arguments.dropFirst() == ["--version"] {
            Console.out(FerryVersion.current + "\n")
            Glibc.exit(ExitStatus.success.rawValue)
        }
        let status: Int32
        // The command line began with an option and holds a URL (`ferry -o FILE URL`, curl's order).
        var leadingOptionsWithURL = false
        do {
            // The config file's options first (docs/CLI.md, "Config file"); the command line wins.
            var given = Array(CommandLine.arguments.dropFirst())
            // curl's habit, the URL first: `ferry URL …` is `ferry get URL …`.
            if let first = given.first, CLI.isTransferURL(first) { given.insert("get", at: 0) }
            leadingOptionsWithURL = given.first?.hasPrefix("-") == true && given.contains(where: CLI.isTransferURL)
            let arguments = try ConfigFile.apply(to: given, environment: ProcessInfo.processInfo.environment)
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            status = ExitStatus.success.rawValue
        } catch let failure as CLIFailure {
            Console.errorLine(failure.message)
            status = failure.status.rawValue
        } catch let code as ExitCode {
            status = code.rawValue
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                Console.out(fullMessage(for: error) + "\n")
                status = 0
            } else {
                let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
                let text = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
                if leadingOptionsWithURL {
                    // `ferry -o FILE URL`, as curl takes it: the command comes first here.
                    Console.errorLine("\(text): to download, name the command first: ferry get URL [options] (see ferry --help)")
                } else {
                    Console.errorLine("\(text) (see ferry --help)")
                }
                status = ExitStatus.usage.rawValue
            }
        }
        Glibc.exit(status)
    }
}
