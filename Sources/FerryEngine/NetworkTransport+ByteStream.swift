import FerryCore
import NIOHTTP1
public import Foundation
public import NIOCore

/// A connection that carries bytes rather than HTTP exchanges: a WebSocket after its upgrade, a stream
/// task (SPEC S2.6, S2.10). It goes through the session's proxy (an HTTP proxy by CONNECT whatever the
/// scheme, or SOCKS5) and, when asked, TLS checked as the session's https requests are.
public protocol ByteStreamConnector: Sendable {
    /// Opens a connection to `host`:`port`.
    /// - Parameters:
    ///   - tls: nil for plain TCP; otherwise the ALPN protocols to offer (empty: none).
    ///   - deadline: when connecting, the proxy's tunnel and the TLS handshake must be done.
    /// - Throws: ``FerryError`` (cannotConnectToHost, timedOut, secureConnectionFailed, ...).
    func openByteStream(host: String, port: Int, tls: [String]?, deadline: NIODeadline) async throws -> ByteStream

    /// Adds TLS to an open byte stream (a stream task's startSecureConnection), checked as ``openByteStream``'s.
    func startTLS(on stream: ByteStream, deadline: NIODeadline) async throws
}

/// An open byte stream: its channel, with nothing but TLS and the transport's tunnel behind it.
public struct ByteStream: Sendable {
    /// The channel; add handlers after the ones in place.
    public let channel: any Channel
    /// The host and port asked for (not the proxy's).
    public let host: String
    public let port: Int
    /// Whether TLS is in place.
    public var secure: Bool
    /// The peer (`127.0.0.1:8080`; the proxy's, through one).
    public let remoteAddress: String?
    /// The TLS version agreed, if any.
    public var tlsVersion: String?
}

extension NetworkTransport: ByteStreamConnector {
    public func openByteStream(host: String, port: Int, tls: [String]?, deadline: NIODeadline) async throws -> ByteStream {
        guard (1...65535).contains(port) else {
            throw FerryError(.badURL, "the port \(port) is not between 1 and 65535")
        }
        let named = host.contains(":") ? "[\(host)]" : host
        // The target an https (or http) request to the same place would have: its proxy choice, its
        // resolve overrides, its TLS checks.
        guard let url = URL(string: "\(tls == nil ? "http" : "https")://\(named):\(port)/") else {
            throw FerryError(.badURL, "\(host) is not a host name or address")
        }
        let target = try HTTPTarget(url)
        var proxy = try proxies.get().proxy(for: url)
        if let server = proxy, server.username == nil, let credential = options.proxyCredential?(server) {
            proxy?.username = credential.user
            proxy?.password = credential.password
        }
        let route = ConnectionRoute(target: target, proxy: proxy)
        let made = try await connect(route, deadline: deadline, purpose: .raw(tlsProtocols: tls))
        guard case .raw(let channel, let info) = made else {
            preconditionFailure("a byte stream came back as an HTTP connection")
        }
        let details = info.details
        return ByteStream(
            channel: channel,
            host: target.host,
            port: target.port,
            secure: tls != nil,
            remoteAddress: details.remoteAddress,
            tlsVersion: details.tlsVersion
        )
    }

    public func startTLS(on stream: ByteStream, deadline: NIODeadline) async throws {
        let tls = try tlsClient(protocols: [])
        let channel = stream.channel
        let report = TLSReport()
        let handshake = channel.eventLoop.makePromise(of: TLSHandshakeHandler.Outcome.self)
        let host = stream.host
        try await channel.eventLoop.submit {
            let operations = channel.pipeline.syncOperations
            // In front of whatever reads the stream: bytes from now on are TLS records.
            try operations.addHandler(TLSHandshakeHandler(promise: handshake), position: .first)
            try operations.addHandler(try tls.handler(host: host, port: stream.port, report: report), position: .first)
        }.get()
        let timeout = channel.eventLoop.scheduleTask(deadline: deadline) {
            handshake.fail(FerryError(.timedOut, "the TLS handshake with \(host) took too long"))
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in handshake.fail(ChannelError.ioOnClosedChannel) }
        defer { timeout.cancel() }
        do {
            _ = try await handshake.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw ConnectionFactory.handshakeError(error, report: report, host: host, tls: tls, url: "https://\(host):\(stream.port)/")
        }
    }

    /// The TLS client offering `protocols` by ALPN, made once per list.
    func tlsClient(protocols: [String]) throws -> TLSClient {
        if let made = byteStreamTLS.withLockedValue({ $0[protocols] }) { return made }
        do {
            let client = try TLSClient(options: options, protocols: protocols)
            byteStreamTLS.withLockedValue { $0[protocols] = client }
            return client
        } catch {
            throw error as? FerryError ?? FerryError(.secureConnectionFailed, "cannot set up TLS: \(error)")
        }
    }
}

extension NetworkTransport {
    /// Hands the connection of exchange `id` over as a byte stream (``TransportResponse/detach``): the
    /// HTTP handlers leave its pipeline, a stream reader takes their place, and the body bytes already
    /// read (those `body` still holds, then those its handler held) come first.
    static func detach(
        _ connection: HTTP1Connection,
        exchange id: Int,
        target: HTTPTarget,
        body: TransportBodyStream
    ) async throws -> ByteStreamConnection {
        let channel = connection.channel
        let handler = connection.handler
        let details = connection.info.details
        let stream = ByteStream(
            channel: channel,
            host: target.host,
            port: target.port,
            secure: target.secure,
            remoteAddress: details.remoteAddress,
            tlsVersion: details.tlsVersion
        )
        let made = try await channel.eventLoop.submit {
            let detached = try handler.value.detach(id: id)
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.context(handlerType: ByteToMessageHandler<HTTPResponseDecoder>.self)
            let reader = ByteStreamReadHandler()
            if detached.midBody {
                // The decoder parsed all it was given: new bytes must not reach it (it would parse them).
                try operations.addHandler(reader, position: .before(decoder.handler))
            } else {
                // After a 101 the decoder stopped; it forwards what it holds when it leaves.
                try operations.addHandler(reader, position: .last)
            }
            let connection = ByteStreamConnection.attach(stream, reader: reader)
            var held = detached.held
            if held.readableBytes > 0 { _ = connection.received(&held) }
            operations.removeHandler(handler.value, promise: nil)
            let encoder = try operations.context(handlerType: HTTPRequestEncoder.self)
            operations.removeHandler(context: encoder, promise: nil)
            operations.removeHandler(context: decoder, promise: nil)
            if detached.readPending { channel.read() }
            return connection
        }.get()
        // The body's sequence was finished: it yields what it held, then ends.
        var before = ByteBuffer()
        for try await chunk in body {
            var chunk = chunk
            before.writeBuffer(&chunk)
        }
        made.prepend(before)
        return made
    }
}
