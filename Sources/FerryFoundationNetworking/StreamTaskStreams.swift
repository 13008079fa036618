import Ferry
public import Foundation
import Synchronization

/// A stream task's connection as Foundation's pair of streams (`captureStreams()`): what the input
/// stream reads is what the server sends, what the output stream is given goes to the server.
///
/// As Apple's socket streams: `read` waits until bytes come (0 at the end, -1 after an error or when the
/// stream is not open), `write` waits while 1 MiB is still on its way, and a stream scheduled in a run
/// loop tells its delegate there (`openCompleted`, `hasBytesAvailable`, `hasSpaceAvailable`,
/// `endEncountered`, `errorOccurred`). Closing the input stream closes the connection's read side;
/// closing the output stream, once what was written has gone, its write side; with both closed the
/// connection is closed.
struct StreamTaskStreams {
    let input: StreamTaskInputStream
    let output: StreamTaskOutputStream

    init(task: StreamTask) {
        let closer = Closer()
        input = StreamTaskInputStream(task: task, closer: closer)
        output = StreamTaskOutputStream(task: task, closer: closer)
    }

    /// Counts the two streams' closes: the second closes the connection.
    final class Closer: Sendable {
        private let count = Atomic<Int>(0)
        func closed(_ task: StreamTask) {
            if count.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == 2 { task.cancel() }
        }
    }
}

/// Delivers a stream's events to its delegate in the run loops (and modes) it is scheduled in.
///
/// Each event goes as a timer that fires at once: swift-corelibs-foundation's `RunLoop.perform` does not
/// wake a loop that is waiting (a block posted from another thread did not run within a second, tried
/// 2026-11-26), and adding a timer does.
final class StreamEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var loops: [(loop: RunLoop, mode: RunLoop.Mode)] = []
    private weak var _delegate: (any StreamDelegate)?

    var delegate: (any StreamDelegate)? {
        get { lock.withLock { _delegate } }
        set { lock.withLock { _delegate = newValue } }
    }

    func schedule(_ loop: RunLoop, _ mode: RunLoop.Mode) {
        lock.withLock {
            if !loops.contains(where: { $0.loop === loop && $0.mode == mode }) { loops.append((loop, mode)) }
        }
    }

    func remove(_ loop: RunLoop, _ mode: RunLoop.Mode) {
        lock.withLock { loops.removeAll { $0.loop === loop && $0.mode == mode } }
    }

    func post(_ event: Stream.Event, from stream: Stream) {
        let (loops, delegate) = lock.withLock { (self.loops, self._delegate) }
        guard let delegate else { return }
        let carried = Carried(value: (delegate, stream))
        for (loop, mode) in loops {
            loop.add(Timer(timeInterval: 0, repeats: false) { _ in carried.value.0.stream(carried.value.1, handle: event) }, forMode: mode)
        }
    }
}

/// The input half of ``StreamTaskStreams``.
final class StreamTaskInputStream: InputStream, @unchecked Sendable {
    /// Bytes read from the connection and not yet by the program: past this, reading the connection
    /// waits (the server is then held back by TCP).
    static let limit = 1 << 20
    private let task: StreamTask
    private let closer: StreamTaskStreams.Closer
    private let events = StreamEvents()
    /// Guards everything below.
    private let condition = NSCondition()
    private var chunks: [Data] = []
    private var offset = 0
    private var count = 0
    private var ended = false
    private var failure: (any Error)?
    private var status = Stream.Status.notOpen
    private var drained: CheckedContinuation<Void, Never>?

    init(task: StreamTask, closer: StreamTaskStreams.Closer) {
        self.task = task
        self.closer = closer
        super.init(data: Data())
    }

