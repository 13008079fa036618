public import FerryCore
public import Foundation
public import NIOCore
import Synchronization

/// One request loaded by a ``ProtocolHandler`` instead of the network: the handler's reports become a
/// ``TransportResponse`` (its head once it has one, its data as the body), so the engine treats it as any
/// exchange: redirects, decoding, downloads to files, metrics, cancellation.
final class ProtocolHandlerExchange: ProtocolHandlerClient, Sendable {
    private enum Phase {
        case waitingForHead(CheckedContinuation<TransportResponse, any Error>?)
        case reading
        case ended
    }

    private struct State {
        var phase = Phase.waitingForHead(nil)
        var handler: (any ProtocolHandler)?
        var stopped = false
        var timer: Task<Void, Never>?
        /// Why it ended before the head was awaited, if it did.
        var failure: FerryError?
    }

    private let url: URL
    private let protocolName: String
    private let body: AsyncThrowingStream<ByteBuffer, any Error>.Continuation
    private let stream: AsyncThrowingStream<ByteBuffer, any Error>
    private let state = Mutex(State())

    private init(url: URL) {
        self.url = url
        self.protocolName = url.scheme?.lowercased() ?? "handler"
        (stream, body) = AsyncThrowingStream.makeStream(of: ByteBuffer.self)
    }

    /// Loads `request` with a new `handler`, returning when its response head (or redirect) is known.
    static func send(
        _ request: TransportRequest,
        with handler: any ProtocolHandler.Type,
        deadline: NIODeadline
    ) async throws -> TransportResponse {
        let exchange = ProtocolHandlerExchange(url: request.url)
        let upload = try await Self.collect(request.body)
        let loader = handler.init(request: request.sentRequest, body: upload, client: exchange)
        exchange.state.withLock { $0.handler = loader }
        exchange.body.onTermination = { [weak exchange] _ in exchange?.stop() }
        if deadline < .distantFuture {
            let nanoseconds = max(0, (deadline - .now()).nanoseconds)
            let timer = Task { [weak exchange] in
                try? await Task.sleep(for: .nanoseconds(nanoseconds))
                if Task.isCancelled { return }
                exchange?.end(FerryError(.timedOut, "the protocol handler did not finish in time", failingURL: request.url.absoluteString))
            }
            exchange.state.withLock { $0.timer = timer }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportResponse, any Error>) in
                let early: FerryError? = exchange.state.withLock { state in
                    if case .ended = state.phase { return state.failure ?? FerryError(.cancelled, "the request was cancelled") }
                    state.phase = .waitingForHead(continuation)
                    return nil
                }
                if let early {
                    continuation.resume(throwing: early)
                } else {
                    loader.startLoading()
                }
            }
        } onCancel: {
            exchange.end(FerryError(.cancelled, "the request was cancelled"))
        }
    }

    private static func collect(_ body: TransportRequestBody?) async throws -> Data? {
        switch body {
        case nil: return nil
        case .bytes(let buffer): return Data(buffer.readableBytesView)
        case .stream(_, let stream):
            var data = Data()
            for try await chunk in stream { data += chunk.readableBytesView }
            return data
        }
    }

    // MARK: ProtocolHandlerClient

    func didReceive(_ response: Response) {
        head(status: response.statusCode, headers: response.headers)
    }

    func didLoad(_ data: Data) {
        guard case .reading = state.withLock({ $0.phase }) else { return }
        body.yield(ByteBuffer(bytes: data))
    }

    func didFinishLoading() {
        let reading: Bool = state.withLock { state in
            guard case .reading = state.phase else { return false }
            state.phase = .ended
            state.timer?.cancel()
            return true
        }
        if reading { body.finish() }
    }

    func didFail(with error: FerryError) {
        var error = error
        error.failingURL = error.failingURL ?? url.absoluteString
        end(error, stopHandler: false)
    }

    func wasRedirected(to request: Request, redirectResponse: Response) {
        var headers = redirectResponse.headers
        headers = Headers(headers.filter { !Headers.sameName($0.name, "location") }.map { ($0.name, $0.value) })
        headers.add(name: "Location", value: request.url.absoluteString)
        let status = (300...399).contains(redirectResponse.statusCode) ? redirectResponse.statusCode : 302
        if head(status: status, headers: headers) {
            didFinishLoading()
            stop()
        }
    }

    // MARK: Ending

    /// Delivers the head; false when it came too late or twice.
    @discardableResult
    private func head(status: Int, headers: Headers) -> Bool {
        let waiter: CheckedContinuation<TransportResponse, any Error>? = state.withLock { state in
            guard case .waitingForHead(let waiter) = state.phase else { return nil }
            state.phase = .reading
            return waiter
        }
        guard let waiter else { return false }
        waiter.resume(
            returning: TransportResponse(
                status: status,
                headers: headers,
                protocolName: protocolName,
                body: TransportBodyStream(stream),
                timing: TransportTiming(requestStart: Date(), requestEnd: Date(), responseStart: Date()),
                cancel: { [weak self] in self?.end(FerryError(.cancelled, "the request was cancelled")) }
            )
        )
        return true
    }

    /// Ends the exchange with `error` (waiting for the head or reading the body) and stops the handler.
    func end(_ error: FerryError, stopHandler: Bool = true) {
        let (waiter, reading): (CheckedContinuation<TransportResponse, any Error>?, Bool) = state.withLock { state in
            state.timer?.cancel()
            switch state.phase {
            case .waitingForHead(let waiter):
                state.phase = .ended
                state.failure = error
                return (waiter, false)
            case .reading:
                state.phase = .ended
                return (nil, true)
            case .ended:
                return (nil, false)
            }
        }
        waiter?.resume(throwing: error)
        if reading { body.finish(throwing: error) }
        if stopHandler { stop() }
    }

    /// Tells the handler to stop, once.
    private func stop() {
        let handler: (any ProtocolHandler)? = state.withLock { state in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.handler
        }
        handler?.stopLoading()
    }
}

extension Request {
    /// ``validate()``, allowing also a scheme of the program's own that one of `transport`'s protocol
    /// handlers loads (``SessionTransport/protocolHandlers``).
    public func validate(for transport: any HTTPTransport) throws {
        // The scheme first: an http or https URL (nearly every request) needs no look at the transport.
        let scheme = url.scheme?.asciiLowercased
        if let scheme, scheme != "http", scheme != "https", let session = transport as? SessionTransport,
            !session.protocolHandlers.isEmpty, session.protocolHandlers.handler(for: self) != nil
        {
            try validate(scheme: scheme, among: [scheme])
        } else {
            try validate(scheme: scheme, among: Request.httpSchemes)
        }
    }
}
