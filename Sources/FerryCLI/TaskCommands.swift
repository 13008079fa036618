import ArgumentParser
import Ferry
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The tasks of a session (or every session), fetched from ferryd: their credentials, cookies and URL
/// query tokens redacted (`FERRY_REDACT_QUERY` names the query parameters) unless `showingSecrets`.
func fetchTasks(_ client: DaemonClient, session: String?, showingSecrets: Bool = false) async throws -> [BackgroundTaskInfo] {
    let tasks: [BackgroundTaskInfo]
    if let session {
        tasks = try await CLI.call(client, "GET", "\(CLI.sessionPath(session))/tasks")
    } else {
        tasks = try await CLI.call(client, "GET", "\(ControlAPI.prefix)/tasks\(showingSecrets ? "?secrets=show" : "")")
    }
    guard !showingSecrets else { return tasks }
    let redaction = Redaction.fromEnvironment(ProcessInfo.processInfo.environment)
    return tasks.map(redaction.task)
}

/// Task identifiers from the command line.
func taskIdentifiers(_ texts: [String]) throws -> [Int] {
    try texts.map { text in
        guard let identifier = Int(text), identifier > 0 else {
            throw CLIFailure("a task id is a positive number, not '\(text)'", status: .usage)
        }
        return identifier
    }
}

/// `ferry ls`: the session's background tasks.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List background tasks: id, state, progress, rate, target, error."
    )

    @OptionGroup var session: SessionOptions
    @Flag(name: .long, help: "Every session's tasks.") var all = false
    @Flag(
        name: .long,
        help: "Show credentials (Authorization, Cookie) and URL query tokens in full; without it they read <redacted>."
    )
    var showSecrets = false
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        let client = try await CLI.daemon()
        let tasks = try await fetchTasks(client, session: all ? nil : session.session, showingSecrets: showSecrets)
        if outputOptions.json {
            CLI.printJSON(tasks)
        } else {
            Console.out(TaskTable.render(tasks, showSession: all).map { $0 + "\n" }.joined())
        }
    }
}

/// `ferry watch`: the table, refreshed until nothing is pending or running.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show background tasks live until none is pending or running (Ctrl-C stops watching)."
    )

    @OptionGroup var session: SessionOptions
    @Flag(name: .long, help: "Every session's tasks.") var all = false
    @Option(name: .long, help: "Seconds between refreshes.") var interval = 0.5
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        guard interval >= 0.05, interval <= 3600 else { throw ValidationError("--interval is between 0.05 and 3600") }
    }

    func run() async throws {
        let client = try await CLI.daemon()
        let terminal = isatty(STDOUT_FILENO) == 1 && !outputOptions.json
        while true {
            let tasks = try await fetchTasks(client, session: all ? nil : session.session)
            if outputOptions.json {
                CLI.printJSON(tasks, pretty: false)
            } else {
                let lines = TaskTable.render(tasks, showSession: all)
                let text =
                    (terminal ? "\u{1B}[H\u{1B}[2J" : "") + lines.joined(separator: "\n") + (terminal ? "\n" : "\n\n")
                Console.out(text)
            }
            if !tasks.contains(where: { $0.state == .pending || $0.state == .running }) { return }
            try await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
        }
    }
}

