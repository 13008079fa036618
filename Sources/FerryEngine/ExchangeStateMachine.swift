import FerryCore
import NIOHTTP1

/// The life of one exchange, a request and its response, as a value: what has been sent, what has
/// arrived, and what the driver must do next. The HTTP/1.1 connection handler and each HTTP/2 stream
/// drive one (events in, actions out); they own the I/O (the caller's promise, the body's sequence,
/// buffers and windows), this owns the rules:
/// - the final head is held until the read that brought it is done, and goes with the whole body when
///   that read also ended the response, else with a sequence the body streams through;
/// - informational (1xx) heads come before it, at most ``maximumInformationalResponses``;
/// - a second final head, body before the head, body past its Content-Length or after the end, and an
///   end short of the Content-Length fail the exchange, with what the server did in the error;
/// - an answer before the whole request was sent abandons the rest of the request (and the connection
///   is not reused);
/// - the exchange is over when both directions are; an HTTP/1.1 connection is reusable only if both
///   sides kept it alive and it did not switch protocols.
///
/// Events that cannot happen on a well-formed exchange of this side's own making (the request sent
/// twice, an event after the exchange is over) return ``Failure`` too, naming the event, rather than
/// being ignored. async-http-client's `HTTPRequestStateMachine` is the model; this one is smaller
/// because redirects, retries and decoding live above the transport.
struct ExchangeStateMachine {
    /// The request's side.
    enum RequestState: Equatable {
        /// Its head or body is still being written.
        case sending
        /// All of it is written.
        case sent
        /// The server answered before taking all of it: the rest is not sent.
        case abandoned
    }

    /// The response's side.
    enum ResponseState: Equatable {
        /// No final head yet (informational ones may have come).
        case awaitingHead
        /// The final head arrived in the read still in progress; the caller has not been given it.
        case headHeld(HTTPResponseHead)
        /// The caller has the head; the body streams to it.
        case streaming
        /// The response has ended (the caller has its head, or gets it with the whole body now).
        case complete
    }

    /// Why the exchange cannot go on. `error` is what the caller sees.
    struct Failure: Error, Equatable {
        let error: FerryError
        init(_ message: String) { error = FerryError(.badServerResponse, message) }
        init(_ error: FerryError) { self.error = error }
        static func == (a: Failure, b: Failure) -> Bool { a.error.code == b.error.code && a.error.message == b.error.message }
    }

    /// What a head that arrived is.
    enum HeadKind: Equatable {
        /// An informational answer (1xx other than 101): hand it to the listener; the final head follows.
        case informational
        /// The final head: held until the read is done (``handOverHead()``).
        case final
    }

    /// What to do with body bytes that arrived.
    enum BodyAction: Equatable {
        /// Keep them with the held head (the caller gets both at once).
        case holdWithHead
        /// Give them to the body's sequence.
        case stream
    }

    /// What the end of the response means for the driver.
    struct End: Equatable {
        /// The head, when the caller has not been given it yet: hand it over now, with the whole body.
        /// Nil: the body's sequence is finished.
        var answerWithHead: HTTPResponseHead?
        /// The request was not all sent: the rest is dropped (HTTP/2 resets its side of the stream).
        var requestAbandoned: Bool
        /// Both directions are done: the exchange is over (see ``isOver``).
        var exchangeOver: Bool
    }

    /// How a failure reaches the caller.
    enum Unwind: Equatable {
        /// The head never went: fail the caller's wait for it.
        case failAnswer
        /// The body is streaming: end its sequence with the error.
        case failBody
        /// The exchange was already over: nothing to tell.
        case nothing
    }

    /// More informational answers than this before the final one fail the exchange: a server that
    /// sends them without end would otherwise keep it alive (and its listener busy) for ever.
    static let maximumInformationalResponses = 64

