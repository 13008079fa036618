import FerryQUIC
import FerryTestServer
import Foundation
import Testing

/// A QUIC connection with a real peer: aioquic's HTTP/3 server (Tests/Scripts/h3_peer.py) over UDP on
/// 127.0.0.1. The handshake completes with the server's certificate judged by the client, and the
/// server's streams reach the client.
@Suite struct QUICHandshakeTests {
    static let aioquic = PythonPeer.hasModule("aioquic")

    /// The DER of the first certificate in `pem`.
    static func leafDER(_ pem: String) -> [UInt8] {
        let body = pem.components(separatedBy: "-----BEGIN CERTIFICATE-----")[1].components(separatedBy: "-----END CERTIFICATE-----")[0]
        return Array(Data(base64Encoded: body.filter { !$0.isWhitespace }) ?? Data())
    }

    final class Seen: @unchecked Sendable { var chains: [[[UInt8]]] = [] }

    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func theHandshakeCompletesAndTheServersControlStreamArrives() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let seen = Seen()
        let connection = try QUICClientConnection(serverName: "localhost", applicationProtocols: ["h3"]) { chain in
            seen.chains.append(chain)
            return true
        }
        let outcome = await UDPDriver.run(connection, port: peer.ports[0]) { events in
            events.contains { if case .streamData(3, _, _) = $0 { true } else { false } }
        }
        #expect(!outcome.timedOut, "\(outcome.events)")
        #expect(outcome.events.first == .handshakeComplete(applicationProtocol: "h3"))
        #expect(seen.chains.first?.first == Self.leafDER(peer.certificates.chainPEM))
        // The server's control stream (3): its type (0x00), then SETTINGS (0x04).
        let control = outcome.events.compactMap { if case .streamData(3, let data, _) = $0 { data } else { nil } }.joined()
        #expect(Array(control.prefix(2)) == [0x00, 0x04], "\(Array(control.prefix(8)))")
        #expect(outcome.connection.peerParameters?.initialMaxStreamsBidi ?? 0 > 0)
    }

    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aChainTheClientRefusesEndsTheConnection() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let connection = try QUICClientConnection(serverName: "localhost", applicationProtocols: ["h3"]) { _ in false }
        let outcome = await UDPDriver.run(connection, port: peer.ports[0]) { events in
            events.contains { if case .closed = $0 { true } else { false } }
        }
        #expect(!outcome.timedOut)
        #expect(!outcome.events.contains { if case .handshakeComplete = $0 { true } else { false } })
        guard case .closed(_, let reason, byPeer: false)? = outcome.events.last else { Issue.record("\(outcome.events)"); return }
        #expect(reason.contains("handshake failed"), "\(reason)")
    }

    /// Without a `verify` closure the chain comes out as an event and the handshake waits for the
    /// verdict: accepted, it completes; refused, the connection closes.
    @Test(.enabled(if: aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"), arguments: [true, false])
    func theChainCanBeJudgedAsynchronously(accept: Bool) async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let leaf = Self.leafDER(peer.certificates.chainPEM)
        let connection = try QUICClientConnection(serverName: "localhost", applicationProtocols: ["h3"])
        let outcome = await UDPDriver.run(connection, port: peer.ports[0], step: { connection, events in
            var datagrams: [[UInt8]] = []
            for case .certificateChain(let chain) in events {
                datagrams += connection.finishVerification(accepted: accept && chain.first == leaf)
            }
            return datagrams
        }) { events in
            events.contains { if case .handshakeComplete = $0 { true } else if case .closed = $0 { true } else { false } }
        }
        #expect(!outcome.timedOut)
        #expect(outcome.events.first.map { if case .certificateChain = $0 { true } else { false } } == true)
        #expect(outcome.events.contains(.handshakeComplete(applicationProtocol: "h3")) == accept, "\(outcome.events)")
    }
}
