import ArgumentParser
import Ferry
import FerryEngine
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension DaemonCommand {
    /// `ferry daemon metrics`: ferryd's metrics in the Prometheus text format.
    struct Metrics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "metrics",
            abstract: "Print ferryd's metrics in the Prometheus text format (what GET /metrics answers)."
        )

        func run() async throws {
            let client = try await CLI.daemon(start: false)
            guard await client.status() != nil else {
                throw CLIFailure("ferryd is not running (no answer on \(client.paths.socket))", status: .daemon)
            }
            do {
                Console.out(try await client.text("GET", ControlAPI.metricsPath))
            } catch let error as FerryError {
                throw CLIFailure(error.message, status: .daemon)
            }
        }
    }

    /// `ferry daemon log`: the end of ferryd's log, and what follows with `-f`.
    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract: "Print the end of ferryd's log (JSON lines in the state directory), one readable line each.",
            discussion: "With --json the lines are printed as written: one JSON object each, with time, level, message, and session and task where they apply."
        )

        @Option(name: [.customShort("n"), .customLong("lines")], help: "How many lines from the end.") var count = 50
        @Flag(name: [.short, .long], help: "Keep printing lines as they are written (Ctrl-C stops).") var follow = false
        @OptionGroup var outputOptions: OutputOptions

        func run() async throws {
            guard count >= 0 else { throw CLIFailure("--lines takes 0 or more", status: .usage) }
            let paths: DaemonPaths
            do {
                paths = try DaemonPaths(environment: ProcessInfo.processInfo.environment)
            } catch let error as FerryError {
                throw CLIFailure(error)
            }
            var tail = DaemonLogTail(path: paths.logFile)
            let lines = try tail.lastLines(count)
            if lines.isEmpty && !follow && !FileManager.default.fileExists(atPath: paths.logFile) {
                throw CLIFailure("no log at \(paths.logFile): ferryd has not run with this state directory", status: .daemon)
            }
            for line in lines { print(line) }
            guard follow else { return }
            let interruption = Interruption()
            let json = outputOptions.json
            let reading = Task { [tail] in
                var tail = tail
                while !Task.isCancelled {
                    for line in tail.newLines() { Console.out((json ? line : DaemonLogTail.readable(line)) + "\n") }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            interruption.onSignal { reading.cancel() }
            await reading.value
        }

        private func print(_ line: String) {
            Console.out((outputOptions.json ? line : DaemonLogTail.readable(line)) + "\n")
        }
    }

    /// `ferry daemon install`: the systemd user units, written and enabled.
    struct Install: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "install",
            abstract: "Install ferryd as a systemd user service with socket activation (ferryd.service, ferryd.socket).",
            discussion: "Writes both units to ~/.config/systemd/user (or $XDG_CONFIG_HOME/systemd/user) and enables and starts them with systemctl --user. Without systemd, the units are written and nothing else changes: the library and the CLI start ferryd on demand, as always."
        )

        @Flag(name: .long, help: "Write the units only; do not run systemctl.") var noEnable = false
        @Flag(name: .long, help: "Print the units instead of writing them.") var print = false

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            let ferryd: String
            do {
                ferryd = try DaemonClient.daemonExecutable()
            } catch let error as FerryError {
                throw CLIFailure(error)
            }
            let absolute = CLI.absolute(ferryd)
            let home = environment["FERRY_HOME"].flatMap { $0.isEmpty ? nil : CLI.absolute($0) }
            let socket = home.map { _ in (try? DaemonPaths(environment: environment).socket) ?? SystemdUnits.defaultSocket }
            let units = SystemdUnits.render(ferryd: absolute, socket: socket ?? SystemdUnits.defaultSocket, ferryHome: home)
            if print {
                Console.out("# ferryd.service\n\(units.service)\n# ferryd.socket\n\(units.socket)")
                return
            }
            let directory = DaemonCommand.unitDirectory(environment)
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try Data(units.service.utf8).write(to: URL(fileURLWithPath: directory + "/ferryd.service"), options: .atomic)
                try Data(units.socket.utf8).write(to: URL(fileURLWithPath: directory + "/ferryd.socket"), options: .atomic)
            } catch {
                throw CLIFailure("cannot write the units to \(directory): \(error.localizedDescription)", status: .localFile)
            }
            Console.out("wrote \(directory)/ferryd.service and ferryd.socket (ExecStart=\(absolute))\n")
            guard !noEnable else { return }
            guard FileManager.default.fileExists(atPath: "/run/systemd/system") else {
                CLI.note(
                    "systemd is not running here, so nothing was enabled; the library and the CLI start ferryd on demand when they need it"
                )
                return
            }
            for arguments in [["daemon-reload"], ["enable", "--now", "ferryd.socket"], ["enable", "ferryd.service"]] {
                let status = try await DaemonCommand.systemctl(arguments)
                guard status == 0 else {
                    throw CLIFailure(
                        "systemctl --user \(arguments.joined(separator: " ")) exited with \(status); is a user manager running (loginctl enable-linger)?",
                        status: .daemon
                    )
                }
            }
            Console.out("enabled ferryd.socket and ferryd.service (systemctl --user status ferryd)\n")
        }
    }

    /// `ferry daemon uninstall`: the units disabled and removed.
    struct Uninstall: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "uninstall",
            abstract: "Disable and remove the systemd user units `ferry daemon install` wrote (tasks and state stay)."
        )

        func run() async throws {
            let directory = DaemonCommand.unitDirectory(ProcessInfo.processInfo.environment)
            if FileManager.default.fileExists(atPath: "/run/systemd/system") {
                _ = try await DaemonCommand.systemctl(["disable", "--now", "ferryd.socket", "ferryd.service"])
            }
            var removed = 0
            for unit in ["ferryd.service", "ferryd.socket"] {
                if (try? FileManager.default.removeItem(atPath: "\(directory)/\(unit)")) != nil { removed += 1 }
            }
            if FileManager.default.fileExists(atPath: "/run/systemd/system") { _ = try? await DaemonCommand.systemctl(["daemon-reload"]) }
            Console.out(removed == 0 ? "no units in \(directory)\n" : "removed ferryd.service and ferryd.socket from \(directory)\n")
        }
    }

    /// Where user units go: `$XDG_CONFIG_HOME/systemd/user`, default `~/.config/systemd/user`.
    static func unitDirectory(_ environment: [String: String]) -> String {
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return config + "/systemd/user"
    }

    /// Runs `systemctl --user ARGUMENTS`; its exit status (the caller is suspended, not blocked, meanwhile).
    static func systemctl(_ arguments: [String]) async throws -> Int32 {
        do {
            return try await HelperProgram.status(ofProgramNamed: "systemctl", ["--user"] + arguments)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .daemon)
        }
    }
}
