import Crypto
import FerryCore
import FerryTestServer
import Foundation
import NIOCore
import Testing

@testable import FerryEngine

#if canImport(Glibc)
import Glibc
#endif

/// Ferry's HTTP/2 against a peer it did not write: nghttpd (Debian's nghttp2-server, installed by
/// `.ci/run`), whose frame log shows what Ferry sent: its SETTINGS and its WINDOW_UPDATEs.
@Suite struct HTTP2PeerTests {
    static let nghttpd = "/usr/sbin/nghttpd"
    static var unavailable: String? {
        FileManager.default.isExecutableFile(atPath: nghttpd)
            ? nil : "\(nghttpd) is missing (apt-get install nghttp2-server; .ci/run installs it)"
    }

    @Test func nghttpdSeesLargeWindowsAndServesTheBytes() async throws {
        if let reason = Self.unavailable {
            print("skipped: \(reason)")
            return
        }
        let size = 3_000_000
        let content = DeterministicBytes(seed: 31).bytes(offset: 0, count: size)
        let peer = try await Nghttpd.start(files: ["big.bin": content])
        defer { peer.stop() }
        let (port, log, certificates) = (peer.port, peer.log, peer.certificates)

        var options = TransportOptions()
        options.additionalTrustRootsPEM = [certificates.trustRootPEM]
        let transport = NetworkTransport(options: options)
        let response = try await transport.send(
            TransportRequest(method: "GET", url: URL(string: "https://127.0.0.1:\(port)/big.bin")!, headers: Headers()),
            deadline: .now() + .seconds(60)
        )
        var body: [UInt8] = []
        for try await chunk in response.body { body += chunk.readableBytesView }
        try await transport.shutdown()
        #expect(response.protocolName == "h2" && response.status == 200)
        #expect(body == content)

        let frames = try String(contentsOfFile: log, encoding: .utf8)
        // The stream window Ferry announced (the protocol's default is 65,535).
        #expect(frames.contains("SETTINGS_INITIAL_WINDOW_SIZE(0x04):\(4 << 20)"), "\(frames.prefix(3000))")
        #expect(frames.contains("SETTINGS_ENABLE_PUSH(0x02):0"))
        // The GET went as one HEADERS frame with END_STREAM and END_HEADERS (flags 0x05), no empty DATA.
        #expect(frames.split(separator: "\n").contains { $0.contains("recv HEADERS frame") && $0.contains("flags=0x05") }, "\(frames.prefix(3000))")
        #expect(!frames.split(separator: "\n").contains { $0.contains("recv DATA frame") })
        // The connection window raised at once by a WINDOW_UPDATE on stream 0.
        let increments = Self.connectionWindowIncrements(in: frames)
        #expect(increments.contains { $0 >= (16 << 20) - 65535 }, "connection WINDOW_UPDATEs: \(increments)")
    }

    @Test func paddedFramesAndConcurrentStreamsFromNghttpdArriveWhole() async throws {
        if let reason = Self.unavailable {
            print("skipped: \(reason)")
            return
        }
        let sizes = [0, 1, 16383, 16384, 70_000, 1_000_000, 2_500_000, 333]
        var files: [String: [UInt8]] = [:]
        for (seed, size) in sizes.enumerated() {
            files["\(seed).bin"] = DeterministicBytes(seed: UInt64(seed)).bytes(offset: 0, count: size)
        }
        // Every frame padded with up to 255 bytes (RFC 9113 §6.1): the reader must skip them and count
        // them in flow control.
        let peer = try await Nghttpd.start(files: files, arguments: ["--padding=255"])
        defer { peer.stop() }
        let (port, log, certificates) = (peer.port, peer.log, peer.certificates)

        var options = TransportOptions()
        options.additionalTrustRootsPEM = [certificates.trustRootPEM]
        let transport = NetworkTransport(options: options)
        // The first request opens the connection; the others share it, all at once.
        _ = try await fetch(transport, "https://127.0.0.1:\(port)/0.bin", within: .seconds(60))
        try await withThrowingTaskGroup(of: (Int, [UInt8], Bool).self) { group in
            for seed in sizes.indices {
                group.addTask {
                    let (response, body) = try await fetch(transport, "https://127.0.0.1:\(port)/\(seed).bin", within: .seconds(60))
                    return (seed, body, response.protocolName == "h2" && response.timing.reusedConnection == true)
                }
            }
            for try await (seed, body, shared) in group {
                #expect(body == DeterministicBytes(seed: UInt64(seed)).bytes(offset: 0, count: sizes[seed]), "file \(seed)")
                #expect(shared, "file \(seed)")
            }
        }
        try await transport.shutdown()
        let frames = try String(contentsOfFile: log, encoding: .utf8)
        // nghttpd did pad (its log marks padded frames).
        #expect(frames.contains("| PADDED"), "\(frames.prefix(2000))")
        // One connection: nghttpd saw one client SETTINGS that is not an acknowledgement.
        let prefaces = frames.split(separator: "\n").filter { $0.contains("recv SETTINGS frame") && $0.contains("flags=0x00") }
        #expect(prefaces.count == 1, "\(prefaces)")
    }

    /// The increments of the WINDOW_UPDATE frames nghttpd received on stream 0.
    static func connectionWindowIncrements(in log: String) -> [Int] {
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        var increments: [Int] = []
        for (index, line) in lines.enumerated()
        where line.contains("recv WINDOW_UPDATE frame") && line.contains("stream_id=0>") && index + 1 < lines.count {
            let next = lines[index + 1]
            if let range = next.range(of: "window_size_increment=") {
                increments.append(Int(next[range.upperBound...].prefix { $0.isNumber }) ?? 0)
            }
        }
        return increments
    }
}

/// nghttpd serving `files` over TLS on 127.0.0.1 with a fresh certificate, its frame log in `log`.
struct Nghttpd {
    let port: Int
    let log: String
    let certificates: TestCertificates
    let process: ChildProcess

    static func start(files: [String: [UInt8]], arguments: [String] = []) async throws -> Nghttpd {
        let directory = URL(fileURLWithPath: try temporaryPath()).deletingLastPathComponent().path
        let certificates = try TestCertificates.generate()
        try certificates.chainPEM.write(toFile: directory + "/cert.pem", atomically: true, encoding: .utf8)
        try certificates.privateKeyPEM.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        for (name, content) in files {
            try Data(content).write(to: URL(fileURLWithPath: directory + "/www/" + name))
        }
        let port = try LocalPorts.free()
        let log = directory + "/nghttpd.log"
        let process = try ChildProcess.spawn(
            HTTP2PeerTests.nghttpd,
            arguments: ["-v"] + arguments + [
                "--htdocs=\(directory)/www", "--address=127.0.0.1", String(port), directory + "/key.pem", directory + "/cert.pem",
            ],
            output: .file(log)
        )
        let peer = Nghttpd(port: port, log: log, certificates: certificates, process: process)
        do {
            try await LocalPorts.waitForListener(port, name: "nghttpd", process: process)
        } catch {
            peer.stop()
            throw error
        }
        return peer
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
