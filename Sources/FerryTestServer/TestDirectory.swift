public import Foundation

/// Fresh directories for tests, all inside one directory of this process (`ferry-tests-PID` in the
/// system's temporary directory) that is removed when the process exits: tests that made a directory
/// of their own under /tmp each left hundreds behind every run.
public enum TestDirectory {
    /// This process's directory, made when first used and removed at exit.
    public static let root: String = {
        let name = "ferry-tests-\(ProcessInfo.processInfo.processIdentifier)"
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        atexit { try? FileManager.default.removeItem(atPath: TestDirectory.root) }
        return path
    }()

    /// A fresh empty directory inside ``root``.
    public static func make() throws -> URL {
        let url = URL(fileURLWithPath: root).appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
