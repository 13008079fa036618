import Crypto
import FerryCore
import FerryTestServer
import Foundation
import Testing

/// `ferry get --http3-only` (curl's flag) against aioquic's HTTP/3 server (Tests/Scripts/h3_peer.py)
/// on 127.0.0.1: byte-exact files, `-w %{http_version}` says 3, the chain is judged as over TCP
/// (`--cacert`), and what HTTP/3 cannot do is refused with the reason (issue 42).
@Suite struct HTTP3CommandTests {
    static let aioquic = PythonPeer.hasModule("aioquic")

    /// aioquic's HTTP/3 server (`h3_peer.py`, or a variant `script`) and a fresh directory whose `ca.pem` trusts it.
    static func withH3Peer(_ script: String = "h3_peer.py", _ body: (PythonPeer, String) async throws -> Void) async throws {
        let peer = try await PythonPeer.start(script)
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        try await body(peer, directory)
    }

    /// Waits (a minute at most) until the first background task has received `bytes`.
    static func waitForBytes(_ bytes: Int64, _ cli: CLIRunner) async throws {
        let end = Date().addingTimeInterval(60)
        while true {
            let list = try await cli.run(["ls", "--json"])
            let tasks = try? JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
            if (tasks?.first?.bytesReceived ?? 0) >= bytes { return }
            guard Date() < end else { throw FerryError(.timedOut, "\(bytes) bytes never arrived: \(list.stdout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aDownloadOverHTTP3IsByteExact() async throws {
        try await Self.withH3Peer { peer, directory in
            let cli = CLIRunner(directory: directory)
            let base = "https://localhost:\(peer.ports[0])"
            for size in [0, 5_000, 3_000_000] {
                let run = try await cli.run([
                    "get", "--http3-only", "--cacert", "ca.pem", "-s", "\(base)/bytes/\(size)", "-o", "f\(size)", "-w", "%{http_code} %{http_version}\\n",
                ])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout == "200 3\n", "\(run.stdout)")
                let expected = Data((0..<size).map { UInt8($0 % 256) })
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/f\(size)")) == expected)
            }
            // Without the CA: refused as over TCP, in the same words.
            let untrusted = try await cli.run(["get", "--http3-only", "-s", "\(base)/bytes/10", "-o", "u"])
            #expect(untrusted.status == 1)
            #expect(untrusted.stderr.contains("not trusted; trust its CA with --cacert FILE"), "\(untrusted.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/u"))
            // --resolve as over TCP: a name no resolver knows reaches the server (whose certificate does
            // not name it); without the entry it is not found.
            let unknown = "https://quic.invalid:\(peer.ports[0])/bytes/10"
            let resolved = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "--resolve", "quic.invalid:\(peer.ports[0]):127.0.0.1", "-s", unknown, "-o", "r"])
            #expect(resolved.stderr.contains("does not name it"), "\(resolved.stderr)")
            let unresolved = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "-s", unknown, "-o", "r"])
            #expect(unresolved.stderr.contains("cannot find the host quic.invalid"), "\(unresolved.stderr)")
            // A 404 is a 404.
            let missing = try await cli.run(["get", "--http3-only", "--cacert", "ca.pem", "-s", "\(base)/nothing", "-o", "m"])
            #expect(missing.status == 1 && missing.stderr.contains("404"), "\(missing.stderr)")
        }
    }

    /// Twelve downloads at once where the server allows three streams at a time: the others wait for
    /// its MAX_STREAMS (RFC 9000 §4.6) instead of opening a stream it did not allow.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func moreRequestsThanTheServerAllowsStreamsWaitTheirTurn() async throws {
        let peer = try await PythonPeer.start("h3_peer_few_streams.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let urls = (1...12).map { "https://localhost:\(peer.ports[0])/bytes/\($0 * 10_000)" }
        let run = try await CLIRunner(directory: directory).run(["get", "--http3-only", "--cacert", "ca.pem", "-s", "-Z", "--dir", "."] + urls)
        #expect(run.status == 0, "\(run.stderr)")
        for size in (1...12).map({ $0 * 10_000 }) {
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/\(size)")) == Data((0..<size).map { UInt8($0 % 256) }))
        }
    }

    /// The server updates its keys mid-body (RFC 9001 §6; quic-go does every 100,000 packets, about
    /// 125 MB): the client follows to the next key phase and the file is whole.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aKeyUpdateMidBodyIsFollowed() async throws {
        let peer = try await PythonPeer.start("h3_peer_key_update.py")
        defer { peer.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        for size in [3_000_000, 200_000] {
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/bytes/\(size)", "-o", "k\(size)",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/k\(size)")) == Data((0..<size).map { UInt8($0 % 256) }))
        }
    }

    /// A background download records --http3-only with its task, and ferryd fetches over HTTP/3.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aBackgroundDownloadOverHTTP3() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        try await withBackgroundCLI { cli, directory in
            try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let submit = try await cli.run([
                "get", "--background", "--http3-only", "--cacert", "ca.pem", "https://localhost:\(peer.ports[0])/bytes/2000000", "-o", "bg.bin",
            ])
            #expect(submit.status == 0, "\(submit.stderr)")
            let wait = try await cli.run(["wait", submit.output, "--timeout", "60"])
            #expect(wait.status == 0, "\(wait.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/bg.bin")) == Data((0..<2_000_000).map { UInt8($0 % 256) }))
            // ferry ls --json says which HTTP version the answer came over, as -w %{http_version} does.
            let list = try await cli.run(["ls", "--json", "--all"])
            let tasks = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
            #expect(tasks.first?.httpVersion == "3", "\(list.stdout)")
        }
    }

    /// A path that loses one datagram in 100 each way (`udp_drop_relay.py` between ferry and aioquic):
    /// RFC 9002's recovery sends the lost frames again, and the file is byte-exact.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func oneDatagramLostInAHundredStillGivesTheExactFile() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let stats = peer.directory + "/relay.stats"
        let relay = try await PythonPeer.start("udp_drop_relay.py", arguments: [String(peer.ports[0]), "100", stats])
        defer { relay.stop() }
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let cli = CLIRunner(directory: directory)
        let size = 3_000_000
        let run = try await cli.run([
            "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(relay.ports[0])/bytes/\(size)", "-o", "lossy", "-w", "%{http_version}",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "3")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/lossy")) == Data((0..<size).map { UInt8($0 % 256) }))
        let counts = try String(contentsOfFile: stats, encoding: .utf8).split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(counts.count == 3 && counts[2] >= 10, "the relay dropped \(counts) (forwarded, up, down)")
    }

    /// Connection migration (RFC 9000 §9): a megabyte into a 6 MB download, the client's connection
    /// moves to a new socket on another address (127.0.0.2, `FERRY_DEBUG_QUIC_MIGRATE`, a stand-in
    /// for a network change); the server sees the new address, one request, and no Range: nothing is
    /// fetched twice, and the file is byte-exact.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aDownloadMovesToANewAddressOnTheSameConnection() async throws {
        try await Self.withH3Peer { peer, directory in
            var cli = CLIRunner(directory: directory)
            cli.environment["FERRY_DEBUG_QUIC_MIGRATE"] = "1000000@127.0.0.2"
            let size = 6_000_000
            let run = try await cli.run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://127.0.0.1:\(peer.ports[0])/bytes/\(size)", "-o", "moved.bin",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/moved.bin")) == Data((0..<size).map { UInt8($0 % 256) }))
            let requests = try String(contentsOfFile: peer.directory + "/requests.log", encoding: .utf8).split(separator: "\n")
            #expect(requests == ["/bytes/\(size) -"], "one request, no Range")
            let addresses = try String(contentsOfFile: peer.directory + "/addresses.log", encoding: .utf8).split(separator: "\n")
            #expect(addresses.count == 2 && addresses.first?.hasPrefix("127.0.0.1 ") == true && addresses.last?.hasPrefix("127.0.0.2 ") == true, "\(addresses)")
        }
    }

    /// ferryd follows the machine to another network: when its default route changes (a fake
    /// network, `FERRY_NETWORK_STATE`), a running HTTP/3 download moves to a new socket and goes on;
    /// the server sees the second address and one request, and the file is byte-exact.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func ferrydMovesAnHTTP3DownloadWhenTheNetworkChanges() async throws {
        try await Self.withH3Peer { peer, _ in
            try await withBackgroundCLI { cli, directory in
                try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
                let stateFile = directory + "/network.json"
                func network(_ path: String) throws {
                    var state = NetworkState()
                    state.path = path
                    try JSONEncoder().encode(state).write(to: URL(fileURLWithPath: stateFile), options: .atomic)
                }
                try network("eth0 via 0100000A")
                var daemon = cli
                daemon.environment["FERRY_NETWORK_STATE"] = stateFile
                #expect(try await daemon.run(["daemon", "start"]).status == 0)
                // 3 MB at 100 kB every 50 ms: about a second and a half, in which the network changes.
                let size = 3_000_000
                let submit = try await cli.run([
                    "get", "--background", "--http3-only", "--cacert", "ca.pem", "https://127.0.0.1:\(peer.ports[0])/drip/\(size)/100000/50", "-o", "d.bin",
                ])
                #expect(submit.status == 0, "\(submit.stderr)")
                try await Self.waitForBytes(300_000, cli)
                try network("wlan0 via 0101A8C0")
                let wait = try await cli.run(["wait", submit.output, "--timeout", "60"])
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/d.bin")) == Data((0..<size).map { UInt8($0 % 256) }))
                _ = try await cli.run(["daemon", "stop"])
                let requests = try String(contentsOfFile: peer.directory + "/requests.log", encoding: .utf8).split(separator: "\n")
                #expect(requests.count == 1, "\(requests)")
                let addresses = try String(contentsOfFile: peer.directory + "/addresses.log", encoding: .utf8).split(separator: "\n")
                #expect(addresses.count == 2, "the connection moved to a second socket: \(addresses)")
            }
        }
    }

    /// A hostile server opens 1,000 unidirectional streams where the client allowed 100: the
    /// connection ends with the reason (a STREAM_LIMIT_ERROR, RFC 9000 §4.6) instead of keeping a
    /// stream for each.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aFloodOfServerStreamsEndsTheConnection() async throws {
        try await Self.withH3Peer { peer, directory in
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/flood-uni/1000", "-o", "f",
            ])
            #expect(run.status != 0)
            #expect(run.stderr.contains("opened more unidirectional streams than the 100 allowed"), "\(run.stderr)")
        }
    }

    /// A server that answers the first Initial with a Retry (aioquic's `retry=True`): the client
    /// checks its integrity tag, sends the ClientHello again with the token to the new connection ID,
    /// checks retry_source_connection_id, and the download is byte-exact.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aRetryIsFollowed() async throws {
        try await Self.withH3Peer("h3_peer_retry.py") { peer, directory in
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/bytes/100000", "-o", "r", "-w", "%{http_version}",
            ])
            #expect(run.status == 0 && run.stdout == "3", "\(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/r")) == Data((0..<100_000).map { UInt8($0 % 256) }))
        }
    }

    /// A server that speaks QUIC version 2 only answers with a Version Negotiation: the client says
    /// which versions the server speaks, at once, instead of waiting for a timeout.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aVersionNegotiationWithoutVersion1IsSaid() async throws {
        try await Self.withH3Peer("h3_peer_v2_only.py") { peer, directory in
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "https://localhost:\(peer.ports[0])/bytes/10", "-o", "v",
            ])
            #expect(run.status != 0)
            #expect(run.stderr.contains("the server speaks QUIC version(s) 0x6b3343cf, not version 1"), "\(run.stderr)")
        }
    }

    /// `ferry put` streams a file over HTTP/3 (a request body that streams, within a bounded queue and
    /// the congestion window): aioquic reads it to the end and names its length and SHA-256.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aFileIsUploadedOverHTTP3() async throws {
        try await Self.withH3Peer { peer, directory in
            let body = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
            try body.write(to: URL(fileURLWithPath: directory + "/up.bin"))
            let run = try await CLIRunner(directory: directory).run([
                "put", "--http3-only", "--cacert", "ca.pem", "-s", "up.bin", "https://localhost:\(peer.ports[0])/upload", "-D", "head.txt",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let head = try String(contentsOfFile: directory + "/head.txt", encoding: .utf8).lowercased()
            #expect(head.contains("x-body-length: 3000000"), "\(head)")
            let digest = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
            #expect(head.contains("x-body-sha256: \(digest)"), "\(head)")
        }
    }

    /// A GOAWAY (RFC 9114 §5.2) that took no request (stream 0), with three requests at once (`-Z`):
    /// those in flight are sent again on a new connection (another socket, so the server logs a second
    /// client address), as over HTTP/2, and those not yet sent go there; every file is whole.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aGoAwaySendsTheNextRequestsToANewConnection() async throws {
        try await Self.withH3Peer { peer, directory in
            let base = "https://localhost:\(peer.ports[0])"
            let run = try await CLIRunner(directory: directory).run([
                "get", "--http3-only", "--cacert", "ca.pem", "-s", "-Z", "--dir", ".", "\(base)/goaway/1000", "\(base)/bytes/2000", "\(base)/bytes/3000",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            for (name, size) in [("1000", 1_000), ("2000", 2_000), ("3000", 3_000)] {
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)) == Data((0..<size).map { UInt8($0 % 256) }))
            }
            let addresses = try String(contentsOfFile: peer.directory + "/addresses.log", encoding: .utf8).split(separator: "\n")
            #expect(addresses.count == 2, "a second connection after the GOAWAY: \(addresses)")
        }
    }

    /// `--max-time` ends a body that stalls over HTTP/3: the connection's own timer per exchange (no
    /// timer task per request in the engine), in the words TCP's timeout uses, the bytes kept.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func maxTimeEndsABodyThatStalls() async throws {
        try await Self.withH3Peer { peer, directory in
            let cli = CLIRunner(directory: directory)
            let run = try await cli.run([
                "get", "--http3-only", "--cacert", "ca.pem", "--max-time", "2", "-s", "https://localhost:\(peer.ports[0])/stall/5000", "-o", "s.bin",
            ])
            #expect(run.status != 0)
            #expect(run.stderr.contains("--max-time 2"), "\(run.stderr)")
            #expect(run.stderr.contains("the partial download is kept"), "\(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/s.bin.ferry-part")) == Data((0..<5000).map { UInt8($0 % 256) }))
        }
    }

    /// ferryd killed (SIGKILL) in the middle of an HTTP/3 download: started again, it continues from
    /// its last durable checkpoint with a Range over HTTP/3, and the file is byte-exact.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aBackgroundDownloadOverHTTP3SurvivesAKill() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        try await withBackgroundCLI { cli, directory in
            try peer.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            var daemon = cli
            // A checkpoint every 500 kB: the first try stalls after 2.5 MB, so some are durable by then.
            daemon.environment["FERRY_CHECKPOINT_BYTES"] = "500000"
            #expect(try await daemon.run(["daemon", "start"]).status == 0)
            let size = 6_000_000
            let submit = try await cli.run([
                "get", "--background", "--http3-only", "--cacert", "ca.pem", "https://localhost:\(peer.ports[0])/once/\(size)/2500000", "-o", "bg.bin",
            ])
            #expect(submit.status == 0, "\(submit.stderr)")
            try await Self.waitForBytes(2_500_000, cli)
            try await cli.killDaemon()
            #expect(try await daemon.run(["daemon", "start"]).status == 0)
            let wait = try await cli.run(["wait", submit.output, "--timeout", "60"])
            #expect(wait.status == 0, "\(wait.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/bg.bin")) == Data((0..<size).map { UInt8($0 % 256) }))
            _ = try await cli.run(["daemon", "stop"])
            // The second request asked for the rest only, from a checkpoint past the start.
            let log = try String(contentsOfFile: peer.directory + "/requests.log", encoding: .utf8).split(separator: "\n")
            #expect(log.count == 2 && log.first?.hasSuffix(" -") == true, "\(log)")
            let resumedAt = log.last.flatMap { $0.split(separator: "=").last }.flatMap { Int($0.dropLast()) } ?? 0
            #expect(resumedAt >= 500_000 && resumedAt <= 2_500_000, "\(log)")
        }
    }

    /// `--http3` through a proxy goes over TCP through it (QUIC is UDP; curl does the same) and says so
    /// once for the command, whatever the number of URLs; `-s` keeps it quiet.
    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy is needed (.ci/run installs it)"))
    func http3ThroughAProxySaysOnceWhyItIsTCP() async throws {
        try await ProxyCommandTests.withServerAndTinyproxy { server, proxy, directory in
            let cli = CLIRunner(directory: directory)
            let urls = [server.url("/bytes/1000", on: .tls), server.url("/bytes/1001", on: .tls)]
            let said = try await cli.run(
                ["get", "--http3", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", "ca.pem", "--dir", "."] + urls + ["-w", "%{http_version} "]
            )
            #expect(said.status == 0, "\(said.stderr)")
            #expect(!said.stdout.contains("3"), "\(said.stdout)")
            #expect(said.stderr.components(separatedBy: "does not go through a proxy").count == 2, "once: \(said.stderr)")
            let quiet = try await cli.run(["get", "--http3", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", "ca.pem", "-s", urls[0], "-o", "q"])
            #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        }
    }

    @Test func whatHTTP3CannotDoIsRefusedWithTheReason() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cli = CLIRunner(directory: directory)
        let plain = try await cli.run(["get", "--http3-only", "-s", "http://127.0.0.1:1/x", "-o", "p"])
        #expect(plain.status != 0)
        #expect(plain.stderr.contains("HTTP/3 carries https URLs only"), "\(plain.stderr)")
        let proxied = try await cli.run(["get", "--http3-only", "--proxy", "http://127.0.0.1:3128", "-s", "https://127.0.0.1:1/x", "-o", "p"])
        #expect(proxied.status != 0)
        #expect(proxied.stderr.contains("does not go through a proxy"), "\(proxied.stderr)")
        let oldTLS = try await cli.run(["get", "--http3-only", "--tls-max", "1.2", "-s", "https://127.0.0.1:1/x", "-o", "p"])
        #expect(oldTLS.status != 0 && oldTLS.stderr.contains("HTTP/3 needs TLS 1.3"), "\(oldTLS.stderr)")
        let both = try await cli.run(["get", "--http3-only", "--http2", "https://127.0.0.1:1/x"])
        #expect(both.status == 2 && both.stderr.contains("contradict each other"), "\(both.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
