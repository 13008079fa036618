import NIOCore
import NIOHTTP1

/// One request and its response on an HTTP/2 connection of ``HTTP2ClientHandler`` (its state only;
/// the handler acts on it, on the connection's loop). A class: its content buffers are changed in place,
/// where a struct copied out of the handler's dictionary would share them and copy on every write.
final class HTTP2Stream {
    /// The transport's number for the exchange (the body reader's demand names it).
    let exchange: Int
    let id: UInt32
    /// Completed with the response head; nil once it has been.
    var head: EventLoopPromise<HTTPResponseHead>?
    var source: HTTP1ConnectionHandler.Producer.Source
    let shared: HTTP1ExchangeState
    /// A HEAD request: its response has no content, whatever Content-Length says.
    let isHead: Bool

    /// END_STREAM has been written (content still waiting for window does not count).
    var requestDone = false
    /// END_STREAM has arrived.
    var responseDone = false
    /// Any of the response (HEADERS included) has arrived.
    var receivedAnything = false

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
    /// Content-Length of the response, when it has content and says so.
    var expectedLength: Int64?
    var receivedLength: Int64 = 0

    var deadlineTask: Scheduled<Void>?
    var idleTask: Scheduled<Void>?
    var lastActivity = NIODeadline.now()
    /// The idle timeout: the connection's, or the request's when shorter.
    let idle: TimeAmount

    init(
        exchange: Int,
        id: UInt32,
        head: EventLoopPromise<HTTPResponseHead>,
        source: HTTP1ConnectionHandler.Producer.Source,
        shared: HTTP1ExchangeState,
        isHead: Bool,
        sendWindow: Int,
        receiveWindow: Int,
        idle: TimeAmount
    ) {
        self.exchange = exchange
        self.id = id
        self.head = head
        self.source = source
        self.shared = shared
        self.isHead = isHead
        self.sendWindow = sendWindow
        self.receiveWindow = receiveWindow
        self.idle = idle
    }

    /// The buffer content is being copied into (see ``keep(_:allocator:)``).
    private var gathered: ByteBuffer?
    static let gatherSize = 64 << 10

    /// Keeps `content` for the reader, copied into 64 KiB buffers of the stream's own.
    ///
    /// Why copy: DATA arrives as slices of NIOSSL's plaintext buffer, which NIOSSL decrypts its next read
    /// into. While a reader still holds a slice, that write copies NIOSSL's buffer whole (its capacity,
    /// which grows to hold a loop turn's reads, not just the bytes left): 20–30 % of the CPU samples of a
    /// 1 GiB https download went to that memmove. Copying just the content, once, while it is in the
    /// cache, leaves NIOSSL's buffer unshared. Four interleaved runs of 1 GiB from nginx over h2: `ferry
    /// get` into tmpfs 0.53–0.64 s of user CPU copying against 0.97–1.14 s with slices (curl 0.48–0.63 s),
    /// discarded 0.57–0.69 s against 0.75–0.91 s. (An earlier try kept the stream in a struct copied
    /// out of the handler's dictionary, so every write to the gathered buffer copied it on write too, and
    /// measured no gain: hence the class.)
    func keep(_ content: ByteBuffer, allocator: ByteBufferAllocator) {
        let count = content.readableBytes
        if gathered != nil, gathered!.writableBytes < count {
            batch.append(gathered!)
            gathered = nil
        }
        if gathered == nil {
            // No larger than what Content-Length says is still to come (a 1 KiB answer gets 1 KiB).
            let remaining = expectedLength.map { Int(clamping: $0 - receivedLength) + count } ?? Self.gatherSize
            gathered = allocator.buffer(capacity: max(count, min(Self.gatherSize, remaining)))
        }
        gathered!.writeImmutableBuffer(content)
    }

    /// Whether anything is kept for the reader.
    var hasContent: Bool { gathered != nil || !batch.isEmpty }

    /// What is kept for the reader, in order; nothing is kept after.
    func takeBatch() -> [ByteBuffer] {
        if let last = gathered {
            batch.append(last)
            gathered = nil
        }
        defer { batch = [] }
        return batch
    }
}
