import FerryCore
import Foundation
import NIOCore
import NIOSSL

/// The timeouts and ends an exchange shares with every driver (HTTP/1.1 connections and HTTP/2 streams).
enum ExchangeEnds {
    /// What a watchdog finds for an exchange at `now`.
    enum Check {
        /// Past its `deadline` (``resourceTimeout``), or quiet for `idle` (``idleTimeout``).
        case ended(FerryError)
        /// Look again then: while the reader holds the body back, or bytes moved within `idle`.
        case checkAgain(NIODeadline)
    }

    /// Checks an exchange against its resource `deadline` and its idle timeout.
    static func check(
        deadline: NIODeadline,
        paused: Bool,
        lastActivity: NIODeadline,
        idle: TimeAmount,
        now: NIODeadline
    ) -> Check {
        if deadline <= now { return .ended(resourceTimeout) }
        if paused { return .checkAgain(min(now + idle, deadline)) }
        let due = lastActivity + idle
        return due > now ? .checkAgain(min(due, deadline)) : .ended(idleTimeout)
    }

    static var idleTimeout: FerryError {
        FerryError(.timedOut, "no data arrived within the request timeout; the transfer can be resumed")
    }

    static var resourceTimeout: FerryError {
        FerryError(.timedOut, "the transfer took longer than the resource timeout")
    }

    /// The connection closed under an exchange: lost if any of the answer came, else
    /// ``ConnectionError/closedBeforeResponse`` (the request may go again on a reused connection).
    static func closed(receivedAnything: Bool) -> any Error {
        receivedAnything
            ? FerryError(.networkConnectionLost, "the server closed the connection before the response was complete")
            : ConnectionError.closedBeforeResponse
    }

    /// A connection reset by the peer (ECONNRESET on a read, EPIPE on a write).
    static func isReset(_ error: any Error) -> Bool {
        guard let error = error as? IOError else { return false }
        return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
    }

    /// A TLS peer that closed without close_notify (common, and what curl accepts): not a failure in
    /// itself; the close that follows decides (a body whose length is known is complete or not).
    static func isUncleanShutdown(_ error: any Error) -> Bool {
        if let tls = error as? NIOSSLError, case .uncleanShutdown = tls { return true }
        return false
    }
}

/// Internal failures of a connection's exchange (HTTP/1.1, HTTP/2 or HTTP/3) the transport acts on.
enum ConnectionError: Error {
    /// The connection closed before any byte of the response: a reused connection the server had
    /// already closed, so the request may be sent again on a new one.
    case closedBeforeResponse
    /// An HTTP/2 or HTTP/3 server refused the stream without processing it (REFUSED_STREAM, or a
    /// GOAWAY whose last stream is below it), or the connection could take no new stream: safe to send
    /// again elsewhere.
    case refused(String)
}

/// How a transport answers ``ConnectionError/refused(_:)`` for one request, over HTTP/2 and HTTP/3
/// alike: the request goes again on a new connection, three times at most, when its body can be sent
/// again; otherwise the refusal is the request's error, in words.
struct RefusalRetries {
    /// Whether the request can go out again as it is (its body is not a stream already read).
    let replayable: Bool
    private var refusals = 0

    init(_ request: TransportRequest) {
        replayable = if case .stream? = request.body { false } else { true }
    }

    /// Another refusal, for `reason`: returns when the request may go again, throws when not.
    mutating func refused(_ reason: String, url: URL) throws(FerryError) {
        refusals += 1
        if replayable && refusals <= 3 { return }
        throw FerryError(
            .networkConnectionLost,
            "the server refused the request without processing it: \(reason)" + (replayable ? "" : "; its streamed body cannot be sent again"),
            failingURL: url.absoluteString
        )
    }
}
