public import Foundation

/// The public suffixes (publicsuffix.org) under which no cookie may be set for a whole domain: `com`,
/// `co.uk`, `github.io`. Read from Debian's `publicsuffix` package when it is installed; otherwise a
/// small built-in list, plus the list's implicit rule that every single-label name is a public suffix.
public struct PublicSuffixList: Sendable {
    /// Where Debian (and most distributions) keep the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// Whether the list came from a file (false: the built-in fallback).
    public let isComplete: Bool

    /// The system's list, else the fallback; read once per process.
    public static let system: PublicSuffixList = {
        if let text = try? String(contentsOfFile: systemPath, encoding: .utf8) {
            return PublicSuffixList(text, complete: true)
        }
        return fallback
    }()

    /// Common suffixes for machines without the list: generic and country top-level domains are caught by
    /// the single-label rule; these are the second-level ones most used.
    public static let fallback = PublicSuffixList(
        """
        co.uk
        org.uk
        ac.uk
        gov.uk
        com.au
        net.au
        org.au
        co.jp
        ne.jp
        or.jp
        com.br
        com.cn
        com.mx
        co.nz
        co.za
        co.in
        github.io
        gitlab.io
        herokuapp.com
        appspot.com
        blogspot.com
        cloudfront.net
        azurewebsites.net
        """,
        complete: false
    )

    /// A list in the publicsuffix.org format: one rule a line, `//` comments, `*.` wildcards, `!`
    /// exceptions.
    public init(_ text: String, complete: Bool = true) {
        var rules = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        // Read as UTF-8 bytes: splitting the 230 KB list by Characters (grapheme breaking, Unicode
        // properties) took about 25 ms, a third of a one-request `ferry-bench` run (perf).
        var text = text
        text.withUTF8 { bytes in
            var index = 0
            let end = bytes.count
            while index < end {
                // One line: its first word is the rule.
                var lineEnd = index
                while lineEnd < end, bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                var wordEnd = index
                while wordEnd < lineEnd, !Self.isSpace(bytes[wordEnd]) { wordEnd += 1 }
                defer { index = lineEnd + 1 }
                guard wordEnd > index else { continue }
                if wordEnd - index >= 2, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") { continue }
                let rule = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<wordEnd]), as: UTF8.self).lowercased()
                if rule.hasPrefix("!") {
                    exceptions.insert(String(rule.dropFirst()))
                } else if rule.hasPrefix("*.") {
                    wildcards.insert(String(rule.dropFirst(2)))
                } else {
                    rules.insert(rule)
                }
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
        self.isComplete = complete
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    /// Whether `domain` (lower case, no trailing dot) is a public suffix itself.
    public func isPublicSuffix(_ domain: String) -> Bool {
        let name = domain.hasSuffix(".") ? String(domain.dropLast()) : domain
        guard !name.isEmpty else { return true }
        if exceptions.contains(name) { return false }
        if rules.contains(name) { return true }
        guard let dot = name.firstIndex(of: ".") else {
            // The list's implicit rule "*": every top-level label.
            return true
        }
        return wildcards.contains(String(name[name.index(after: dot)...]))
    }
}