    private(set) var request: RequestState = .sending
    private(set) var response: ResponseState = .awaitingHead
    /// The exchange ended, complete or failed: no further event is legal.
    private(set) var isOver = false
    /// Any of the response (an informational head included) arrived: a connection that closes now lost
    /// an answer, rather than being a reused connection the server had already closed.
    private(set) var receivedAnything = false
    private(set) var informationalResponses = 0
    /// Whether both sides keep an HTTP/1.1 connection open after this exchange.
    private(set) var keepAlive: Bool
    /// A 101 answer: what follows on the connection is another protocol's.
    private(set) var switchedProtocols = false
    /// The body comes in chunked transfer coding (its bytes as sent are not the body's).
    private(set) var chunked = false
    /// The body's length as Content-Length states it, when the response has a body and says so.
    private(set) var expectedLength: Int64?
    /// Body bytes that arrived.
    private(set) var receivedLength: Int64 = 0
    /// A HEAD request: the response has no body, whatever Content-Length says.
    let isHeadRequest: Bool

    /// - Parameters:
    ///   - isHeadRequest: the request is a HEAD (its answer's Content-Length describes no body here).
    ///   - keepAlive: the request lets the connection be reused (no `Connection: close`).
    ///   - requestSent: the request was written whole with its head (HTTP/2 HEADERS with END_STREAM).
    init(isHeadRequest: Bool = false, keepAlive: Bool = true, requestSent: Bool = false) {
        self.isHeadRequest = isHeadRequest
        self.keepAlive = keepAlive
        if requestSent { request = .sent }
    }

    /// Body bytes still to come when Content-Length said how many.
    var remainingLength: Int64? { expectedLength.map { $0 - receivedLength } }

    /// Whether an HTTP/1.1 connection may carry another exchange once this one is over.
    var isReusable: Bool { isOver && request == .sent && response == .complete && keepAlive && !switchedProtocols }

    /// Whether the caller has the head and the body is still coming: a body that may become a byte
    /// stream when it is not chunked (a data task that becomes a stream task).
    var isStreamingBody: Bool { !isOver && response == .streaming }

    // MARK: Request events

    /// The whole request has been written. Returns true when that ends the exchange (the response had
    /// already ended; over HTTP/1.1 the connection may then be offered again).
    mutating func requestSent() throws(Failure) -> Bool {
        guard !isOver else {
            // Late news of a write: the response ended the exchange first (an early answer), or it failed.
            if request == .abandoned { return false }
            throw Failure(FerryError(.invalidOperation, "internal: the request was reported sent after its exchange was over"))
        }
        guard request == .sending else {
            throw Failure(FerryError(.invalidOperation, "internal: the request was reported sent twice"))
        }
        request = .sent
        return finishIfBothDone()
    }

    // MARK: Response events

    /// A response head arrived (`status` and fields as given).
    mutating func receivedHead(_ head: HTTPResponseHead) throws(Failure) -> HeadKind {
        try checkNotOver("a response head")
        receivedAnything = true
        let status = Int(head.status.code)
        guard case .awaitingHead = response else {
            throw Failure("the server sent a second response head (\(status)) after its answer")
        }
        if (100..<200).contains(status) && status != 101 {
            informationalResponses += 1
            guard informationalResponses <= Self.maximumInformationalResponses else {
                throw Failure(
                    "the server sent more than \(Self.maximumInformationalResponses) informational (1xx) responses before its answer"
                )
            }
            return .informational
        }
        if !head.isKeepAlive { keepAlive = false }
        if status == 101 {
            switchedProtocols = true
            keepAlive = false
        }
        let codings = head.headers[canonicalForm: "transfer-encoding"]
        chunked = codings.contains { $0.lowercased() == "chunked" }
        if !isHeadRequest, !chunked, status >= 200, status != 204, status != 304,
            let length = head.headers.first(name: "content-length")
        {
            guard let expected = Int64(length), expected >= 0 else {
                throw Failure("the server sent an invalid Content-Length (\(length))")
            }
            expectedLength = expected
        }
        response = .headHeld(head)
        return .final
    }

