import AsyncHTTPClient
import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Bridges AsyncHTTPClient's delegate API to ``HTTPTransport``: the head is returned from an async call,
/// the body becomes an async sequence with backpressure (a body part is acknowledged only when the
/// reader has room), and the moments the request was written are recorded.
///
/// The delegate API is used rather than AsyncHTTPClient's async `execute` because only it reports when
/// the request head and body have been written (``TransportTiming/requestStart`` and
/// ``TransportTiming/requestEnd``, for metrics).
final class StreamingResponseDelegate: HTTPClientResponseDelegate, NIOAsyncSequenceProducerDelegate, Sendable {
    typealias Response = Void
    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark,
        StreamingResponseDelegate
    >

    private struct State {
        var timing = TransportTiming()
        var head: CheckedContinuation<(HTTPResponseHead, TransportTiming), any Error>?
        var source: Producer.Source?
        var waitingForDemand: EventLoopPromise<Void>?
        var demandArrived = false
        var task: HTTPClient.Task<Void>?
        var cancelled = false
    }

    private let state = NIOLockedValueBox(State())

    /// Makes the delegate and the body sequence it feeds.
    static func make() -> (StreamingResponseDelegate, Producer) {
        let delegate = StreamingResponseDelegate()
        let made = Producer.makeSequence(
            elementType: ByteBuffer.self,
            backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8),
            finishOnDeinit: false,
            delegate: delegate
        )
        delegate.state.withLockedValue { $0.source = made.source }
        return (delegate, made.sequence)
    }

    /// Runs `request` and returns once its head has arrived.
    func send(
        _ request: HTTPClient.Request,
        on client: HTTPClient,
        deadline: NIODeadline
    ) async throws -> (HTTPResponseHead, TransportTiming) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLockedValue { $0.head = continuation }
                let task = client.execute(request: request, delegate: self, eventLoop: .indifferent, deadline: deadline)
                task.futureResult.whenFailure { [self] error in fail(error) }
                let cancelNow = state.withLockedValue { state in
                    state.task = task
                    return state.cancelled
                }
                if cancelNow { task.cancel() }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The timing recorded so far.
    var timing: TransportTiming { state.withLockedValue { $0.timing } }

    /// The last byte of a streamed request body has been written (AsyncHTTPClient reports the end of a
    /// streamed request only after it has finished its own bookkeeping, which can be after the response).
    func requestBodyWritten() {
        state.withLockedValue { $0.timing.requestEnd = $0.timing.requestEnd ?? Date() }
    }

    /// Stops the exchange (the caller's task was cancelled, or the body is no longer wanted).
    func cancel() {
        let task = state.withLockedValue { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    private func fail(_ error: any Error) {
        let (head, source, waiting) = state.withLockedValue { state in
            defer {
                state.head = nil
                state.source = nil
                state.waitingForDemand = nil
            }
            return (state.head, state.source, state.waitingForDemand)
        }
        head?.resume(throwing: error)
        source?.finish(error)
        waiting?.fail(error)
    }

    // MARK: HTTPClientResponseDelegate (on the connection's event loop)

    func didSendRequestHead(task: HTTPClient.Task<Void>, _ head: HTTPRequestHead) {
        state.withLockedValue { $0.timing.requestStart = Date() }
    }

    func didSendRequest(task: HTTPClient.Task<Void>) {
        state.withLockedValue { $0.timing.requestEnd = $0.timing.requestEnd ?? Date() }
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let (continuation, timing) = state.withLockedValue { state in
            state.timing.responseStart = Date()
            defer { state.head = nil }
            return (state.head, state.timing)
        }
        continuation?.resume(returning: (head, timing))
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        state.withLockedValue { state in
            guard let source = state.source else { return task.eventLoop.makeSucceededVoidFuture() }
            state.demandArrived = false
            switch source.yield(buffer) {
            case .produceMore, .dropped:
                return task.eventLoop.makeSucceededVoidFuture()
            case .stopProducing:
                if state.demandArrived {
                    state.demandArrived = false
                    return task.eventLoop.makeSucceededVoidFuture()
                }
                // The reader is full: acknowledge the part (and read more) when it asks for more.
                let promise = task.eventLoop.makePromise(of: Void.self)
                state.waitingForDemand = promise
                return promise.futureResult
            }
        }
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        fail(error)
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        let source = state.withLockedValue { state in
            defer { state.source = nil }
            return state.source
        }
        source?.finish()
    }

    // MARK: NIOAsyncSequenceProducerDelegate (on the reader's side)

    func produceMore() {
        let waiting = state.withLockedValue { state in
            defer { state.waitingForDemand = nil }
            if state.waitingForDemand == nil { state.demandArrived = true }
            return state.waitingForDemand
        }
        waiting?.succeed()
    }

    func didTerminate() {
        // The reader is gone (finished, failed or dropped the body): stop the exchange if it still runs.
        let (task, waiting) = state.withLockedValue { state in
            defer { state.waitingForDemand = nil }
            return (state.task, state.waitingForDemand)
        }
        waiting?.succeed()
        task?.cancel()
    }
}
