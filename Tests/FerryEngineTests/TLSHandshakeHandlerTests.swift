import Foundation
import NIOCore
import NIOEmbedded
import NIOTLS
import Testing

@testable import FerryEngine

/// The handler that reports a TLS handshake's end, on an embedded channel: the test plays NIO's TLS
/// handler by firing its events.
@MainActor @Suite struct TLSHandshakeHandlerTests {
    private func outcome(_ future: EventLoopFuture<TLSHandshakeHandler.Outcome>) throws -> TLSHandshakeHandler.Outcome? {
        var result: Result<TLSHandshakeHandler.Outcome, any Error>?
        future.whenComplete { result = $0 }
        return try result?.get()
    }

    @Test(arguments: [false, true])
    func theHandshakeBeginsWhenTheConnectionIsUpNotWhenSomeoneWaits(addedAfterConnect: Bool) throws {
        let channel = EmbeddedChannel()
        let promise = channel.embeddedEventLoop.makePromise(of: TLSHandshakeHandler.Outcome.self)
        if addedAfterConnect {
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            try channel.pipeline.syncOperations.addHandler(TLSHandshakeHandler(promise: promise))
        } else {
            try channel.pipeline.syncOperations.addHandler(TLSHandshakeHandler(promise: promise))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }
        // Everything after this moment is "later": a caller that only now begins to wait must not
        // move the start.
        let began = Date()
        #expect(try outcome(promise.futureResult) == nil)
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2"))
        let done = try #require(try outcome(promise.futureResult))
        #expect(done.start <= began)
        #expect(done.start <= done.end)
        #expect(done.applicationProtocol == "h2")
        _ = try? channel.finish()
    }

    @Test func aConnectionThatClosesFirstFailsTheHandshake() throws {
        let channel = EmbeddedChannel()
        let promise = channel.embeddedEventLoop.makePromise(of: TLSHandshakeHandler.Outcome.self)
        try channel.pipeline.syncOperations.addHandler(TLSHandshakeHandler(promise: promise))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.close().wait()
        #expect(throws: (any Error).self) { try outcome(promise.futureResult) }
    }
}
