import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry ws` run as a user would, against a real WebSocket server (Python websockets), with stdin from
/// a file or a pipe.
@Suite(.enabled(if: WebSocketPeer.unavailable == nil, "\(WebSocketPeer.unavailable ?? "")"))
struct WebSocketCommandTests {
    /// `ferry ws arguments` with `input` as stdin, in `directory`.
    private func ws(_ arguments: [String], input: String = "", in directory: String, timeout: Double = 30) async throws -> CLIRunner.Run {
        try input.write(toFile: directory + "/stdin.txt", atomically: true, encoding: .utf8)
        let process = try ChildProcess.spawn(
            "/bin/sh",
            arguments: ["-c", "exec \"$0\" ws \"$@\" < stdin.txt", CLIRunner.binary] + arguments,
            directory: directory
        )
        return try await CLIRunner(directory: directory).finish(process, process.standardOutput!, process.standardError!, timeout: timeout)
    }

    private func withPeer(_ body: (WebSocketPeer, String) async throws -> Void) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let peer = try await WebSocketPeer.start()
        defer { peer.stop() }
        try await body(peer, directory)
    }

    @Test func linesGoOutAndRepliesComeBackOnePerLine() async throws {
        try await withPeer { peer, directory in
            let run = try await ws([peer.url("/echo").absoluteString, "--idle", "0.3"], input: "one\ntwo words\r\nthree", in: directory)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "one\ntwo words\nthree\n")
            let binary = try await ws([peer.url("/echo").absoluteString, "--binary", "--idle", "0.3"], input: "\u{1}\u{2}raw\n", in: directory)
            #expect(binary.status == 0, "\(binary.stderr)")
            #expect(binary.stdout == "\u{1}\u{2}raw\n")
            // --idle 0 closes when stdin ends; what the server sends before its close still arrives, in
            // order. (Python's websockets answers a close before its handler has sent the echoes it
            // still holds, so how many echoes come is the peer's timing: a clean-clone run got fewer
            // than all 500. Every one that comes must be printed, whole and in order.)
            let lines = (1...500).map { "line \($0) " + String(repeating: "x", count: 500) }
            let drained = try await ws([peer.url("/echo").absoluteString, "--idle", "0"], input: lines.joined(separator: "\n") + "\n", in: directory)
            #expect(drained.status == 0, "\(drained.stderr)")
            let printed = drained.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(printed.last == "" && printed.count > 1, "\(drained.stdout.suffix(200))")
            #expect(Array(printed.dropLast()) == Array(lines.prefix(printed.count - 1)))
        }
    }

    @Test func protocolHeadersAndDeflateReachTheServer() async throws {
        try await withPeer { peer, directory in
            let chosen = try await ws([peer.url("/protocol").absoluteString, "--protocol", "x", "--protocol", "chat", "--idle", "0.2"], in: directory)
            #expect(chosen.status == 0, "\(chosen.stderr)")
            #expect(chosen.stdout == "chat\n")
            let headers = try await ws([peer.url("/headers").absoluteString, "-H", "X-Test: from-cli", "--idle", "0.2"], in: directory)
            #expect(headers.stdout == "cookie= x-test=from-cli\n", "\(headers.stderr)")
            let deflate = try await ws([peer.url("/deflate").absoluteString, "--deflate", "--idle", "0.2"], input: "compressed?\n", in: directory)
            #expect(deflate.status == 0, "\(deflate.stderr)")
            #expect(deflate.stdout.contains("active=permessage-deflate\ncompressed?\n"), "\(deflate.stdout)")
        }
    }

    @Test func aCloseWithAnotherCodeIsReportedAndExits1() async throws {
        try await withPeer { peer, directory in
            let run = try await ws([peer.url("/close?code=4001&reason=go%20away").absoluteString], in: directory)
            #expect(run.status == 1)
            #expect(run.stderr.contains("4001") && run.stderr.contains("go away"), "\(run.stderr)")
            let normal = try await ws([peer.url("/close?code=1000").absoluteString], in: directory)
            #expect(normal.status == 0, "\(normal.stderr)")
        }
    }

    @Test func aLostConnectionExitsAtOnceWhileStdinStaysOpen() async throws {
        try await withPeer { peer, directory in
            // stdin is a FIFO whose writer stays for 30 s: ferry must not wait for it.
            let started = Date()
            let process = try ChildProcess.spawn(
                "/bin/sh",
                arguments: [
                    "-c", "mkfifo in && { (echo hello; sleep 30) > in 2>/dev/null & } && exec \"$0\" ws \"$1\" < in",
                    CLIRunner.binary, peer.url("/drop").absoluteString,
                ],
                directory: directory
            )
            let run = try await CLIRunner(directory: directory).finish(process, process.standardOutput!, process.standardError!, timeout: 20)
            // Well before the writer's 30 s sleep ends (loose: a loaded machine is slow, not that slow).
            #expect(Date().timeIntervalSince(started) < 25)
            #expect(run.status == 1)
            #expect(run.stderr.contains("without a WebSocket close frame"), "\(run.stderr)")
        }
    }

    @Test func wssWithCacertAndBadInputIsRefusedClearly() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificates = try TestCertificates.generate()
        let peer = try await WebSocketPeer.start(certificates: certificates, directory: directory)
        defer { peer.stop() }
        try certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let url = "wss://localhost:\(peer.port)/echo"
        let trusted = try await ws([url, "--cacert", "ca.pem", "--idle", "0.2"], input: "secure\n", in: directory)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout == "secure\n")
        let untrusted = try await ws([url], input: "secure\n", in: directory)
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("certificate") || untrusted.stderr.contains("trust"), "\(untrusted.stderr)")
        let badURL = try await ws(["http://127.0.0.1/"], in: directory)
        #expect(badURL.status == 2)
        #expect(badURL.stderr.contains("ws:// or wss://"))
        let badHeader = try await ws(["ws://127.0.0.1:1/", "-H", "no colon"], in: directory)
        #expect(badHeader.status == 2)
    }

    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy is needed (.ci/run installs it)"))
    func wsGoesThroughAnHTTPProxyByConnect() async throws {
        try await withPeer { peer, directory in
            let proxy = try await ProxyPeer.tinyproxy(in: directory)
            defer { proxy.stop() }
            let before = proxy.forwardedRequests()
            let run = try await ws(
                [peer.url("/echo").absoluteString, "--proxy", "http://127.0.0.1:\(proxy.port)", "--idle", "0.3"],
                input: "via proxy\n",
                in: directory
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "via proxy\n")
            try await waitUntil("the proxy logs", within: 30) { proxy.forwardedRequests() > before }
            let log = (try? String(contentsOfFile: proxy.log, encoding: .utf8)) ?? ""
            #expect(log.contains("CONNECT"), "tinyproxy's log shows no CONNECT")
        }
    }
}
