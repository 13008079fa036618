import FerryCore
import NIOCore
import NIOHPACK
import NIOHTTP1

/// HTTP/2 on ``NetworkTransport``'s connections: the handler a connection gets when ALPN picks `h2`, and
/// how a request runs on one of its streams (docs/ARCHITECTURE.md, "The engine").
extension NetworkTransport {
    /// Puts the HTTP/2 client on a connection whose ALPN chose `h2` (on its loop).
    static func configureHTTP2(
        _ channel: any Channel,
        key: PoolKey,
        pool: ConnectionPool,
        settings: HTTP2Settings,
        idleTimeout: TimeAmount
    ) throws -> HTTP2Connection {
        let handler = HTTP2ClientHandler(settings: settings, idleTimeout: idleTimeout)
        let connection = HTTP2Connection(
            channel: channel,
            handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
            key: key
        )
        handler.events = HTTP2ClientHandler.Events(
            maximumStreams: { connection.maximumStreams($0) },
            goAway: {
                connection.drain()
                pool.retire(connection)
            },
            streamClosed: { connection.release() },
            isIdle: { connection.isIdle }
        )
        try channel.pipeline.syncOperations.addHandler(handler)
        channel.closeFuture.whenComplete { _ in
            connection.drain()
            pool.retire(connection)
        }
        return connection
    }

    /// Runs one exchange on a new stream of `connection`, whose slot the caller reserved.
    func exchangeHTTP2(
        _ request: TransportRequest,
        route: ConnectionRoute,
        on connection: HTTP2Connection,
        timing: TransportTiming,
        deadline: NIODeadline
    ) async throws -> TransportResponse {
        let handler = connection.handler
        let loop = handler.eventLoop
        let id = connection.nextExchangeID()
        let slot = HandlerSlot(handler)
        let shared = ExchangeContext(timing: timing, url: request.url, informational: TransferContext.current?.informationalResponses)
        let answer = AnswerPromise()
        let body: HTTP2ClientHandler.Request.Body
        switch request.body {
        case nil: body = .none
        case .bytes(let bytes): body = .bytes(bytes)
        case .stream: body = .streamed
        }
        let started = HTTP2ClientHandler.Request(
            headers: Self.http2Headers(request, route: route),
            isHead: request.method == "HEAD",
            body: body
        )
        let idle = request.idleTimeout.map { TimeAmount.milliseconds(Int64($0 * 1000)) }
        let streamed: (length: Int64?, TransportBodyStream)?
        if case .stream(let length, let stream) = request.body { streamed = (length, stream) } else { streamed = nil }
        return try await response(
            answer: answer,
            on: loop,
            slot: slot,
            id: id,
            protocolName: "h2",
            shared: shared
        ) {
            handler.value.start(
                started,
                exchange: id,
                answer: answer,
                slot: slot,
                shared: shared,
                deadline: deadline,
                idleTimeout: idle
            )
            if let (length, stream) = streamed {
                Task { await Self.pumpHTTP2(stream, length: length, handler: handler, shared: shared, id: id) }
            }
        }
    }

    /// Sends a streamed request body on stream `id`, each piece once the one before is written (and the
    /// server's window let it go); without a length an empty DATA frame ends it.
    private static func pumpHTTP2(
        _ stream: TransportBodyStream,
        length: Int64?,
        handler: NIOLoopBound<HTTP2ClientHandler>,
        shared: ExchangeContext,
        id: Int
    ) async {
        let loop = handler.eventLoop
        do {
            var sent: Int64 = 0
            var ended = false
            for try await chunk in stream {
                if shared.isFinished { return }
                sent += Int64(chunk.readableBytes)
                try checkBodyLength(sent: sent, of: length, ended: false)
                // With a length, the piece that completes it carries END_STREAM.
                let end = length.map { sent == $0 } ?? false
                let written = loop.makePromise(of: Void.self)
                loop.execute { handler.value.send(exchange: id, chunk, end: end, promise: written) }
                try await written.futureResult.get()
                if end {
                    ended = true
                    break
                }
            }
            try checkBodyLength(sent: sent, of: length, ended: true)
            if !ended {
                let written = loop.makePromise(of: Void.self)
                loop.execute { handler.value.send(exchange: id, ByteBuffer(), end: true, promise: written) }
                try await written.futureResult.get()
            }
        } catch {
            let failure = HTTP1ConnectionHandler.ferryError(for: error)
            loop.execute { handler.value.fail(id: id, failure) }
        }
    }

    /// The request's header fields for HTTP/2: ``multiplexedFields(_:target:)`` as HPACK headers.
    static func http2Headers(_ request: TransportRequest, route: ConnectionRoute) -> HPACKHeaders {
        let fields = multiplexedFields(request, target: route.target)
        var headers = HPACKHeaders()
        headers.reserveCapacity(fields.count)
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    /// The request's header fields as HTTP/2 and HTTP/3 send them: the pseudo-header fields, then the
    /// caller's with their names in lower case, without the connection-specific ones both forbid (RFC
    /// 9113 §8.2.2, RFC 9114 §4.2; a caller's Host becomes `:authority`, TE only as `trailers`), and
    /// the body's length.
    static func multiplexedFields(_ request: TransportRequest, target: HTTPTarget) -> [(name: String, value: String)] {
        var authority = target.hostHeader
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(16)
        for field in request.headers {
            let name = field.name.lowercased()
            switch name {
            case "host":
                authority = field.value
                continue
            case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length":
                continue
            case "te":
                if field.value.lowercased() != "trailers" { continue }
            default:
                break
            }
            fields.append((name, field.value))
        }
        var all: [(name: String, value: String)] = [
            (":method", request.method), (":scheme", "https"), (":authority", authority), (":path", target.requestTarget),
        ]
        all.reserveCapacity(fields.count + 5)
        all += fields
        // Both frame a body without a length themselves (and forbid Transfer-Encoding).
        if let length = contentLength(of: request) { all.append(("content-length", length)) }
        return all
    }
}
