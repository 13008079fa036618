import FerryQUIC
import FerryTestServer
import Foundation
import Testing

/// An HTTP/3 GET (RFC 9114) on FerryQUIC's connection to aioquic's server: this side's control stream
/// with SETTINGS, the request's HEADERS on a bidirectional stream, and the response's HEADERS and DATA
/// read back, byte for byte.
@Suite struct HTTP3RequestTests {
    /// What came back on one request stream.
    struct Response {
        var fields: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var ended = false
    }

    static func get(
        _ path: String,
        port: Int,
        certificates: TestCertificates,
        drop: @escaping @Sendable (Bool, Int) -> Bool = { _, _ in false }
    ) async throws -> (Response, [QUICClientConnection.Event], QUICClientConnection) {
        let connection = try QUICClientConnection(serverName: "localhost", applicationProtocols: ["h3"]) { chain in
            chain.first == QUICHandshakeTests.leafDER(certificates.chainPEM)
        }
        final class State: @unchecked Sendable {
            var requestStream: UInt64?
            var pending: [UInt8] = []
            var response = Response()
        }
        let state = State()
        let outcome = await UDPDriver.run(connection, port: port, limit: 60, drop: drop, step: { connection, events in
            var datagrams: [[UInt8]] = []
            for event in events {
                switch event {
                case .handshakeComplete:
                    let (request, opening) = connection.openRequest("GET", path, port: port)
                    state.requestStream = request
                    datagrams += opening
                case .streamData(let id, let data, let fin) where id == state.requestStream:
                    state.pending += data
                    datagrams += connection.consume(data.count, on: id)
                    if let (frames, consumed) = try? HTTP3Frame.parse(state.pending) {
                        state.pending.removeFirst(consumed)
                        for frame in frames {
                            switch frame {
                            case .headers(let section): state.response.fields = (try? QPACK.decode(section)) ?? []
                            case .data(let bytes): state.response.body += bytes
                            default: break
                            }
                        }
                    }
                    if fin { state.response.ended = true }
                default: break
                }
            }
            return datagrams
        }) { _ in state.response.ended }
        #expect(!outcome.timedOut, "\(outcome.events.suffix(5))")
        return (state.response, outcome.events, outcome.connection)
    }

    @Test(.enabled(if: QUICHandshakeTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func aGetComesBackByteForByte() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        // 40 MB: past the first stream window (16 MiB), so the window must move as the body is read.
        for size in [0, 1_000, 300_000, 40_000_000] {
            let (response, _, connection) = try await Self.get("/bytes/\(size)", port: peer.ports[0], certificates: peer.certificates)
            // The request stream (0) is done both ways: nothing of it is kept (20,000 requests on one
            // connection held 20,000 streams, and each packet sorted them all).
            #expect(!connection.holdsState(for: 0))
            #expect(connection.holdsState(for: 2), "this side's control stream stays")
            let fields = Dictionary(response.fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            #expect(fields[":status"] == "200" && fields["content-length"] == String(size) && fields["x-path"] == "/bytes/\(size)")
            #expect(response.body == Array((Array(0...255) + []).map(UInt8.init).repeatedPrefix(size)))
        }
        let (missing, _, _) = try await Self.get("/nothing", port: peer.ports[0], certificates: peer.certificates)
        #expect(missing.fields.first { $0.name == ":status" }?.value == "404")
    }
}

/// RFC 9002's loss recovery on a lossy path: datagrams dropped each way, deterministically (among them
/// the client's first Initial, and handshake and body packets), and the GET still comes back whole.
@Suite struct QUICLossRecoveryTests {
    @Test(.enabled(if: QUICHandshakeTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"), arguments: [
        "the first Initial", "every 7th datagram each way", "a run of 20 in the body",
    ])
    func aGetSurvivesLostDatagrams(loss: String) async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let drop: @Sendable (Bool, Int) -> Bool =
            switch loss {
            case "the first Initial": { outgoing, index in outgoing && index == 1 }
            case "every 7th datagram each way": { _, index in index % 7 == 0 }
            default: { outgoing, index in !outgoing && (40..<60).contains(index) }
            }
        let (response, _, _) = try await HTTP3RequestTests.get("/bytes/500000", port: peer.ports[0], certificates: peer.certificates, drop: drop)
        #expect(response.fields.first { $0.name == ":status" }?.value == "200")
        #expect(response.body == Array(Array(0...255).map(UInt8.init).repeatedPrefix(500_000)), "\(response.body.count) bytes")
    }
}


extension Array where Element == UInt8 {
    /// This array repeated, cut to `count` bytes.
    func repeatedPrefix(_ count: Int) -> [UInt8] {
        guard !isEmpty else { return [] }
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count { result += prefix(count - result.count) }
        return result
    }
}
