import ArgumentParser
import Ferry
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `ferry daemon status|start|stop|metrics|log|install|uninstall`.
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "ferryd, the daemon that runs background transfers.",
        subcommands: [Status.self, Start.self, Stop.self, Network.self, Metrics.self, Log.self, Install.self, Uninstall.self]
    )

    static func describe(_ status: ControlAPI.DaemonStatus) {
        Console.out(
            """
            ferryd \(status.version) running, pid \(status.pid)
            socket:    \(status.socketPath)
            state:     \(status.stateDirectory)
            transfers: \(status.running) running, at most \(status.maximumConcurrentTransfers)

            """
        )
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Whether ferryd runs: pid, socket, state directory, version (exit 5 if not)."
        )
        @OptionGroup var outputOptions: OutputOptions

        func run() async throws {
            let client = try await CLI.daemon(start: false)
            guard let status = await client.status() else {
                throw CLIFailure("ferryd is not running (no answer on \(client.paths.socket))", status: .daemon)
            }
            if outputOptions.json { CLI.printJSON(status) } else { DaemonCommand.describe(status) }
        }
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "start", abstract: "Start ferryd unless it runs.")
        @OptionGroup var outputOptions: OutputOptions

        func run() async throws {
            let client = try await CLI.daemon(start: true)
            guard let status = await client.status() else {
                throw CLIFailure("ferryd started but does not answer on \(client.paths.socket)", status: .daemon)
            }
            if outputOptions.json { CLI.printJSON(status) } else { DaemonCommand.describe(status) }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Stop ferryd (SIGTERM: transfers stop at a checkpoint and continue on the next start)."
        )
        @Option(name: .long, help: "Seconds to wait for it to exit.") var timeout = 30.0
        @OptionGroup var outputOptions: OutputOptions

        func run() async throws {
            let client = try await CLI.daemon(start: false)
            guard let status = await client.status() else {
                if !outputOptions.json { CLI.note("ferryd is not running") }
                return
            }
            guard kill(status.pid, SIGTERM) == 0 else {
                throw CLIFailure(
                    "cannot signal ferryd (pid \(status.pid)): \(String(cString: strerror(errno)))",
                    status: .daemon
                )
            }
            let deadline = ProgressDisplay.now() + timeout
            while kill(status.pid, 0) == 0 {
                guard ProgressDisplay.now() < deadline else {
                    throw CLIFailure("ferryd (pid \(status.pid)) is still running after \(timeout) s", status: .daemon)
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if outputOptions.json {
                CLI.printJSON(["stopped": status.pid])
            } else {
                Console.out("ferryd (pid \(status.pid)) stopped\n")
            }
        }
    }
}
