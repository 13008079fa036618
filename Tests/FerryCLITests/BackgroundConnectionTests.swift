import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A background task connects as the client that created it: its CA's contents and its proxy are
/// recorded with the task, so a ferryd started without them (and restarted after SIGKILL) still uses them.
@Suite struct BackgroundConnectionTests {
    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy is needed (.ci/run installs it)"))
    func aPrivateCAThroughAProxySurvivesAKill() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            let home = "/tmp/ferry-c-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            defer {
                try? FileManager.default.removeItem(atPath: directory)
                try? FileManager.default.removeItem(atPath: home)
            }
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let proxy = try await ProxyPeer.tinyproxy(in: directory)
            defer { proxy.stop() }
            // ferryd runs without the proxy and without the CA; the client has both.
            var daemonCLI = CLIRunner(directory: directory)
            daemonCLI.environment = ["FERRY_HOME": home, "https_proxy": "", "HTTPS_PROXY": "", "SSL_CERT_FILE": ""]
            var client = CLIRunner(directory: directory)
            client.environment = ["FERRY_HOME": home, "https_proxy": "http://127.0.0.1:\(proxy.port)"]
            do {
                #expect(try await daemonCLI.run(["daemon", "start"]).status == 0)
                let size = 6_000_000
                // The first try stalls after 2.5 MB for a minute: ferryd is killed mid-transfer whatever the
                // machine's load; the try after the restart runs clean.
                let url = server.url(
                    "/bytes/\(size)?throttle=1000000&stall_after=2500000&stall_ms=60000&only_first=1&key=bg-ca",
                    on: .tls
                )
                let submit = try await client.run(["get", "--background", url, "-o", "bg.bin", "--cacert", "ca.pem"])
                #expect(submit.status == 0, "\(submit.stderr)")
                let identifier = submit.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                // Part of it arrives; then ferryd is killed mid-transfer and started again as it was.
                var received: Int64 = 0
                let end = Date().addingTimeInterval(30)
                while received < 1_000_000 {
                    guard Date() < end else { throw FerryError(.timedOut, "no checkpoint with progress") }
                    let list = try await daemonCLI.run(["ls", "--json"])
                    let tasks = try? JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
                    received = tasks?.first?.bytesReceived ?? 0
                    #expect(tasks?.first?.state != .completed, "the transfer ended before the kill; slow it down")
                    try await Task.sleep(for: .milliseconds(100))
                }
                try await daemonCLI.killDaemon()
                let tunnelsBefore = proxy.forwardedRequests()
                #expect(try await daemonCLI.run(["daemon", "start"]).status == 0)
                let wait = try await daemonCLI.run(["wait", identifier], timeout: 90)
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(try fileSHA256(directory + "/bg.bin") == bytesSHA256(size))
                // Both runs went through the proxy (one CONNECT each, at least).
                #expect(tunnelsBefore >= 1)
                #expect(
                    proxy.forwardedRequests() > tunnelsBefore,
                    "\(String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: proxy.log))) ?? Data(), as: UTF8.self))"
                )
            } catch {
                _ = try? await daemonCLI.run(["daemon", "stop"])
                throw error
            }
            _ = try await daemonCLI.run(["daemon", "stop"])
        }
    }
}
