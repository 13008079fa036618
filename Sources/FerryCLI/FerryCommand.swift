public import ArgumentParser
import Ferry

/// The `ferry` command. Its subcommands (get, put, ls, watch, wait, ...) land with the issue
/// "ferry: the command-line tool"; until then it answers `--version` and says what is missing.
public struct FerryCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ferry",
        abstract: "Background transfers for Swift on Linux (command-line tool).",
        version: FerryVersion.current
    )

    public init() {}

    public func run() throws {
        throw ValidationError(
            "ferry has no transfer commands yet: they come with the command-line tool issue. "
                + "Use ferry-testserver meanwhile."
        )
    }
}
