import FerryCore
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOTLS
import Testing

@testable import FerryEngine

/// The factory's pipeline stages on an embedded channel: which handlers each protocol gets, and that
/// ALPN's choice picks the protocol. (The socket, tunnel and TLS stages run against real peers in
/// NetworkTransportTests, TLSTransportTests and the proxy tests.) On the main actor: an embedded loop
/// may be used only from one thread.
@MainActor @Suite struct ConnectionFactoryTests {
    /// Made in each test, on the thread that uses it (an embedded loop refuses other threads).
    private func factory(_ loop: EmbeddedEventLoop) -> ConnectionFactory {
        ConnectionFactory(
            options: TransportOptions(),
            group: loop,
            pool: ConnectionPool(maximumIdlePerOrigin: 8),
            http2Settings: HTTP2Settings(),
            idleTimeout: .seconds(30)
        )
    }

    private func route(_ url: String) throws -> ConnectionRoute {
        ConnectionRoute(target: try HTTPTarget(URL(string: url)!), proxy: nil)
    }

    private func connectedChannel(_ loop: EmbeddedEventLoop) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return channel
    }

    private func configured(_ attempt: ConnectionFactory.Attempt, _ loop: EmbeddedEventLoop) throws -> ConnectionFactory.Connection? {
        var result: Result<ConnectionFactory.Connection, any Error>?
        attempt.configured.futureResult.whenComplete { result = $0 }
        loop.run()
        return try result?.get()
    }

    @Test func plainHTTPGetsTheHTTP1PipelineAtOnce() throws {
        let loop = EmbeddedEventLoop()
        let channel = try connectedChannel(loop)
        let attempt = ConnectionFactory.Attempt(route: try route("http://files.test/"), tls: nil, raw: false, tunnel: nil, loop: loop)
        try factory(loop).installHandlers(attempt, on: channel)
        guard case .http1(let connection) = try configured(attempt, loop) else {
            Issue.record("expected an HTTP/1.1 connection")
            return
        }
        #expect(connection.key.description == "http://files.test:80")
        let operations = channel.pipeline.syncOperations
        _ = try operations.handler(type: HTTPRequestEncoder.self)
        _ = try operations.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
        _ = try operations.handler(type: HTTP1ConnectionHandler.self)
        _ = try? channel.finish()
    }

    @Test func aByteStreamGetsNoHTTPHandlers() throws {
        let loop = EmbeddedEventLoop()
        let channel = try connectedChannel(loop)
        let attempt = ConnectionFactory.Attempt(route: try route("http://files.test:7/"), tls: nil, raw: true, tunnel: nil, loop: loop)
        try factory(loop).installHandlers(attempt, on: channel)
        guard case .raw(let raw, _) = try configured(attempt, loop) else {
            Issue.record("expected a byte stream")
            return
        }
        #expect(raw === channel)
        #expect((try? channel.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self)) == nil)
        _ = try? channel.finish()
    }

    @Test(arguments: [("h2", true), ("http/1.1", false), (nil, false)] as [(String?, Bool)])
    func alpnsChoicePicksTheProtocol(negotiated: String?, http2: Bool) throws {
        let loop = EmbeddedEventLoop()
        let channel = try connectedChannel(loop)
        let promise = loop.makePromise(of: ConnectionFactory.Connection.self)
        let key = try route("https://files.test/").key
        try channel.pipeline.syncOperations.addHandler(factory(loop).alpnHandler(promise, key: key, secure: true))
        var result: ConnectionFactory.Connection?
        promise.futureResult.whenSuccess { result = $0 }
        #expect(result == nil, "nothing before the handshake")
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: negotiated))
        loop.run()
        switch result {
        case .http2?:
            #expect(http2)
            _ = try channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self)
        case .http1?:
            #expect(!http2)
            _ = try channel.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self)
        default:
            Issue.record("ALPN's choice configured nothing (\(String(describing: result)))")
        }
        _ = try? channel.finish()
    }

    @Test func theConnectTimeoutIsTheIdleTimeoutUnlessSetAndNeverPastTheDeadline() {
        let loop = EmbeddedEventLoop()
        let factory = factory(loop)
        #expect(factory.connectTimeout(.distantFuture) == .seconds(30))
        let soon = factory.connectTimeout(.now() + .seconds(2))
        #expect(soon <= .seconds(2) && soon > .zero)
        #expect(factory.connectTimeout(.now() - .seconds(1)) == .milliseconds(1))
        var options = TransportOptions()
        options.connectTimeout = 5
        let set = ConnectionFactory(options: options, group: loop, pool: ConnectionPool(maximumIdlePerOrigin: 8), http2Settings: HTTP2Settings(), idleTimeout: .seconds(30))
        #expect(set.connectTimeout(.distantFuture) == .seconds(5))
    }
}
