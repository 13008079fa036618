import Crypto
@testable import FerryQUIC
import FerryTestServer
import Foundation
import Testing

/// NewReno and pacing (RFC 9002 §7) as a value, and on a connection that uploads to aioquic (issue 42).
@Suite struct QUICCongestionTests {
    static let millisecond: UInt64 = 1_000_000

    @Test func slowStartGrowsByWhatIsAcknowledgedAndALossHalvesOncePerRoundTrip() {
        var congestion = QUICCongestion()
        #expect(congestion.window == 12_000, "ten datagrams of 1,200 (RFC 9002 §7.2)")
        congestion.sent(1_200)
        congestion.acknowledged(1_200, sentTime: 1)
        #expect(congestion.window == 13_200 && congestion.bytesInFlight == 0)
        for _ in 0..<4 { congestion.sent(1_200) }
        // Two losses of packets sent before the first was declared: one event, one halving.
        congestion.lost(bytes: 1_200, latestSentTime: 10, now: 100)
        #expect(congestion.window == 6_600 && congestion.slowStartThreshold == 6_600)
        congestion.lost(bytes: 1_200, latestSentTime: 20, now: 110)
        #expect(congestion.window == 6_600, "a packet sent before recovery began does not halve it again")
        // An acknowledgement of a packet sent before recovery began does not grow it.
        congestion.acknowledged(1_200, sentTime: 50)
        #expect(congestion.window == 6_600)
        // After: congestion avoidance, one datagram a window.
        congestion.acknowledged(1_200, sentTime: 200)
        #expect(congestion.window == 6_600 + 1_200 * 1_200 / 6_600)
        // A loss of a packet sent after recovery began is a new event.
        congestion.lost(bytes: 0, latestSentTime: 300, now: 400)
        #expect(congestion.window == max(6_818 / 2, 2_400))
        for _ in 0..<10 { congestion.lost(bytes: 0, latestSentTime: .max - 1, now: .max) }
        #expect(congestion.window >= congestion.minimumWindow)
        congestion.persistentCongestion()
        #expect(congestion.window == 2_400)
    }

    @Test func theWindowAndThePacerHoldPacketsBack() {
        var congestion = QUICCongestion()
        let rtt = 10 * Self.millisecond
        var now: UInt64 = 1_000 * Self.millisecond
        var sent = 0
        while congestion.canSend(1_200, now: now, smoothedRTT: rtt) {
            congestion.sent(1_200)
            sent += 1
        }
        #expect(sent == 10, "the initial window's worth at once")
        #expect(congestion.pacingDelay(for: 1_200, now: now, smoothedRTT: rtt) == nil, "the window, not the pacer, is full")
        // The window opens (all acknowledged); the pacer has no tokens left: the next packet waits
        // 1,200 bytes at 5/4 of the window per round trip.
        for _ in 0..<10 { congestion.acknowledged(1_200, sentTime: now - 1) }
        let allowedAtOnce = congestion.canSend(1_200, now: now, smoothedRTT: rtt)
        #expect(!allowedAtOnce)
        let due = try! #require(congestion.pacingDelay(for: 1_200, now: now, smoothedRTT: rtt))
        let expected = UInt64((1_200 / (1.25 * Double(congestion.window) / Double(rtt))).rounded(.up))
        #expect(due - now == expected)
        now = due
        let allowedThen = congestion.canSend(1_200, now: now, smoothedRTT: rtt)
        #expect(allowedThen)
    }

    /// 1 MB POSTed to aioquic: what this side has in flight never exceeds its congestion window
    /// (flow control alone would let the whole megabyte out at once), the first flight fits the
    /// window the handshake left, and the body arrives whole.
    @Test(.enabled(if: QUICHandshakeTests.aioquic, "Python's aioquic is not installed (.ci/run installs it from PyPI)"))
    func anUploadStaysWithinTheCongestionWindow() async throws {
        let peer = try await PythonPeer.start("h3_peer.py")
        defer { peer.stop() }
        let body = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let connection = try QUICClientConnection(serverName: "localhost", applicationProtocols: ["h3"]) { _ in true }
        final class State: @unchecked Sendable {
            var stream: UInt64?
            var firstFlight = 0
            var firstWindow = 0
            var worstExcess = Int.min
            var losses = false
            var pending: [UInt8] = []
            var fields: [(name: String, value: String)] = []
            var ended = false
            var sizes: [Int] = []
        }
        let state = State()
        let port = peer.ports[0]
        let outcome = await UDPDriver.run(connection, port: port, limit: 60, sending: { state.sizes.append($0.count) }, step: { connection, events in
            var datagrams: [[UInt8]] = []
            for event in events {
                switch event {
                case .handshakeComplete:
                    let before = connection.recovery.congestion.bytesInFlight
                    let (stream, flight) = connection.openRequest("POST", "/upload", port: port, body: body)
                    state.stream = stream
                    state.firstFlight = connection.recovery.congestion.bytesInFlight - before
                    state.firstWindow = connection.recovery.congestion.window
                    datagrams += flight
                case .streamData(let id, let data, let fin) where id == state.stream:
                    state.pending += data
                    datagrams += connection.consume(data.count, on: id)
                    if let (frames, _) = try? HTTP3Frame.parse(state.pending) {
                        for case .headers(let section) in frames { state.fields = (try? QPACK.decode(section)) ?? [] }
                    }
                    if fin { state.ended = true }
                default: break
                }
            }
            state.worstExcess = connection.recovery.congestion.overshoot
            state.losses = connection.recovery.congestion.slowStartThreshold != .max
            return datagrams
        }) { _ in state.ended }
        #expect(!outcome.timedOut)
        // (The window has grown from 12,000 by the handshake's acknowledged bytes.)
        #expect(state.firstFlight > 0 && state.firstFlight <= state.firstWindow && state.firstWindow < 20_000, "the first flight: \(state.firstFlight) bytes, window \(state.firstWindow)")
        // (A probe may go past the window by a packet or two, RFC 9002 §7.5.)
        #expect(state.worstExcess <= 2 * 1_200, "in flight past the window by \(state.worstExcess) bytes")
        print("an upload of 1 MB to aioquic: \(state.losses ? "losses, and the window halved" : "no loss")")
        // Packets of body bytes are exactly full (1,200 bytes), none nearly so: runs of them go to the
        // kernel as one segmented write (GSO).
        #expect(state.sizes.filter { $0 == 1_200 }.count >= 1_000_000 / 1_200, "\(state.sizes.count) datagrams")
        #expect(!state.sizes.contains { (1_200 - QUICClientConnection.fullPacketSlack)..<1_200 ~= $0 }, "\(Set(state.sizes).sorted())")
        let fields = Dictionary(state.fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        #expect(fields["x-body-length"] == "1000000")
        #expect(fields["x-body-sha256"] == SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined())
    }
}
