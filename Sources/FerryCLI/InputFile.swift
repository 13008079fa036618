/// aria2's input file (`ferry get --input-file FILE`, aria2c's `-i`, wget's `-i`): one URL a line;
/// lines that start with a space or tab are options of the URL above them, of which ferry takes
/// `out=NAME` (the file's name, in `--dir`); `#` starts a comment. Pure.
public enum InputFile {
    /// One download of the file.
    public struct Entry: Sendable, Hashable {
        public var url: String
        /// `out=`: the name to save under; nil: the remote name.
        public var name: String?

        public init(url: String, name: String?) {
            self.url = url
            self.name = name
        }
    }

    /// The downloads `text` lists, in order.
    /// - Throws: ``CLIFailure`` (usage) naming the line of an option ferry does not take, an option
    ///   before any URL, several URLs on one line (aria2's mirrors), or an `out=` that leaves the
    ///   directory.
    public static func parse(_ text: String) throws -> [Entry] {
        var entries: [Entry] = []
        // (By Character: "\r\n" is one, and a newline.)
        for (offset, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = offset + 1
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.count != line.count {
                // An option of the URL above.
                guard !entries.isEmpty else {
                    throw CLIFailure("input file line \(number): an option before any URL", status: .usage)
                }
                guard let equals = trimmed.firstIndex(of: "=") else {
                    throw CLIFailure("input file line \(number): an option must look like out=NAME, not '\(trimmed)'", status: .usage)
                }
                let key = trimmed[..<equals]
                let value = String(trimmed[trimmed.index(after: equals)...])
                guard key == "out" else {
                    throw CLIFailure("input file line \(number): ferry takes out=NAME, not aria2's '\(key)' option", status: .usage)
                }
                let parts = value.split(separator: "/", omittingEmptySubsequences: false)
                guard !value.isEmpty, !value.hasPrefix("/"), !parts.contains(".."), !parts.contains("") else {
                    throw CLIFailure("input file line \(number): out=\(value) must be a name inside the directory", status: .usage)
                }
                entries[entries.count - 1].name = value
                continue
            }
            if trimmed.contains("\t") {
                throw CLIFailure("input file line \(number): one URL a line (aria2's tab-separated mirrors are not taken)", status: .usage)
            }
            entries.append(Entry(url: String(trimmed.trimmingSuffix(while: { $0 == " " })), name: nil))
        }
        return entries
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var result = self
        while let last = result.last, predicate(last) { result.removeLast() }
        return result
    }
}
