/// Where an exchange's answer goes: completed once, on the connection's loop, by the driver (the HTTP/1.1
/// handler or an HTTP/2 stream), and waited for on that loop too
/// (``NetworkTransport/response(answer:on:slot:id:protocolName:shared:start:)`` adds its callback there).
/// The first completion counts; later ones are ignored, as an `EventLoopPromise`'s are.
///
/// Not an `EventLoopPromise<ExchangeAnswer>`: that generic future was made on the caller's thread and
/// freed there after the answer, and its deinit ran unspecialised, looking its type metadata up for
/// every exchange. With its allocation that was 7 % of the caller's CPU in 20,000 sequential 1 KiB GETs
/// (perf), for a promise that needs one callback and no lock (everything happens on the loop).
final class AnswerPromise: @unchecked Sendable {
    typealias Outcome = Result<ExchangeAnswer, any Error>

    // Touched on the connection's loop only (above): no lock.
    private var outcome: Outcome?
    private var callback: ((Outcome) -> Void)?
    private var completed = false

    init() {}

    /// The answer arrived.
    func succeed(_ answer: ExchangeAnswer) { complete(.success(answer)) }

    /// The exchange failed before its answer.
    func fail(_ error: any Error) { complete(.failure(error)) }

    /// Completes the promise with `outcome`, unless it is complete already.
    func complete(_ outcome: Outcome) {
        guard !completed else { return }
        completed = true
        if let callback {
            self.callback = nil
            callback(outcome)
        } else {
            self.outcome = outcome
        }
    }

    /// Runs `callback` with the outcome: now if it has come, else when it comes. One callback.
    func whenComplete(_ callback: @escaping (Outcome) -> Void) {
        if let outcome {
            self.outcome = nil
            callback(outcome)
        } else {
            self.callback = callback
        }
    }
}
