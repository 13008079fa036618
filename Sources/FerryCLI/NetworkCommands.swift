import ArgumentParser
import Ferry
import Foundation

/// What `ferry get --background` and `ferry put --background` record with a task: its network policy and
/// priority (`--limit-rate` becomes its own bandwidth limit).
struct BackgroundPolicyOptions: ParsableArguments {
    @Option(
        name: .customLong("allow-metered"),
        help: ArgumentHelp("Background: may the task use a metered network? yes (default) or no.", valueName: "yes|no")
    )
    var allowMetered: String?

    @Option(
        name: .customLong("allow-constrained"),
        help: ArgumentHelp("Background: may the task use a constrained network? yes (default) or no.", valueName: "yes|no")
    )
    var allowConstrained: String?

    @Option(
        name: .customLong("priority"),
        help: ArgumentHelp("Background: high, default, low, or 0 to 1.", valueName: "priority")
    )
    var priority: String?

    /// Checks the values; `background` says whether the command hands the task to ferryd.
    func validate(background: Bool) throws {
        guard background else {
            if allowMetered != nil || allowConstrained != nil || priority != nil {
                throw ValidationError("--allow-metered, --allow-constrained and --priority are for --background transfers")
            }
            return
        }
        _ = try allowMetered.map { try NetworkCommandSupport.yesNo($0, flag: "--allow-metered") }
        _ = try allowConstrained.map { try NetworkCommandSupport.yesNo($0, flag: "--allow-constrained") }
        _ = try priority.map(NetworkCommandSupport.priority)
    }

    /// `creation` with the policy's network access and priority, `limit` as its own bandwidth limit
    /// (`--limit-rate`), and not discretionary: the user asked for it now.
    func apply(to creation: inout ControlAPI.TaskCreation, limit: Int64?) throws {
        if let allowMetered, try !NetworkCommandSupport.yesNo(allowMetered, flag: "--allow-metered") {
            creation.request.allowsCellularAccess = false
            creation.request.allowsExpensiveNetworkAccess = false
        }
        if let allowConstrained, try !NetworkCommandSupport.yesNo(allowConstrained, flag: "--allow-constrained") {
            creation.request.allowsConstrainedNetworkAccess = false
        }
        creation.priority = try priority.map(NetworkCommandSupport.priority)
        creation.discretionary = false
        creation.bandwidthLimit = limit
    }
}

/// Parsing shared by the network commands.
enum NetworkCommandSupport {
    static func yesNo(_ text: String, flag: String) throws -> Bool {
        switch text.lowercased() {
        case "yes", "true", "1", "on": return true
        case "no", "false", "0", "off": return false
        default: throw ValidationError("\(flag) takes yes or no, not '\(text)'")
        }
    }

    /// high (0.75), default (0.5), low (0.25), as URLSessionTask's, or a number from 0 to 1.
    static func priority(_ text: String) throws -> Double {
        switch text.lowercased() {
        case "high": return Double(SessionTask.highPriority)
        case "default": return Double(SessionTask.defaultPriority)
        case "low": return Double(SessionTask.lowPriority)
        default:
            guard let value = Double(text), (0...1).contains(value) else {
                throw CLIFailure("a priority is high, default, low, or a number from 0 to 1, not '\(text)'", status: .usage)
            }
            return value
        }
    }

    /// A rate (500K, 2M, 1G: powers of 1024) or `off` (0: none).
    static func rate(_ text: String) throws -> Int64 {
        if ["off", "none", "0"].contains(text.lowercased()) { return 0 }
        guard let value = ByteFormat.parseRate(text) else {
            throw CLIFailure("a rate is a number with K, M or G (powers of 1024) such as 500K or 2M, or off; not '\(text)'", status: .usage)
        }
        return value
    }

    static func describe(_ limit: Int64?) -> String {
        guard let limit, limit > 0 else { return "none" }
        return ByteFormat.rate(Double(limit))
    }