/// `ferry wait ID...|--all`: blocks until the tasks are completed; the exit status says whether they
/// all succeeded.
struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until background tasks finish; exit 0 only if they all succeeded.",
        discussion: "With --all: every task of the session that is not finished yet when the command starts."
    )

    @Argument(help: "Task ids.") var ids: [String] = []
    @Flag(name: .long, help: "Every unfinished task of the session.") var all = false
    @Option(name: .long, help: "Give up after this many seconds (exit status 1).") var timeout: Double?
    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give task ids or --all, not both or neither") }
    }

    func run() async throws {
        let client = try await CLI.daemon()
        let initial = try await fetchTasks(client, session: session.session)
        let wanted: [Int]
        if all {
            wanted = initial.filter { $0.state != .completed }.map(\.taskIdentifier)
        } else {
            wanted = try taskIdentifiers(ids)
            let known = Set(initial.map(\.taskIdentifier))
            if let missing = wanted.first(where: { !known.contains($0) }) {
                throw CLIFailure("no task \(missing) in session '\(session.session)'", status: .usage)
            }
        }
        let deadline = timeout.map { ProgressDisplay.now() + $0 }
        var finished: [BackgroundTaskInfo] = []
        while true {
            let tasks = try await poll(client)
            let mine = tasks.filter { wanted.contains($0.taskIdentifier) }
            if mine.allSatisfy({ $0.state == .completed }) {
                finished = mine
                break
            }
            if let deadline, ProgressDisplay.now() >= deadline {
                let open = mine.filter { $0.state != .completed }.map { String($0.taskIdentifier) }
                throw CLIFailure(
                    "still unfinished after \(timeout!) s: \(open.joined(separator: ", "))",
                    status: .transferFailed
                )
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        if outputOptions.json { CLI.printJSON(finished) }
        let failed = finished.filter { !TaskTable.succeeded($0) }
        for task in failed {
            let reason = task.error?.message ?? "the server answered \(task.statusCode ?? 0)"
            Console.errorLine("task \(task.taskIdentifier) failed: \(reason)")
        }
        if !failed.isEmpty { throw ExitCode(ExitStatus.transferFailed.rawValue) }
    }
}

extension WaitCommand {
    /// The session's tasks now. A ferryd that was killed or restarted meanwhile is started again (its
    /// tasks go on after its recovery) and asked again: `ferry get --background … && ferry wait --all`
    /// must not fail in exactly the crash case ferryd exists for. A ferryd that answers with a refusal,
    /// or cannot be started, ends the wait with its error.
    func poll(_ client: DaemonClient) async throws -> [BackgroundTaskInfo] {
        do {
            return try await fetchTasks(client, session: session.session)
        } catch let failure as CLIFailure where failure.status == .daemon {
            guard await client.status() == nil else { throw failure }
            if !outputOptions.json { CLI.note("ferryd went away; starting it again and waiting on") }
            do {
                try await client.ensureRunning()
            } catch let error as FerryError {
                throw CLIFailure("ferryd went away during the wait and could not be started again: \(error.message)", status: .daemon)
            }
            return try await fetchTasks(client, session: session.session)
        }
    }
}

/// `ferry pause|resume|cancel ID...`.
struct TaskActionCommand: ParsableCommand {
    enum Action: String { case pause, resume, cancel }

    @Argument(help: "Task ids.") var ids: [String]
    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func perform(_ action: Action) async throws {
        let client = try await CLI.daemon()
        var results: [BackgroundTaskInfo] = []
        for identifier in try taskIdentifiers(ids) {
            let path = "\(CLI.sessionPath(session.session))/tasks/\(identifier)"
            switch action {
            case .pause:
                results.append(try await CLI.call(client, "POST", "\(path)/suspend"))
            case .resume:
                results.append(try await CLI.call(client, "POST", "\(path)/resume"))
            case .cancel:
                let result: ControlAPI.CancelResult = try await CLI.call(
                    client,
                    "POST",
                    "\(path)/cancel",
                    body: ControlAPI.Cancellation(produceResumeData: false)
                )
                results.append(result.task)
            }
        }
        if outputOptions.json {
            CLI.printJSON(results)
        } else {
            for task in results { Console.out("\(task.taskIdentifier) \(TaskTable.state(task))\n") }
        }
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Suspend background tasks (their data is kept)."
    )
    @OptionGroup var action: TaskActionCommand
    func run() async throws { try await action.perform(.pause) }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume suspended background tasks."
    )
    @OptionGroup var action: TaskActionCommand
    func run() async throws { try await action.perform(.resume) }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel background tasks (their partial data goes)."
    )
    @OptionGroup var action: TaskActionCommand
    func run() async throws { try await action.perform(.cancel) }
}

/// `ferry events`: drains the session's pending events as JSON lines and acknowledges them.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print a session's pending events as JSON lines, then acknowledge them."
    )

    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        let client = try await CLI.daemon()
        let path = CLI.sessionPath(session.session)
        let events: [BackgroundEvent] = try await CLI.call(client, "GET", "\(path)/events")
        for event in events { CLI.printJSON(event, pretty: false) }
        if let last = events.compactMap(\.sequence).max() {
            try await CLI.perform(client, "POST", "\(path)/ack", body: ControlAPI.Acknowledgement(through: last))
        }
    }
}