    override var delegate: (any StreamDelegate)? {
        get { events.delegate }
        set { events.delegate = newValue }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.schedule(aRunLoop, mode) }
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.remove(aRunLoop, mode) }

    override var streamStatus: Stream.Status {
        condition.withLock {
            guard status == .open else { return status }
            if failure != nil && count == 0 { return .error }
            return ended && count == 0 ? .atEnd : .open
        }
    }

    override var streamError: (any Error)? { condition.withLock { failure } }

    override var hasBytesAvailable: Bool {
        // True at the end or after an error too: the read that follows says which, without waiting.
        condition.withLock { status == .open && (count > 0 || ended || failure != nil) }
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length len: UnsafeMutablePointer<Int>
    ) -> Bool { false }

    override func open() {
        let first = condition.withLock {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
        guard first else { return }
        events.post(.openCompleted, from: self)
        let carried = Carried(value: self)
        Task { await carried.value.pump() }
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        condition.lock()
        while count == 0 && !ended && failure == nil && status == .open { condition.wait() }
        guard status == .open else {
            condition.unlock()
            return -1
        }
        if count == 0 {
            condition.unlock()
            return failure == nil ? 0 : -1
        }
        var copied = 0
        while copied < len, let first = chunks.first {
            let take = min(len - copied, first.count - offset)
            first.withUnsafeBytes { bytes in
                (buffer + copied).update(from: bytes.bindMemory(to: UInt8.self).baseAddress! + offset, count: take)
            }
            copied += take
            offset += take
            if offset == first.count {
                chunks.removeFirst()
                offset = 0
            }
        }
        count -= copied
        let waiting = count < Self.limit ? drained : nil
        if waiting != nil { drained = nil }
        condition.unlock()
        waiting?.resume()
        return copied
    }

    override func close() {
        let (closing, wasOpen, waiting) = condition.withLock { () -> (Bool, Bool, CheckedContinuation<Void, Never>?) in
            guard status != .closed else { return (false, false, nil) }
            let wasOpen = status == .open
            status = .closed
            defer { drained = nil }
            condition.broadcast()
            return (true, wasOpen, drained)
        }
        waiting?.resume()
        guard closing else { return }
        let task = self.task
        let closer = self.closer
        guard wasOpen else { return closer.closed(task) }
        Task {
            await task.closeRead()
            closer.closed(task)
        }
    }

    /// Reads the connection into the buffer while the stream is open, waiting while the buffer is full.
    private func pump() async {
        while true {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let full = condition.withLock {
                    guard count >= Self.limit, status == .open else { return false }
                    drained = continuation
                    return true
                }
                if !full { continuation.resume() }
            }
            guard condition.withLock({ status == .open }) else { return }
            do {
                let (data, atEOF) = try await task.readData(ofMinLength: 1, maxLength: 64 * 1024, timeout: 0)
                let bytes = data ?? Data()
                condition.withLock {
                    if !bytes.isEmpty {
                        chunks.append(bytes)
                        count += bytes.count
                    }
                    if atEOF { ended = true }
                    condition.broadcast()
                }
                if !bytes.isEmpty { events.post(.hasBytesAvailable, from: self) }
                if atEOF {
                    events.post(.endEncountered, from: self)
                    return
                }
            } catch {
                condition.withLock {
                    failure = FoundationBridge.error(from: error, url: nil)
                    condition.broadcast()
                }
                events.post(.errorOccurred, from: self)
                return
            }
        }
    }
}

/// The output half of ``StreamTaskStreams``.
final class StreamTaskOutputStream: OutputStream, @unchecked Sendable {
    /// Bytes accepted by `write` and not yet written to the connection: past this, `write` waits.
    static let limit = 1 << 20
    private let task: StreamTask
    private let closer: StreamTaskStreams.Closer
    private let events = StreamEvents()
    private let queue: AsyncStream<Data>.Continuation
    private let queued: AsyncStream<Data>
    /// Guards everything below.
    private let condition = NSCondition()
    private var pending = 0
    private var failure: (any Error)?
    private var status = Stream.Status.notOpen

    init(task: StreamTask, closer: StreamTaskStreams.Closer) {
        self.task = task
        self.closer = closer
        (queued, queue) = AsyncStream.makeStream(of: Data.self)
        super.init(toMemory: ())
    }

    /// Foundation requires it of a subclass; this stream is made only for a stream task.
    required init(toMemory: ()) {
        preconditionFailure("a stream task's output stream is made by URLSessionStreamTask.captureStreams()")
    }

    override var delegate: (any StreamDelegate)? {
        get { events.delegate }
        set { events.delegate = newValue }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.schedule(aRunLoop, mode) }
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.remove(aRunLoop, mode) }

    override var streamStatus: Stream.Status {
        condition.withLock { status == .open && failure != nil ? .error : status }
    }

    override var streamError: (any Error)? { condition.withLock { failure } }

    override var hasSpaceAvailable: Bool {
        condition.withLock { status == .open && failure == nil && pending < Self.limit }
    }

    override func open() {
        let first = condition.withLock {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
        guard first else { return }
        events.post(.openCompleted, from: self)
        events.post(.hasSpaceAvailable, from: self)
        let carried = Carried(value: self)
        Task { await carried.value.pump() }
    }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        condition.lock()
        while pending >= Self.limit && status == .open && failure == nil { condition.wait() }
        guard status == .open, failure == nil else {
            condition.unlock()
            return -1
        }
        pending += len
        condition.unlock()
        queue.yield(Data(bytes: buffer, count: len))
        return len
    }

    override func close() {
        let (closing, wasOpen) = condition.withLock {
            guard status != .closed else { return (false, false) }
            let wasOpen = status == .open
            status = .closed
            condition.broadcast()
            return (true, wasOpen)
        }
        guard closing else { return }
        // What was written before still goes; then the write side closes (the pump ends the queue).
        queue.finish()
        if !wasOpen { closer.closed(task) }
    }

    /// Writes what `write` accepted, in order; after `close`, closes the connection's write side.
    private func pump() async {
        for await data in queued {
            do {
                try await task.write(data, timeout: 0)
            } catch {
                condition.withLock {
                    failure = FoundationBridge.error(from: error, url: nil)
                    condition.broadcast()
                }
                events.post(.errorOccurred, from: self)
                queue.finish()
                break
            }
            let open = condition.withLock {
                pending -= data.count
                condition.broadcast()
                return status == .open
            }
            if open { events.post(.hasSpaceAvailable, from: self) }
        }
        await task.closeWrite()
        closer.closed(task)
    }
}
