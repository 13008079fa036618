public import FerryCore
public import Foundation
public import NIOCore
import NIOHTTP1
import NIOWebSocket

extension WebSocketConnection {
    /// The http (or https) URL of a ws (or wss) URL: where its cookies, proxy and TLS rules are the
    /// same (RFC 6455 §4.1).
    public static func httpURL(for url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.scheme = url.scheme?.asciiLowercased == "wss" ? "https" : "http"
        return components.url
    }

    /// Connects through `connector` (the session's proxy and TLS) and upgrades the connection to a
    /// WebSocket (RFC 6455 §4): sends the opening handshake, checks the server's 101
    /// (Sec-WebSocket-Accept, the subprotocol and extensions it chose), and hands back the open
    /// connection. NIOWebSocket's client upgrader does the key and accept; this adds the rest.
    ///
    /// - Throws: ``FerryError/Code/badServerResponse`` when the server answers anything but a valid 101
    ///   (its status is in the message); ``FerryError/Code/timedOut`` past `deadline`.
    public static func connect(
        through connector: any ByteStreamConnector,
        request: UpgradeRequest,
        options: Options = Options(),
        deadline: NIODeadline
    ) async throws -> WebSocketConnection {
        let url = request.url
        let scheme = url.scheme?.asciiLowercased
        guard scheme == "ws" || scheme == "wss", let http = httpURL(for: url) else {
            throw FerryError(.unsupportedURL, "a WebSocket URL starts with ws:// or wss://", failingURL: url.absoluteString)
        }
        for name in request.protocols {
            guard Self.isToken(name) else {
                throw FerryError(.invalidHeader, "the subprotocol \"\(name)\" is not an HTTP token", failingURL: url.absoluteString)
            }
        }
        // Host, port, the Host field and the request target as for the http(s) URL of the same place.
        let target = try HTTPTarget(http)
        let stream = try await connector.openByteStream(
            host: target.host,
            port: target.port,
            tls: target.secure ? ["http/1.1"] : nil,
            deadline: deadline
        )
        return try await upgrade(stream, target: target, request: request, options: options, deadline: deadline)
    }

