import NIOCore
import NIOHTTP1

/// A response head as a connection's driver hands it to the waiting caller: with the whole body when
/// the body ended in the same read as the head (most small answers), else with the sequence the body
/// streams through.
///
/// Why the first case: a body sequence with backpressure (NIO's producer, its delegate, its lock) cost
/// as much CPU as the rest of a small exchange, and reading it was one more suspension; an answer that
/// is already complete needs neither (20,000 × 1 KiB GETs, perf).
struct ExchangeAnswer: Sendable {
    /// How the body comes.
    enum Body: Sendable {
        /// The whole body (possibly empty), already here.
        case complete(ByteBuffer)
        /// The body as it arrives.
        case streaming(ResponseBody.Producer)
    }

    let head: HTTPResponseHead
    let body: Body

    /// The body as the engine reads it.
    var bodyStream: TransportBodyStream {
        switch body {
        case .complete(let buffer): TransportBodyStream(buffer: buffer)
        case .streaming(let producer): TransportBodyStream(producer)
        }
    }
}