    static func task(_ text: String) throws -> Int {
        try taskIdentifiers([text])[0]
    }

    /// Sends a change to each task and prints them afterwards.
    static func update(
        _ identifiers: [Int],
        _ update: ControlAPI.TaskUpdate,
        session: String,
        json: Bool
    ) async throws {
        let client = try await CLI.daemon()
        var results: [BackgroundTaskInfo] = []
        for identifier in identifiers {
            results.append(
                try await CLI.call(client, "PATCH", "\(CLI.sessionPath(session))/tasks/\(identifier)", body: update)
            )
        }
        if json {
            CLI.printJSON(results)
        } else {
            for task in results {
                let metered = task.allowsMeteredNetwork == false ? "no" : "yes"
                Console.out(
                    "\(task.taskIdentifier) \(TaskTable.state(task)), priority \(task.priority), metered \(metered), limit \(describe(task.bandwidthLimit))\n"
                )
            }
        }
    }
}

/// `ferry policy ID... --allow-metered yes|no`: what network a live task may use.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Change which networks background tasks may use, while they run or wait.",
        discussion: """
            A running task that may no longer use the network it is on stops at its last checkpoint and \
            waits (ferry ls: waiting, metered network); when it may again, it continues where it stopped.
            """
    )

    @Argument(help: "Task ids.") var ids: [String]
    @Option(name: .customLong("allow-metered"), help: ArgumentHelp("yes or no.", valueName: "yes|no"))
    var allowMetered: String?
    @Option(name: .customLong("allow-constrained"), help: ArgumentHelp("yes or no.", valueName: "yes|no"))
    var allowConstrained: String?
    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        guard allowMetered != nil || allowConstrained != nil else {
            throw ValidationError("say what changes: --allow-metered yes|no or --allow-constrained yes|no")
        }
        _ = try allowMetered.map { try NetworkCommandSupport.yesNo($0, flag: "--allow-metered") }
        _ = try allowConstrained.map { try NetworkCommandSupport.yesNo($0, flag: "--allow-constrained") }
    }

    func run() async throws {
        let update = ControlAPI.TaskUpdate(
            allowsMeteredNetwork: try allowMetered.map { try NetworkCommandSupport.yesNo($0, flag: "--allow-metered") },
            allowsConstrainedNetwork: try allowConstrained.map {
                try NetworkCommandSupport.yesNo($0, flag: "--allow-constrained")
            }
        )
        try await NetworkCommandSupport.update(
            try taskIdentifiers(ids),
            update,
            session: session.session,
            json: outputOptions.json
        )
    }
}

/// `ferry priority ID VALUE`.
struct PriorityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority",
        abstract: "Change a background task's priority: the start order, and its share of a bandwidth limit.",
        discussion: "VALUE: high (0.75), default (0.5), low (0.25), or a number from 0 to 1."
    )

    @Argument(help: "The task id.") var id: String
    @Argument(help: "high, default, low, or 0 to 1.") var value: String
    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        try await NetworkCommandSupport.update(
            [try NetworkCommandSupport.task(id)],
            ControlAPI.TaskUpdate(priority: try NetworkCommandSupport.priority(value)),
            session: session.session,
            json: outputOptions.json
        )
    }
}

