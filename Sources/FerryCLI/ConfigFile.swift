import ArgumentParser
import Foundation

/// `$XDG_CONFIG_HOME/ferry/config` (or `--config FILE`): options for `get`, `put` and `ws`, one a
/// line, the way .curlrc and aria2.conf hold them — `name = value`, `name value` or a bare `name` for a
/// flag, the leading dashes optional, `#` comments, a value in double quotes when it has spaces.
///
/// Each line goes to the commands that know its option (`connections = 4` to `get` only, `proxy = …` to
/// all three), before the command line's own options, so the command line wins. A line no transfer
/// command knows is an error naming the file and the line. `--disable` (curl's name) or `--no-config`
/// on the command line skips the default file.
public enum ConfigFile {
    /// One option of the file.
    public struct Line: Sendable, Equatable {
        public var number: Int
        /// `--name=value`, `--name` for a flag, or `-n value` for a one-letter name.
        public var arguments: [String]
    }

    /// The options `text` holds.
    /// - Throws: ``CLIFailure`` (usage) for a line that is not an option or an unclosed quote.
    public static func parse(_ text: String, file: String) throws -> [Line] {
        var lines: [Line] = []
        for (offset, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let number = offset + 1
            let split = line.firstIndex { $0 == "=" || $0 == " " || $0 == "\t" || $0 == ":" }
            var name = String(split.map { line[..<$0] } ?? line[...]).trimmingCharacters(in: .whitespaces)
            while name.hasPrefix("-") { name.removeFirst() }
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else {
                throw CLIFailure("\(file) line \(number): not an option: \(line)", status: .usage)
            }
            let option = name.count == 1 ? "-" + name : "--" + name
            guard let split else {
                lines.append(Line(number: number, arguments: [option]))
                continue
            }
            var value = line[line.index(after: split)...].trimmingCharacters(in: .whitespaces)
            // "name = value": the separator may come with spaces around it.
            if let first = value.first, first == "=" || first == ":" {
                value = String(value.dropFirst()).trimmingCharacters(in: .whitespaces)
            }
            if value.hasPrefix("\"") {
                guard value.count >= 2, value.hasSuffix("\"") else {
                    throw CLIFailure("\(file) line \(number): a quote is not closed", status: .usage)
                }
                value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "\\\"", with: "\"")
                    .replacingOccurrences(of: "\\\\", with: "\\")
            }
            // One token for a long option (`--name=value`): a value can never be taken for a URL.
            let arguments = value.isEmpty ? [option] : name.count == 1 ? [option, value] : ["\(option)=\(value)"]
            lines.append(Line(number: number, arguments: arguments))
        }
        return lines
    }

    /// The transfer commands and arguments that make a parse of them complete but for the option tried.
    private static let commands: [String: (any ParsableCommand.Type, [String])] = [
        "get": (GetCommand.self, ["http://127.0.0.1/"]),
        "put": (PutCommand.self, ["file", "http://127.0.0.1/"]),
        "ws": (WebSocketCommand.self, ["ws://127.0.0.1/"]),
    ]

    /// Whether `command` takes the option of `arguments` (an invalid value still counts: the real
    /// parse reports it).
    private static func knows(_ command: any ParsableCommand.Type, _ arguments: [String], sample: [String]) -> Bool {
        do {
            _ = try command.parseAsRoot(arguments + sample)
            return true
        } catch {
            return !command.message(for: error).contains("Unknown option")
        }
    }

    /// `arguments` (the command line without the program's name) with the config file's options put
    /// after the subcommand's name, when it is `get`, `put` or `ws`. `--config FILE`, `--disable` and
    /// `--no-config` are taken out.
    /// - Throws: ``CLIFailure`` for an unreadable `--config` file, a malformed line, or a line no
    ///   transfer command knows.
    public static func apply(to arguments: [String], environment: [String: String]) throws -> [String] {
        var arguments = arguments
        var explicit: String?
        var disabled = false
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--config":
                guard index + 1 < arguments.count else { throw CLIFailure("--config needs a file", status: .usage) }
                explicit = arguments[index + 1]
                arguments.removeSubrange(index...(index + 1))
            case let argument where argument.hasPrefix("--config="):
                explicit = String(argument.dropFirst("--config=".count))
                arguments.remove(at: index)
            case "--disable", "--no-config":
                disabled = true
                arguments.remove(at: index)
            case "--":
                index = arguments.count
            default:
                index += 1
            }
        }
        guard let subcommand = arguments.first, let (command, sample) = commands[subcommand] else { return arguments }
        let path: String
        if let explicit {
            path = explicit
        } else {
            guard !disabled else { return arguments }
            let home = environment["HOME"] ?? NSHomeDirectory()
            let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
            path = base + "/ferry/config"
            guard FileManager.default.fileExists(atPath: path) else { return arguments }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure("cannot read the config file \(path)", status: explicit != nil ? .localFile : .usage)
        }
        let lines = try parse(String(decoding: data, as: UTF8.self), file: path)
        var inserted: [String] = []
        for line in lines {
            if knows(command, line.arguments, sample: sample) {
                inserted += line.arguments
                continue
            }
            // Not this command's: fine if another transfer command takes it.
            let known = commands.values.contains { other, otherSample in knows(other, line.arguments, sample: otherSample) }
            guard known else {
                let name = line.arguments[0].split(separator: "=", maxSplits: 1)[0]
                throw CLIFailure("\(path) line \(line.number): no ferry command takes \(name)", status: .usage)
            }
        }
        return [subcommand] + inserted + arguments.dropFirst()
    }
}
