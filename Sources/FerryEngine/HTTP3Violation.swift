import FerryCore

/// A rule of HTTP/3 (RFC 9114) the server broke on a request stream, and what it ends: the exchange
/// alone (a malformed response, H3_MESSAGE_ERROR on the stream) or the whole connection (a frame a
/// request stream may not carry, a QPACK section that cannot be decoded), with the code to close it.
struct HTTP3Violation: Error {
    /// What the caller sees.
    let error: FerryError
    /// The HTTP/3 error code the connection closes with; nil when only the exchange ends.
    let connectionCode: UInt64?

    /// A malformed response: the exchange fails, the connection goes on.
    init(stream words: String) {
        error = FerryError(.badServerResponse, words)
        connectionCode = nil
    }

    /// The exchange's state machine refused an event (``ExchangeStateMachine/Failure``).
    init(_ error: FerryError) {
        self.error = error
        connectionCode = nil
    }

    /// A connection error of `code`.
    init(connection code: UInt64, _ words: String) {
        error = FerryError(.badServerResponse, words)
        connectionCode = code
    }
}
