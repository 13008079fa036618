import NIOCore
import NIOHTTP1

/// One request and its response on an HTTP/2 connection of ``HTTP2ClientHandler`` (its state only;
/// the handler acts on it, on the connection's loop). A class: its content buffer is changed in place,
/// where a struct copied out of the handler's dictionary would share it and copy on every write.
final class HTTP2Stream {
    /// The transport's number for the exchange (the body reader's demand names it).
    let exchange: Int
    let id: UInt32
    /// What has been sent and received, and what comes next.
    var machine: ExchangeStateMachine
    /// Completed with the answer once the read that brought the response head is done (with the whole
    /// content when the stream ended in that read); nil once it has been.
    var answer: AnswerPromise?
    /// Where the content streams once the answer went without it.
    var source: ResponseBody.Producer.Source?
    /// The body reader's way back to the handler.
    let slot: HandlerSlot
    let shared: ExchangeContext

    /// Request content waiting for flow-control window, in order, each with the promise completed once
    /// all of it is written.
    var outbound: [(bytes: ByteBuffer, end: Bool, promise: EventLoopPromise<Void>?)] = []
    /// What this stream may still send (the server's window for it).
    var sendWindow: Int

    /// Content read and not yet given to the reader (handed over once a read is done, in one go).
    private var batch: [ByteBuffer] = []
    /// The reader has as much as it wants: the window the server may fill is not topped up.
    var paused = false
    /// Bytes received that the server has not been given window for again.
    var unacknowledged = 0
    /// What the server may still send before it oversteps the window.
    var receiveWindow: Int

    /// When the whole exchange must be over (the resource timeout).
    let deadline: NIODeadline
    var lastActivity: NIODeadline
    /// The idle timeout: the connection's, or the request's when shorter.
    let idle: TimeAmount

    init(
        exchange: Int,
        id: UInt32,
        answer: AnswerPromise,
        slot: HandlerSlot,
        shared: ExchangeContext,
        isHead: Bool,
        requestSent: Bool,
        sendWindow: Int,
        receiveWindow: Int,
        deadline: NIODeadline,
        now: NIODeadline,
        idle: TimeAmount
    ) {
        self.exchange = exchange
        self.id = id
        self.answer = answer
        self.slot = slot
        self.deadline = deadline
        self.lastActivity = now
        self.shared = shared
        self.machine = ExchangeStateMachine(isHeadRequest: isHead, requestSent: requestSent)
        self.sendWindow = sendWindow
        self.receiveWindow = receiveWindow
        self.idle = idle
    }

    /// Content being copied for the reader.
    private var copier = ContentCopier()

    /// Keeps `content` for the reader, copied (see ``ContentCopier``).
    func keep(_ content: ByteBuffer, allocator: ByteBufferAllocator) {
        // No larger than what Content-Length says is still to come (a 1 KiB answer gets 1 KiB); the
        // content's own bytes are already counted by the machine.
        let remaining = machine.remainingLength.map { Int(clamping: $0) + content.readableBytes }
        if let full = copier.copy(content, allocator: allocator, remaining: remaining) { batch.append(full) }
    }

    /// Whether anything is kept for the reader.
    var hasContent: Bool { !copier.isEmpty || !batch.isEmpty }

    /// What is kept for the reader, in order; nothing is kept after.
    func takeBatch() -> [ByteBuffer] {
        if let last = copier.take() { batch.append(last) }
        defer { batch = [] }
        return batch
    }
}
