import Foundation

/// Reads ferryd's log for `ferry daemon log`: the last lines, then what is appended, across a rotation
/// (the file renamed to `.1` and started anew).
struct DaemonLogTail {
    let path: String
    private var offset: UInt64 = 0
    private var inode: UInt64?
    private var partial = Data()

    init(path: String) {
        self.path = path
    }

    /// The last `count` complete lines (from the rotated file too when the current one has fewer), and
    /// the position after them, where ``newLines()`` goes on.
    mutating func lastLines(_ count: Int) throws -> [String] {
        let current = read(path, from: 0)
        inode = Self.inode(path)
        offset = UInt64(current.count)
        var lines = Self.completeLines(current, rest: &partial)
        if lines.count < count {
            var ignored = Data()
            lines = Array(Self.completeLines(read(path + ".1", from: 0), rest: &ignored).suffix(count - lines.count)) + lines
        }
        return Array(lines.suffix(count))
    }

    /// Complete lines written since the last call.
    mutating func newLines() -> [String] {
        let now = Self.inode(path)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
        if now != inode || size < offset {
            // Rotated: the rest of the old file (now .1) first, then the new one from its start.
            var lines: [String] = []
            if now != inode, inode != nil, Self.inode(path + ".1") == inode {
                lines = Self.completeLines(partial + read(path + ".1", from: offset), rest: &partial)
            }
            partial = Data()
            inode = now
            offset = 0
            return lines + newLines()
        }
        let data = read(path, from: offset)
        offset += UInt64(data.count)
        return Self.completeLines(partial + data, rest: &partial)
    }

    private func read(_ file: String, from start: UInt64) -> Data {
        guard let handle = FileHandle(forReadingAtPath: file) else { return Data() }
        defer { try? handle.close() }
        try? handle.seek(toOffset: start)
        return (try? handle.readToEnd()) ?? Data()
    }

    private static func inode(_ file: String) -> UInt64? {
        (try? FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? UInt64) ?? nil
    }

    /// The complete lines in `data`; an unfinished last line is left in `rest`.
    private static func completeLines(_ data: Data, rest: inout Data) -> [String] {
        guard let end = data.lastIndex(of: 0x0A) else {
            rest = data
            return []
        }
        rest = Data(data[data.index(after: end)...])
        return data[..<end].split(separator: 0x0A, omittingEmptySubsequences: true).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// A JSON log line as `TIME LEVEL [session#task] message key=value…`; other lines as they are.
    static func readable(_ line: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let message = object["message"] as? String
        else { return line }
        var text = "\(object["time"] as? String ?? "-") \((object["level"] as? String ?? "-").padding(toLength: 7, withPad: " ", startingAt: 0))"
        if let session = object["session"] {
            text += " [\(session)\(object["task"].map { "#\($0)" } ?? "")]"
        }
        text += " " + message
        let known: Set<String> = ["time", "level", "message", "session", "task", "label"]
        for key in object.keys.sorted() where !known.contains(key) {
            text += " \(key)=\(object[key]!)"
        }
        return text
    }
}