    /// `count` bytes of the body arrived. Returns where they go (drivers that gather the body before
    /// handing it over ask ``response`` when they do).
    @discardableResult
    mutating func receivedBody(count: Int) throws(Failure) -> BodyAction {
        try checkNotOver("body bytes")
        receivedAnything = true
        let action: BodyAction
        switch response {
        case .awaitingHead: throw Failure("the server sent content before the response's header fields")
        case .complete: throw Failure("the server sent content after the response's end")
        case .headHeld: action = .holdWithHead
        case .streaming: action = .stream
        }
        receivedLength += Int64(count)
        if let expected = expectedLength, receivedLength > expected {
            throw Failure("the server sent more than the \(expected) bytes its Content-Length promised")
        }
        return action
    }

    /// The read that brought the head is done, or the driver will not hold the body any longer: returns
    /// the head to hand over with a sequence the body streams through, if the caller is still owed it
    /// and the response goes on.
    mutating func handOverHead() -> HTTPResponseHead? {
        guard !isOver, case .headHeld(let head) = response else { return nil }
        response = .streaming
        return head
    }

    /// Trailers arrived (HTTP/2: a header block after the head). They must end the response.
    mutating func receivedTrailers(endsResponse: Bool) throws(Failure) {
        try checkNotOver("trailers")
        receivedAnything = true
        switch response {
        case .awaitingHead: throw Failure("the server sent trailers before the response's header fields")
        case .complete: throw Failure("the server sent trailers after the response's end")
        case .headHeld, .streaming: break
        }
        guard endsResponse else { throw Failure("the server sent a second header block without ending the stream") }
    }

    /// The response ended (HTTP/1.1's end of message, HTTP/2's END_STREAM).
    mutating func responseEnded() throws(Failure) -> End {
        try checkNotOver("the response's end")
        let head: HTTPResponseHead?
        switch response {
        case .awaitingHead: throw Failure("the server ended the response before its header fields")
        case .complete: throw Failure("the server ended the response twice")
        case .headHeld(let held): head = held
        case .streaming: head = nil
        }
        if let expected = expectedLength, receivedLength != expected {
            throw Failure(
                FerryError(
                    .networkConnectionLost,
                    "the server ended the response after \(receivedLength) of the \(expected) bytes its Content-Length promised"
                )
            )
        }
        response = .complete
        var abandoned = false
        if request == .sending {
            // An answer before the whole request (an early 413, say): it stands, the rest is not sent,
            // and the connection is not reused (RFC 9112 §9.3, RFC 9113 §8.1).
            request = .abandoned
            keepAlive = false
            abandoned = true
        }
        return End(answerWithHead: head, requestAbandoned: abandoned, exchangeOver: finishIfBothDone())
    }

    /// The exchange fails (a protocol error, the connection closed, a timeout, cancellation): returns how
    /// the caller learns it. After this every event is refused.
    mutating func fail() -> Unwind {
        guard !isOver else { return .nothing }
        isOver = true
        switch response {
        case .awaitingHead, .headHeld: return .failAnswer
        case .streaming: return .failBody
        case .complete: return .nothing
        }
    }

    /// The body's reader gave up before the end, or the connection was handed to a byte stream: the
    /// exchange is over without an outcome. Returns false when it was over already.
    mutating func abandon() -> Bool {
        guard !isOver else { return false }
        isOver = true
        keepAlive = false
        return true
    }

    // MARK: Internals

    private mutating func finishIfBothDone() -> Bool {
        guard request != .sending, response == .complete else { return false }
        isOver = true
        return true
    }

    private func checkNotOver(_ event: String) throws(Failure) {
        if isOver {
            throw Failure(FerryError(.invalidOperation, "internal: \(event) arrived for an exchange that was over"))
        }
    }
}
