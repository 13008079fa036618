import Foundation

/// Reads a file of /proc (or /sys) whole.
///
/// Foundation's `String(contentsOfFile:)` and `FileManager.contents(atPath:)` read such a file only up to
/// its first ~4 KB (measured here: 4,050 of /proc/net/tcp's 133,500 bytes): procfs reports a size of 0,
/// and what they read first is all they get. A routing table with many IPv6 routes, or /proc/locks on a
/// busy machine, is longer than that.
public enum ProcFile {
    /// The whole text of the file at `path`, or nil when it cannot be read.
    public static func read(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
