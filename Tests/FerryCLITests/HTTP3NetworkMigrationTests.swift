import FerryCore
import FerryTestServer
import Foundation
import Testing

/// Connection migration as a laptop meets it (RFC 9000 §9, issue 42): in network namespaces, two
/// networks lead to one server, and mid-download the default route moves from the first to the second
/// and the first goes down (`Tests/Scripts/netns_migration.py`). ferryd sees the route change and moves
/// the QUIC connection: the server logs one request, without a Range (0 bytes fetched twice), from
/// both client addresses, and the file is byte-exact.
@Suite struct HTTP3NetworkMigrationTests {
    /// Whether this machine lets a process make network namespaces (as root, or through a user
    /// namespace), with `ip` and `nsenter` at hand.
    static let namespaces: Bool = {
        guard let process = try? ChildProcess.spawn("/usr/bin/env", arguments: ["unshare", "-rn", "sh", "-c", "ip link add probe0 type veth peer name probe1 && nsenter --version"])
        else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    @Test(
        .enabled(if: HTTP3CommandTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"),
        .enabled(if: namespaces, "this machine cannot make network namespaces (unshare -rn, ip, nsenter)")
    )
    func aDownloadFollowsTheMachineToAnotherNetwork() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let peerDirectory = directory + "/peer"
        try FileManager.default.createDirectory(atPath: peerDirectory, withIntermediateDirectories: true)
        let certificates = try TestCertificates.generate()
        try certificates.chainPEM.write(toFile: peerDirectory + "/cert.pem", atomically: true, encoding: .utf8)
        try certificates.privateKeyPEM.write(toFile: peerDirectory + "/key.pem", atomically: true, encoding: .utf8)
        try certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        let process = try ChildProcess.spawn("/usr/bin/env", arguments: [
            "unshare", "-rn", "python3", PythonPeer.script("netns_migration.py"), CLIRunner.binary, PythonPeer.script("h3_peer.py"),
            peerDirectory + "/cert.pem", peerDirectory + "/key.pem", directory + "/ca.pem", directory,
        ])
        let output = await process.standardOutput?.readToEndOffPool() ?? Data()
        await process.exited()
        let result = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any], "\(String(decoding: output, as: UTF8.self))")
        #expect(result["error"] == nil, "\(result)")
        #expect(result["wait"] as? Int == 0, "\(result)")
        // One request, no Range: the connection moved, nothing was fetched again.
        let requests = result["requests"] as? [String] ?? []
        #expect(requests == ["/drip/6000000/60000/30 -"], "\(requests)")
        // The server saw the client on both networks.
        let addresses = Set((result["addresses"] as? [String] ?? []).compactMap { $0.split(separator: " ").first.map(String.init) })
        #expect(addresses == ["10.1.0.2", "10.2.0.2"], "\(addresses)")
        let size = 6_000_000
        #expect(FileManager.default.contents(atPath: directory + "/moved.bin") == Data((0..<size).map { UInt8($0 % 256) }))
    }
}
