import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Stream tasks against a real TCP line echo server (Tests/Scripts/tcp_peer.py), with STARTTLS.
@Suite struct StreamTaskTests {
    /// The line echo peer (Tests/Scripts/tcp_peer.py).
    private struct Peer {
        let peer: PythonPeer
        var port: Int { peer.ports[0] }
        var certificates: TestCertificates { peer.certificates }
        var directory: String { peer.directory }

        static func start() async throws -> Peer { Peer(peer: try await PythonPeer.start("tcp_peer.py")) }

        func stop() { peer.stop() }
    }

    @Test func linesEchoAndClosingWriteEndsTheStream() async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let stream = session.streamTask(withHostName: "127.0.0.1", port: peer.port)
        stream.resume()
        try await stream.write(Data("hello\n".utf8), timeout: 10)
        #expect(try await stream.readText(6) == "hello\n")
        // A read that asks for more than comes waits, then its timeout ends it.
        try await stream.write(Data("SILENT\n".utf8), timeout: 10)
        let error = await #expect(throws: FerryError.self) {
            _ = try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: 0.2)
        }
        #expect(error?.code == .timedOut)
        await stream.closeWrite()
        #expect(try await stream.readText(100) == "BYE\n")
        let (rest, atEOF) = try await stream.readData(ofMinLength: 1, maxLength: 10, timeout: 10)
        #expect(rest == nil && atEOF)
        await stream.waitUntilFinished()
        #expect(stream.error == nil)
    }

    @Test func startSecureConnectionUpgradesWithTheSessionsTrust() async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        var configuration = SessionConfiguration.ephemeral
        configuration.tls.additionalTrustRootsPEM = [peer.certificates.trustRootPEM]
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let stream = session.streamTask(withHostName: "localhost", port: peer.port)
        stream.resume()
        try await stream.write(Data("STARTTLS\n".utf8), timeout: 10)
        #expect(try await stream.readText(3) == "GO\n")
        try await stream.startSecureConnection()
        try await stream.write(Data("over TLS\n".utf8), timeout: 10)
        #expect(try await stream.readText(9) == "over TLS\n")
        stream.cancel()
        await stream.waitUntilFinished()

        // Without the trust root the handshake is refused in plain words.
        let untrusting = Session(configuration: .ephemeral)
        defer { untrusting.invalidateAndCancel() }
        let refused = untrusting.streamTask(withHostName: "localhost", port: peer.port)
        refused.resume()
        try await refused.write(Data("STARTTLS\n".utf8), timeout: 10)
        #expect(try await refused.readText(3) == "GO\n")
        let error = await #expect(throws: FerryError.self) { try await refused.startSecureConnection() }
        #expect(error?.code == .serverCertificateUntrusted || error?.code == .secureConnectionFailed)
        refused.cancel()
    }

    @Test func theStreamsPairReadsAndWrites() async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let stream = session.streamTask(withHostName: "127.0.0.1", port: peer.port)
        stream.resume()
        let (bytes, write) = stream.streams()
        try await write(Data("one\ntwo\n".utf8))
        await stream.closeWrite()
        var received = Data()
        for try await chunk in bytes { received += chunk }
        #expect(String(decoding: received, as: UTF8.self) == "one\ntwo\nBYE\n")
    }

    @Test(.enabled(if: ProxyPeer.unavailable == nil, "tinyproxy and microsocks are needed (.ci/run installs them)"))
    func aStreamGoesThroughTheSessionsHTTPOrSOCKSProxy() async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let http = try await ProxyPeer.tinyproxy(in: peer.directory)
        defer { http.stop() }
        let socks = try await ProxyPeer.microsocks(in: peer.directory, user: "ferry", password: "secret")
        defer { socks.stop() }
        for proxy in [
            SessionConfiguration.Proxy(kind: .http, host: "127.0.0.1", port: http.port),
            SessionConfiguration.Proxy(kind: .socks5, host: "127.0.0.1", port: socks.port, username: "ferry", password: "secret"),
        ] {
            var configuration = SessionConfiguration.ephemeral
            configuration.proxy = proxy
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let stream = session.streamTask(withHostName: "127.0.0.1", port: peer.port)
            stream.resume()
            let line = "via \(proxy.kind)\n"
            try await stream.write(Data(line.utf8), timeout: 10)
            #expect(try await stream.readText(line.utf8.count) == line)
            stream.cancel()
            await stream.waitUntilFinished()
        }
        let log = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: http.log))) ?? Data(), as: UTF8.self)
        #expect(log.contains("CONNECT"), "tinyproxy's log shows no CONNECT")

        // The SOCKS proxy is in the path: with a wrong password the connection is refused.
        var configuration = SessionConfiguration.ephemeral
        configuration.proxy = SessionConfiguration.Proxy(kind: .socks5, host: "127.0.0.1", port: socks.port, username: "ferry", password: "wrong")
        let refusedSession = Session(configuration: configuration)
        defer { refusedSession.invalidateAndCancel() }
        let refused = refusedSession.streamTask(withHostName: "127.0.0.1", port: peer.port)
        refused.resume()
        await #expect(throws: FerryError.self) { try await refused.write(Data("x\n".utf8), timeout: 10) }
    }

    @Test func aBadPortOrHostIsRefusedAndARefusedConnectionFails() async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let badPort = session.streamTask(withHostName: "127.0.0.1", port: 70000)
        badPort.resume()
        await badPort.waitUntilFinished()
        #expect(badPort.error?.code == .badURL)
        let closed = session.streamTask(withHostName: "127.0.0.1", port: try LocalPorts.free())
        closed.resume()
        let error = await #expect(throws: FerryError.self) { try await closed.write(Data("x".utf8), timeout: 5) }
        #expect(error?.code == .cannotConnectToHost)
    }
}
