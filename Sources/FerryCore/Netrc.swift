public import Foundation

/// A `.netrc` file (as curl's `--netrc` and wget read it): `machine HOST login USER password PASS`
/// entries, a `default` entry, `account` and `macdef` skipped; tokens separated by spaces, tabs or
/// newlines, double-quoted when they hold any (curl's rule, with `\"` and `\\` escapes).
public struct Netrc: Sendable, Hashable {
    /// One entry's credential.
    public struct Entry: Sendable, Hashable {
        public var login: String?
        public var password: String?
    }

    private var machines: [String: Entry] = [:]
    private var fallback: Entry?

    /// The entries of `text`.
    public init(_ text: String) {
        var tokens = Self.tokens(Self.withoutMacros(text))[...]
        var current: (name: String?, entry: Entry)?
        func finish() {
            guard let done = current else { return }
            if let name = done.name {
                // The first entry for a machine wins, as curl reads the file.
                if machines[name] == nil { machines[name] = done.entry }
            } else if fallback == nil {
                fallback = done.entry
            }
            current = nil
        }
        while let token = tokens.popFirst() {
            switch token {
            case "machine":
                finish()
                current = (tokens.popFirst()?.lowercased(), Entry())
            case "default":
                finish()
                current = (nil, Entry())
            case "login":
                current?.entry.login = tokens.popFirst()
            case "password":
                current?.entry.password = tokens.popFirst()
            case "account":
                _ = tokens.popFirst()
            case "macdef":
                // Its body went with withoutMacros; the name is left.
                finish()
                _ = tokens.popFirst()
            default:
                continue
            }
        }
        finish()
    }

    /// The credential for `host` (its machine entry, else the default entry); nil without a login.
    public func credential(for host: String) -> Credential? {
        guard let entry = machines[host.lowercased()] ?? fallback, let login = entry.login else { return nil }
        return Credential(user: login, password: entry.password ?? "")
    }

    /// Where curl looks by default: `$NETRC`, else `~/.netrc`.
    public static func defaultPath(_ environment: [String: String]) -> String? {
        if let path = environment["NETRC"], !path.isEmpty { return path }
        return environment["HOME"].map { $0 + "/.netrc" }
    }

    /// `text` without the bodies of `macdef` entries: a macro runs from the line after `macdef NAME` to
    /// the next empty line, and its words are not entries.
    private static func withoutMacros(_ text: String) -> String {
        var kept: [Substring] = []
        var inMacro = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if inMacro {
                if line.allSatisfy(\.isWhitespace) { inMacro = false }
                continue
            }
            kept.append(line)
            if line.split(whereSeparator: \.isWhitespace).contains("macdef") { inMacro = true }
        }
        return kept.joined(separator: "\n")
    }

    private static func tokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var characters = text[...]
        while true {
            while let first = characters.first, first.isWhitespace { characters.removeFirst() }
            guard let first = characters.first else { return tokens }
            if first == "\"" {
                characters.removeFirst()
                var token = ""
                while let next = characters.popFirst(), next != "\"" {
                    if next == "\\", let escaped = characters.popFirst() {
                        token.append(escaped == "n" ? "\n" : escaped == "t" ? "\t" : escaped)
                    } else {
                        token.append(next)
                    }
                }
                tokens.append(token)
            } else {
                let token = characters.prefix { !$0.isWhitespace }
                tokens.append(String(token))
                characters.removeFirst(token.count)
            }
        }
    }
}
