import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Real proxies for the tests, started on 127.0.0.1 with a free port: tinyproxy (HTTP, CONNECT, Basic
/// authentication) and microsocks (SOCKS5 with a user name and password). `.ci/run` installs both; a
/// test without them is skipped with the reason.
public struct ProxyPeer: Sendable {
    public let process: ChildProcess
    public let port: Int
    public let log: String

    /// Why the peers cannot run here, or nil.
    public static var unavailable: String? {
        for (tool, package) in [("/usr/bin/tinyproxy", "tinyproxy"), ("/usr/bin/microsocks", "microsocks")]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (apt-get install \(package); .ci/run installs it)"
        }
        return nil
    }

    /// tinyproxy; with `basicAuth` it answers 407 to requests without those credentials.
    public static func tinyproxy(in directory: String, basicAuth: (String, String)? = nil) async throws -> ProxyPeer {
        try await onAFreePort { port in try await tinyproxy(in: directory, port: port, basicAuth: basicAuth) }
    }

    private static func tinyproxy(in directory: String, port: Int, basicAuth: (String, String)?) async throws -> ProxyPeer {
        let log = directory + "/tinyproxy-\(port).log"
        var config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            LogFile "\(log)"
            LogLevel Info
            MaxClients 50
            Allow 127.0.0.1

            """
        if let (user, password) = basicAuth { config += "BasicAuth \(user) \(password)\n" }
        let path = directory + "/tinyproxy-\(port).conf"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let process = try ChildProcess.spawn("/usr/bin/tinyproxy", arguments: ["-d", "-c", path], output: .discarded)
        try await waitForListener(port, process)
        return ProxyPeer(process: process, port: port, log: log)
    }

    /// microsocks requiring `user`:`password`.
    public static func microsocks(in directory: String, user: String, password: String) async throws -> ProxyPeer {
        try await onAFreePort { port in try await microsocks(in: directory, port: port, user: user, password: password) }
    }

    private static func microsocks(in directory: String, port: Int, user: String, password: String) async throws -> ProxyPeer {
        let log = directory + "/microsocks-\(port).log"
        let process = try ChildProcess.spawn(
            "/usr/bin/microsocks",
            arguments: ["-i", "127.0.0.1", "-p", String(port), "-u", user, "-P", password],
            output: .file(log)
        )
        try await waitForListener(port, process)
        return ProxyPeer(process: process, port: port, log: log)
    }

    /// Lines of the proxy's log that record a request it forwarded (tinyproxy: a request line or a
    /// CONNECT).
    public func forwardedRequests() -> Int {
        let text = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: log))) ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").filter { $0.contains("Request (file descriptor") }.count
    }

    /// SIGKILL: tinyproxy in the foreground does not end on SIGTERM.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Starts a proxy with `start` on a port that was free; again on another one when a test's server
    /// took the port first (the proxy cannot report a port of its own choosing).
    private static func onAFreePort(_ start: (Int) async throws -> ProxyPeer) async throws -> ProxyPeer {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await start(try LocalPorts.free())
            } catch is LocalPorts.PortTaken where attempt < 5 {
                continue
            }
        }
    }

    private static func waitForListener(_ port: Int, _ process: ChildProcess) async throws {
        do {
            try await LocalPorts.waitForListener(port, name: "the proxy", process: process)
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
    }
}
