import NIOCore

/// What runs exchanges on a connection's loop: an HTTP/1.1 connection's handler, or an HTTP/2
/// connection's (whose streams are its exchanges). The body reader and the waiting caller reach it by the
/// exchange's number.
protocol ExchangeDriver: AnyObject {
    /// The reader wants more of exchange `id`'s body.
    func resume(id: Int)
    /// The reader stopped reading exchange `id`'s body (finished, failed or dropped it).
    func readerGone(id: Int)
    /// Ends exchange `id` with `error`.
    func fail(id: Int, _ error: any Error)
}

/// The driver an exchange runs on, reached on its loop from other threads.
final class HandlerSlot: Sendable {
    private let run: @Sendable (@escaping @Sendable (any ExchangeDriver) -> Void) -> Void

    convenience init<Driver: ExchangeDriver>(_ driver: NIOLoopBound<Driver>) {
        self.init { body in driver.eventLoop.execute { body(driver.value) } }
    }

    /// A slot whose calls go through `run`, which must call its argument with the driver on its loop.
    init(run: @escaping @Sendable (@escaping @Sendable (any ExchangeDriver) -> Void) -> Void) {
        self.run = run
    }

    /// Runs `body` with the driver on its loop.
    func onLoop(_ body: @escaping @Sendable (any ExchangeDriver) -> Void) {
        run(body)
    }
}

/// Passes the body reader's demand to the connection's loop.
final class BodyDemand: NIOAsyncSequenceProducerDelegate, Sendable {
    private let slot: HandlerSlot
    private let shared: ExchangeContext
    private let id: Int

    init(slot: HandlerSlot, shared: ExchangeContext, id: Int) {
        self.slot = slot
        self.shared = shared
        self.id = id
    }

    func produceMore() {
        let id = self.id
        slot.onLoop { $0.resume(id: id) }
    }

    func didTerminate() {
        // Reading to the end is the common case: nothing for the loop to do then.
        guard !shared.isFinished else { return }
        let id = self.id
        slot.onLoop { $0.readerGone(id: id) }
    }
}

/// The sequence a streaming response body is read through, with backpressure: the reader's demand
/// reaches the exchange's driver (``BodyDemand``).
enum ResponseBody {
    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyDemand
    >

    /// The sequence exchange `id`'s body is read from, its demand passed to the driver in `slot`; the
    /// reader holds up to `watermarks.high` pieces before the connection stops for it.
    static func make(
        slot: HandlerSlot,
        shared: ExchangeContext,
        id: Int,
        watermarks: (low: Int, high: Int)
    ) -> Producer.NewSequence {
        Producer.makeSequence(
            elementType: ByteBuffer.self,
            backPressureStrategy: .init(lowWatermark: watermarks.low, highWatermark: watermarks.high),
            finishOnDeinit: false,
            delegate: BodyDemand(slot: slot, shared: shared, id: id)
        )
    }
}
