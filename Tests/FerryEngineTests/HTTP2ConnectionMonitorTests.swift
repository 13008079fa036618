import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import FerryEngine

/// The HTTP/2 connection watcher on its own, on an embedded channel whose clock the test moves.
@Suite struct HTTP2ConnectionMonitorTests {
    private final class Seen: @unchecked Sendable {
        var maximumStreams: [Int] = []
        var goAways = 0
        var idle = true
    }

    private func monitored(_ seen: Seen) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            HTTP2ConnectionMonitor(
                events: .init(
                    maximumStreams: { seen.maximumStreams.append($0) },
                    goAway: { _ in seen.goAways += 1 },
                    isIdle: { seen.idle }
                ),
                pingInterval: .seconds(20),
                idleTimeout: .seconds(60)
            )
        )
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    private func sentPing(_ channel: EmbeddedChannel) throws -> HTTP2PingData? {
        guard let frame = try channel.readOutbound(as: HTTP2Frame.self) else { return nil }
        guard case .ping(let data, ack: false) = frame.payload else { return nil }
        return data
    }

    @Test func settingsAndGoAwayAreReported() throws {
        let seen = Seen()
        let channel = try monitored(seen)
        try channel.writeInbound(
            HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 7)])))
        )
        #expect(seen.maximumStreams == [7])
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil)))
        #expect(seen.goAways == 1)
        // The frames go on down the pipeline.
        #expect(try channel.readInbound(as: HTTP2Frame.self) != nil)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func anIdleConnectionIsPingedAndClosedWhenAPingGoesUnanswered() throws {
        let seen = Seen()
        let channel = try monitored(seen)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        let first = try #require(try sentPing(channel))
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .ping(first, ack: true)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        // Answered: checked again, not closed.
        #expect(channel.isActive)
        _ = try #require(try sentPing(channel))
        // This one goes unanswered: closed at the next check.
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(!channel.isActive)
        #expect(seen.goAways >= 1)
    }

    @Test func busyConnectionsAreNotPingedAndIdleOnesCloseAfterTheirIdleTime() throws {
        let seen = Seen()
        seen.idle = false
        let channel = try monitored(seen)
        channel.embeddedEventLoop.advanceTime(by: .seconds(200))
        #expect(try sentPing(channel) == nil)
        #expect(channel.isActive)
        seen.idle = true
        // Answered pings keep it open only until it has been idle for the idle timeout (60 s).
        for _ in 0..<2 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(20))
            let ping = try #require(try sentPing(channel))
            try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: true)))
            #expect(channel.isActive)
        }
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(!channel.isActive)
    }
}
