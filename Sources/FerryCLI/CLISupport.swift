public import ArgumentParser
public import Ferry
public import Foundation

/// `--json`, shared by every command: machine-readable output on stdout, errors still one line on
/// stderr.
public struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print results as JSON (one document, or JSON lines for streams).")
    public var json = false

    public init() {}
}

/// `--session`, for the commands that work on background tasks.
public struct SessionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The background session identifier.", valueName: "id"))
    public var session: String = CLI.defaultSession

    public init() {}
}

/// What the commands share: argument parsing helpers, output, the daemon.
public enum CLI {
    /// The background session of the CLI's tasks unless `--session` names another.
    public static let defaultSession = "ferry-cli"

    /// Whether `text` reads as an http or https URL (a command line's URL, not an option or a command).
    public static func isTransferURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// An http or https URL with a host.
    /// - Throws: ``CLIFailure`` (usage) for anything else.
    public static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw CLIFailure("not an http or https URL: '\(text)'", status: .usage)
        }
        if let port = url.port, !(1...65535).contains(port) {
            throw CLIFailure("the port \(port) in '\(text)' is not between 1 and 65535", status: .usage)
        }
        return url
    }

    /// What `ferry` sends unless `-H` says otherwise: `User-Agent: ferry/VERSION` and `Accept: */*`.
    public static let defaultHeaders: [(name: String, value: String)] = [
        ("User-Agent", "ferry/\(FerryVersion.current)"), ("Accept", "*/*"),
    ]

    /// Header fields from `-H 'Name: value'` arguments, then ``defaultHeaders`` for the names they do not
    /// give (`defaults`: others instead). As with curl, `-H 'Name:'` (nothing after the colon) sends no
    /// such field, a default included. CR, LF and NUL are refused.
    public static func headers(
        _ lines: [String],
        defaults: [(name: String, value: String)] = defaultHeaders
    ) throws -> Headers {
        var headers = Headers()
        var named = Set<String>()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw CLIFailure("a header must look like 'Name: value', not '\(line)'", status: .usage)
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            do {
                try Headers.validate(name: name, value: value)
            } catch let error as FerryError {
                throw CLIFailure(error)
            }
            named.insert(name.lowercased())
            if !value.isEmpty { headers.add(name: name, value: value) }
        }
        for field in defaults where !named.contains(field.name.lowercased()) {
            headers.add(name: field.name, value: field.value)
        }
        return headers
    }

    /// `-H`'s lines, with `-A`'s User-Agent unless `-H` names one (as with curl, `-H` wins).
    static func headerLines(_ headers: [String], userAgent: String?) -> [String] {
        guard let userAgent, !headers.contains(where: { $0.lowercased().hasPrefix("user-agent:") }) else { return headers }
        return headers + ["User-Agent: " + userAgent]
    }

    /// Writes `value` as JSON (sorted keys) and a newline to stdout.
    public static func printJSON(_ value: some Encodable, pretty: Bool = true) {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return }
        Console.out(bytes: data + Data("\n".utf8))
    }

    /// A line on stderr (a note, not an error).
    public static func note(_ text: String) {
        Console.errorLine(text)
    }

    /// The client of this user's daemon (or `FERRY_HOME`'s), started when `start` and none answers.
    /// - Throws: ``CLIFailure`` (daemon) when it cannot be reached.
    public static func daemon(start: Bool = true) async throws -> DaemonClient {
        let client: DaemonClient
        do {
            client = try DaemonClient.forCurrentUser()
            if start { try await client.ensureRunning() }
        } catch let error as FerryError {
            throw CLIFailure("cannot reach ferryd: \(error.message)", status: .daemon)
        }
        return client
    }

    /// A control API call whose errors become ``CLIFailure``s.
    public static func call<Answer: Decodable>(
        _ client: DaemonClient,
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none
    ) async throws -> Answer {
        do {
            return try await client.call(method, path, body: body)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: error.code == .invalidOperation ? .usage : .daemon)
        }
    }

    /// A control API call without an answer body; errors become ``CLIFailure``s.
    public static func perform(
        _ client: DaemonClient,
        _ method: String,
        _ path: String,
        body: (some Encodable)? = String?.none
    ) async throws {
        do {
            try await client.perform(method, path, body: body)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: error.code == .invalidOperation ? .usage : .daemon)
        }
    }

    /// The route prefix of a session.
    public static func sessionPath(_ session: String) -> String {
        "\(ControlAPI.prefix)/sessions/\(DaemonClient.pathComponent(session))"
    }

    /// An absolute version of `path` (relative to the working directory).
    public static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return (path as NSString).standardizingPath }
        let base = FileManager.default.currentDirectoryPath
        return ((base as NSString).appendingPathComponent(path) as NSString).standardizingPath
    }
}
