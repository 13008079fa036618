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
        for line in text.split(whereSeparator: \.isNewline) {
            let rule = line.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
            guard !rule.isEmpty, !rule.hasPrefix("//") else { continue }
            let lowered = rule.lowercased()
            if lowered.hasPrefix("!") {
                exceptions.insert(String(lowered.dropFirst()))
            } else if lowered.hasPrefix("*.") {
                wildcards.insert(String(lowered.dropFirst(2)))
            } else {
                rules.insert(lowered)
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
        self.isComplete = complete
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
