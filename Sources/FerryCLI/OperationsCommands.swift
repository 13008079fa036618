import ArgumentParser
import Ferry
import Foundation

/// `ferry clean`: removes finished background tasks and the files ferryd kept for them.
struct CleanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clean",
        abstract: "Remove finished background tasks, their events and leftover files (partial data kept for resuming, downloads nobody collected).",
        discussion: "Pending, running and suspended tasks are never touched. ferryd also removes finished tasks on its own 7 days after they finished (ferryd --prune-after)."
    )

    @Option(
        name: .long,
        help: ArgumentHelp("Only tasks that finished at least this long ago: 90s, 30m, 12h, 7d.", valueName: "duration")
    )
    var olderThan: String?
    @OptionGroup var session: SessionOptions
    @Flag(name: .long, help: "Every session's finished tasks, not only the session's.") var all = false
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        var age: Double?
        if let olderThan {
            guard let seconds = DurationText.seconds(olderThan) else {
                throw CLIFailure("--older-than takes a duration such as 90s, 30m, 12h or 7d, not '\(olderThan)'", status: .usage)
            }
            age = seconds
        }
        let client = try await CLI.daemon()
        let result: ControlAPI.CleanResult = try await CLI.call(
            client,
            "POST",
            "\(ControlAPI.prefix)/clean",
            body: ControlAPI.Cleaning(olderThan: age, session: all ? nil : session.session)
        )
        if outputOptions.json {
            CLI.printJSON(result)
        } else {
            Console.out(
                "removed \(result.removedTasks) finished task(s) and \(result.removedFiles) file(s) (\(ByteFormat.bytes(result.freedBytes)))\n"
            )
        }
    }
}

/// `ferry ui`: the status page, served by ferryd while this command runs.
struct UICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Serve ferryd's status page on 127.0.0.1 and print its address (with its token) until Ctrl-C.",
        discussion: "The page lists the queue with progress, rate, state and errors, each session's event backlog, and pause, resume and cancel buttons; it updates live. Requests without the token get 403."
    )

    @Flag(name: .long, help: "Print the address and leave the page running (stop it with --stop).") var detach = false
    @Flag(name: .long, help: "Stop a page left running.") var stop = false
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        let client = try await CLI.daemon()
        let path = "\(ControlAPI.prefix)/ui"
        if stop {
            try await CLI.perform(client, "DELETE", path)
            if !outputOptions.json { CLI.note("status page stopped") }
            return
        }
        let page: ControlAPI.StatusPage = try await CLI.call(client, "POST", path)
        if outputOptions.json {
            CLI.printJSON(page, pretty: false)
        } else {
            Console.out(page.url + "\n")
        }
        guard !detach else { return }
        if !outputOptions.json { CLI.note("serving the status page until Ctrl-C") }
        let interruption = Interruption()
        let waiting = Task { while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) } }
        interruption.onSignal { waiting.cancel() }
        await waiting.value
        try await CLI.perform(client, "DELETE", path)
    }
}
