public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A Python `websockets` server (Tests/Scripts/ws_peer.py, in this repository) on 127.0.0.1: a real
/// peer for the WebSocket tests. `.ci/run` installs `websockets`; without it the tests are skipped with the reason.
public struct WebSocketPeer: Sendable {
    public let process: ChildProcess
    public let port: Int

    public static var unavailable: String? {
        let probe = try? ChildProcess.spawn("/usr/bin/env", arguments: ["python3", "-c", "import websockets"], output: .discarded)
        probe?.waitUntilExit()
        guard let probe, probe.terminationStatus == 0 else {
            return "python3 with websockets is missing (pip install websockets; .ci/run installs it)"
        }
        return nil
    }

    public static func start(certificates: TestCertificates? = nil, directory: String? = nil) async throws -> WebSocketPeer {
        // Port 0: the peer binds a port the system picks and says which: no race with other listeners
        // for a port that was free a moment ago.
        var arguments = [script, "0"]
        if let certificates, let directory {
            let cert = directory + "/peer-cert.pem"
            let key = directory + "/peer-key.pem"
            try certificates.chainPEM.write(toFile: cert, atomically: true, encoding: .utf8)
            try certificates.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
            arguments += ["--cert", cert, "--key", key]
        }
        let process = try ChildProcess.spawn("/usr/bin/env", arguments: ["python3"] + arguments)
        let line = await process.standardOutput?.readLineOffPool() ?? ""
        guard line.hasPrefix("listening "), let port = Int(line.dropFirst("listening ".count)) else {
            process.terminate()
            throw TestServerError("the WebSocket peer did not start (python3 \(script)): \(line)")
        }
        return WebSocketPeer(process: process, port: port)
    }

    public static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/Scripts/ws_peer.py").path
    }

    public func url(_ path: String, secure: Bool = false) -> URL {
        URL(string: "\(secure ? "wss" : "ws")://127.0.0.1:\(port)\(path)")!
    }

    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

}

