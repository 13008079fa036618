public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A peer written in Python (a script of this repository's Tests/Scripts) that binds port 0 and prints
/// the port or ports it got on its first line: no race with other listeners for a port that was free a
/// moment ago. With a generated TLS identity in a directory of its own, for the peers that speak TLS.
public struct PythonPeer: Sendable {
    public let process: ChildProcess
    /// The ports of the first line, in order.
    public let ports: [Int]
    public let certificates: TestCertificates
    /// Holds `cert.pem` and `key.pem` (the identity the script is given); removed by ``stop()``.
    public let directory: String

    /// The path of `Tests/Scripts/NAME` in this repository.
    public static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Scripts/" + name).path
    }

    /// Whether `python3` can import `module` (a PyPI package a peer needs; `.ci/run` installs them):
    /// tests that need one are skipped, with the reason, when it cannot.
    public static func hasModule(_ module: String) -> Bool {
        let process = try? ChildProcess.spawn("/usr/bin/env", arguments: ["python3", "-c", "import \(module)"])
        process?.waitUntilExit()
        return process?.terminationStatus == 0
    }

    /// Starts `python3 Tests/Scripts/NAME CERT KEY ARGUMENTS...` and waits for its ports.
    /// - Throws: ``TestServerError`` when it does not start or prints no port.
    public static func start(_ name: String, arguments: [String] = []) async throws -> PythonPeer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-peer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificates = try TestCertificates.generate()
        try certificates.chainPEM.write(toFile: directory + "/cert.pem", atomically: true, encoding: .utf8)
        try certificates.privateKeyPEM.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        let path = script(name)
        let process = try ChildProcess.spawn("/usr/bin/env", arguments: ["python3", path, directory + "/cert.pem", directory + "/key.pem"] + arguments)
        let line = await process.standardOutput?.readLineOffPool() ?? ""
        let ports = line.split(separator: " ").compactMap { Int($0) }
        guard !ports.isEmpty else {
            process.terminate()
            try? FileManager.default.removeItem(atPath: directory)
            throw TestServerError("the peer \(name) did not start (python3 \(path)): '\(line)'")
        }
        return PythonPeer(process: process, ports: ports, certificates: certificates, directory: directory)
    }

    /// Kills it and removes its directory.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
