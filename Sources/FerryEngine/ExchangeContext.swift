import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import Synchronization

/// What the caller's side and the loop share about one exchange.
final class ExchangeContext: Sendable {
    let timing: NIOLockedValueBox<TransportTiming>
    private let done = Atomic<Bool>(false)
    /// The request's URL, which informational (1xx) answers are for.
    private let url: URL?
    /// Where informational answers go; nil: nobody listens (they are read and dropped).
    private let informationalResponses: TransferContext.InformationalResponses?
    var isFinished: Bool { done.load(ordering: .acquiring) }
    func finished() { done.store(true, ordering: .releasing) }
    private let cancelled = Atomic<Bool>(false)
    /// The caller cancelled the exchange (``NetworkTransport/response(answer:on:slot:id:protocolName:shared:start:)``):
    /// set before the exchange is failed on its loop, so that a cancel that reaches the loop before the
    /// exchange has begun is applied again once it has.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
    func cancel() { cancelled.store(true, ordering: .releasing) }

    /// - Parameters:
    ///   - url: the request's URL, which the informational answers are for.
    ///   - informational: the transfer's listener for them (``TransferContext/informationalResponses``).
    init(timing: TransportTiming = TransportTiming(), url: URL? = nil, informational: TransferContext.InformationalResponses? = nil) {
        self.timing = NIOLockedValueBox(timing)
        self.url = url
        self.informationalResponses = informational
    }

    /// An informational answer (1xx other than 101) arrived before the final one (``ExchangeStateMachine``
    /// counted it): handed to the listener, if any.
    func informational(status: Int, headers: HTTPHeaders) {
        if let informationalResponses, let url {
            informationalResponses(url, status, Headers(headers.map { ($0.name, $0.value) }))
        }
    }
}