/// `ferry limit [--global RATE | ID RATE]`: ferryd's bandwidth limits, changed while tasks run.
struct LimitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Show or change ferryd's bandwidth limits (daemon-wide, or one task's).",
        discussion: """
            ferry limit                 show the daemon-wide limit
            ferry limit --global 5M     all background transfers together at most 5 MiB/s, shared by priority
            ferry limit --global off    no daemon-wide limit
            ferry limit ID 1M           task ID at most 1 MiB/s (off: none)
            Rates take K, M and G as powers of 1024, as --limit-rate does. Limits persist across restarts.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The daemon-wide limit, or off.", valueName: "rate"))
    var global: String?
    @Argument(help: "A task id and its rate (or off).") var values: [String] = []
    @OptionGroup var session: SessionOptions
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        if global != nil, !values.isEmpty { throw ValidationError("give --global RATE or ID RATE, not both") }
        if global == nil, !(values.isEmpty || values.count == 2) {
            throw ValidationError("give --global RATE, or a task id and a rate (ferry limit 3 1M)")
        }
    }

    func run() async throws {
        if values.count == 2 {
            let limit = try NetworkCommandSupport.rate(values[1])
            try await NetworkCommandSupport.update(
                [try NetworkCommandSupport.task(values[0])],
                ControlAPI.TaskUpdate(bandwidthLimit: limit),
                session: session.session,
                json: outputOptions.json
            )
            return
        }
        let client = try await CLI.daemon()
        let path = "\(ControlAPI.prefix)/bandwidth"
        let answer: ControlAPI.BandwidthLimit
        if let global {
            let limit = try NetworkCommandSupport.rate(global)
            answer = try await CLI.call(client, "PUT", path, body: ControlAPI.BandwidthLimit(bytesPerSecond: limit))
        } else {
            answer = try await CLI.call(client, "GET", path)
        }
        if outputOptions.json {
            CLI.printJSON(answer)
        } else {
            Console.out("daemon-wide limit: \(NetworkCommandSupport.describe(answer.bytesPerSecond))\n")
        }
    }
}

extension DaemonCommand {
    /// `ferry daemon network [--metered yes|no|auto]`.
    struct Network: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "network",
            abstract: "Show the network as ferryd sees it, or override whether it is metered or constrained.",
            discussion: """
                auto (the default) takes NetworkManager's answer for metered; without NetworkManager the \
                network counts as unmetered unless set here. Linux has no constrained networks, so only \
                this setting makes one. Settings persist across restarts.
                """
        )

        @Option(name: .long, help: ArgumentHelp("yes, no or auto.", valueName: "yes|no|auto"))
        var metered: String?
        @Option(name: .long, help: ArgumentHelp("yes, no or auto.", valueName: "yes|no|auto"))
        var constrained: String?
        @OptionGroup var outputOptions: OutputOptions

        private static func override(_ text: String, _ flag: String) throws -> NetworkSettings.Override {
            guard let value = NetworkSettings.Override(rawValue: text.lowercased()) else {
                throw ValidationError("\(flag) takes yes, no or auto, not '\(text)'")
            }
            return value
        }

        func validate() throws {
            _ = try metered.map { try Self.override($0, "--metered") }
            _ = try constrained.map { try Self.override($0, "--constrained") }
        }

        func run() async throws {
            let client = try await CLI.daemon()
            let path = "\(ControlAPI.prefix)/network"
            let report: ControlAPI.NetworkReport
            if metered != nil || constrained != nil {
                let update = ControlAPI.NetworkUpdate(
                    metered: try metered.map { try Self.override($0, "--metered") },
                    constrained: try constrained.map { try Self.override($0, "--constrained") }
                )
                report = try await CLI.call(client, "PUT", path, body: update)
            } else {
                report = try await CLI.call(client, "GET", path)
            }
            if outputOptions.json {
                CLI.printJSON(report)
                return
            }
            let detected = report.detectedMetered.map { $0 ? "metered" : "unmetered" } ?? "no answer"
            Console.out(
                """
                network:     \(report.state.isOnline ? "online" : "offline (no default route)")
                metered:     \(report.state.isMetered ? "yes" : "no") (setting \(report.settings.metered.rawValue); NetworkManager: \(detected))
                constrained: \(report.state.isConstrained ? "yes" : "no") (setting \(report.settings.constrained.rawValue))
                power:       \(report.state.power.rawValue)
                bandwidth:   \(NetworkCommandSupport.describe(report.settings.globalBandwidthLimit)) daemon-wide

                """
            )
        }
    }
}