    private static func upgrade(
        _ stream: ByteStream,
        target: HTTPTarget,
        request: UpgradeRequest,
        options: Options,
        deadline: NIODeadline
    ) async throws -> WebSocketConnection {
        let url = request.url
        let channel = stream.channel
        let head = handshakeHead(target: target, request: request, options: options)
        let upgrader = upgrader(offering: request.protocols, options: options)
        let refusal = channel.eventLoop.makePromise(of: HTTPResponseHead.self)
        let upgraded: EventLoopFuture<Upgrade> = try await channel.eventLoop.submit {
            var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
                upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
                    upgradeRequestHead: head,
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(.refused) }
                )
            )
            configuration.leftOverBytesStrategy = .forwardBytes
            let operations = channel.pipeline.syncOperations
            let result = try operations.configureUpgradableHTTPClientPipeline(configuration: configuration)
            // What a server that does not upgrade answered (the upgrade handler passes it on).
            try operations.addHandler(RefusalCatcher(promise: refusal))
            return result
        }.get()
        let timeout = channel.eventLoop.scheduleTask(deadline: deadline) {
            refusal.fail(FerryError(.timedOut, "the WebSocket handshake with \(stream.host) took too long", failingURL: url.absoluteString))
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in
            refusal.fail(FerryError(.networkConnectionLost, "the server closed the connection during the WebSocket handshake", failingURL: url.absoluteString))
        }
        defer { timeout.cancel() }
        let outcome: Upgrade
        do {
            outcome = try await upgraded.get()
        } catch let error as FerryError {
            channel.close(promise: nil)
            var error = error
            error.failingURL = error.failingURL ?? url.absoluteString
            throw error
        } catch {
            channel.close(promise: nil)
            if !channel.isActive, let reason = try? await refusal.futureResult.get() {
                throw FerryError(.badServerResponse, "\(reason)", failingURL: url.absoluteString)
            }
            throw FerryError(
                .badServerResponse,
                "the server's answer to the WebSocket handshake is not valid (its Sec-WebSocket-Accept does not match, or its Upgrade or Connection field is missing): \(error)",
                failingURL: url.absoluteString
            )
        }
        switch outcome {
        case .refused:
            let answer: HTTPResponseHead
            do {
                answer = try await refusal.futureResult.get()
            } catch {
                channel.close(promise: nil)
                throw error
            }
            channel.close(promise: nil)
            throw FerryError(
                .badServerResponse,
                "the server answered \(answer.status.code) \(answer.status.reasonPhrase) instead of switching to WebSocket (101)",
                failingURL: url.absoluteString
            )
        case .upgraded(let handler, let compressed, let answer, let chosen):
            var fields = Headers()
            for (name, value) in answer.headers { fields.add(name: name, value: value) }
            let response = Response(url: url, statusCode: Int(answer.status.code), headers: fields)
            let connection = WebSocketConnection(
                channel: channel,
                handler: handler,
                compressed: compressed,
                response: response,
                selectedProtocol: chosen,
                options: options
            )
            try await channel.eventLoop.submit {
                handler.value.attach(connection)
                // Closed before the handler was in place (a server that answers and closes at once): it
                // never heard, and the connection would wait for ever (kosoku's updateReports did this).
                if !channel.isActive { handler.value.channelClosedBeforeAdded() }
            }.get()
            return connection
        }
    }

    /// The handshake's request head: the caller's fields, less those the upgrader writes itself, with
    /// the subprotocols and the compression offer.
    private static func handshakeHead(target: HTTPTarget, request: UpgradeRequest, options: Options) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.hostHeader)
        for field in request.headers {
            // The handshake's own fields are the upgrader's.
            if ["host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version"].contains(field.name.asciiLowercased) {
                continue
            }
            headers.add(name: field.name, value: field.value)
        }
        if !request.protocols.isEmpty, !request.headers.contains("Sec-WebSocket-Protocol") {
            headers.add(name: "Sec-WebSocket-Protocol", value: request.protocols.joined(separator: ", "))
        }
        if options.compression {
            headers.add(name: "Sec-WebSocket-Extensions", value: PerMessageDeflate.Parameters.offer)
        }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: target.requestTarget, headers: headers)

    }

    /// The upgrader: it checks the server's subprotocol and extensions against what was offered, and
    /// puts the WebSocket handler in the pipeline.
    private static func upgrader(offering offered: [String], options: Options) -> NIOTypedWebSocketClientUpgrader<Upgrade> {
        let maximum = min(max(options.maximumMessageSize, 125), Int(UInt32.max))
        let closeTimeout = options.closeTimeout
        let compression = options.compression
        return NIOTypedWebSocketClientUpgrader<Upgrade>(
            maxFrameSize: maximum,
            enableAutomaticErrorHandling: false,
            upgradePipelineHandler: { channel, response in
                channel.eventLoop.makeCompletedFuture {
                    let chosen = response.headers["Sec-WebSocket-Protocol"].first?.trimmingCharacters(in: .whitespaces)
                    if let chosen, !offered.contains(chosen) {
                        throw FerryError(.badServerResponse, "the server chose the subprotocol \(chosen), which was not offered")
                    }
                    var deflate: PerMessageDeflate?
                    let extensions = response.headers["Sec-WebSocket-Extensions"]
                    if !extensions.isEmpty {
                        guard compression else {
                            throw FerryError(.badServerResponse, "the server agreed to extensions that were not offered: \(extensions.joined(separator: ", "))")
                        }
                        do {
                            deflate = try PerMessageDeflate.Parameters.accepted(extensions).map(PerMessageDeflate.init)
                        } catch {
                            throw FerryError(.badServerResponse, "\(error)")
                        }
                    }
                    let handler = WebSocketChannelHandler(
                        eventLoop: channel.eventLoop,
                        maximumMessageSize: maximum,
                        deflate: deflate,
                        closeTimeout: closeTimeout
                    )
                    let operations = channel.pipeline.syncOperations
                    // The catcher reads HTTP parts; frames follow from now on.
                    operations.removeHandler(try operations.handler(type: RefusalCatcher.self), promise: nil)
                    try operations.addHandler(handler)
                    return .upgraded(NIOLoopBound(handler, eventLoop: channel.eventLoop), compressed: deflate != nil, response, chosen)
                }
            }
        )
    }

    enum Upgrade: Sendable {
        case upgraded(NIOLoopBound<WebSocketChannelHandler>, compressed: Bool, HTTPResponseHead, String?)
        case refused
    }

    /// RFC 7230's token characters.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default:
                    "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}

/// Catches the response of a server that did not upgrade, for the error's words.
private final class RefusalCatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<HTTPResponseHead>

    init(promise: EventLoopPromise<HTTPResponseHead>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { promise.succeed(head) }
    }
}
