import Ferry
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import Synchronization

/// A TCP connection to a host and port (Apple's `URLSessionStreamTask`) on Ferry's stream task: through
/// the session's proxy when one applies, with TLS added by ``startSecureConnection()``.
///
/// Reads run in the order they were asked for, and so do writes (with ``closeWrite()`` and
/// ``startSecureConnection()`` after the writes asked for before them), as Apple's queue them.
/// Completion handlers run on the session's delegate queue.
open class URLSessionStreamTask: URLSessionTask, @unchecked Sendable {
    private var stream: StreamTask? { ferry as? StreamTask }

    /// The last read and the last write asked for: each new one waits for its predecessor.
    private let chains = Mutex<(read: Task<Void, Never>?, write: Task<Void, Never>?)>((nil, nil))
    private let readClosed = Mutex(false)
    private let captured = Atomic<Bool>(false)

    /// ``captureStreams()`` was called: the connection belongs to the streams it gave, and the task
    /// reports nothing more.
    var isCaptured: Bool { captured.load(ordering: .acquiring) }

    private enum Side { case read, write }

    /// Runs `work` after the previous work of `side` has finished.
    private func enqueue(_ side: Side, _ work: @escaping @Sendable () async -> Void) {
        chains.withLock { chains in
            let previous = side == .read ? chains.read : chains.write
            let next = Task {
                await previous?.value
                await work()
            }
            if side == .read { chains.read = next } else { chains.write = next }
        }
    }

    private func onQueue(_ body: @escaping @Sendable () -> Void) {
        owner.delegateQueue.addOperation(body)
    }

    private func converted(_ error: any Error) -> any Error {
        FoundationBridge.error(from: error, url: currentRequest?.url)
    }

    // MARK: Reading and writing

    /// Reads between `minBytes` and `maxBytes` bytes, waiting at most `timeout` seconds (0: no limit);
    /// `completionHandler` gets the data, whether the stream has ended, or the error.
    open func readData(
        ofMinLength minBytes: Int,
        maxLength maxBytes: Int,
        timeout: TimeInterval,
        completionHandler: @escaping @Sendable (Data?, Bool, (any Error)?) -> Void
    ) {
        // A task that could not be made has no stream to read: its end is reached.
        let ended = stream == nil
        read(minBytes, maxBytes, timeout) { [self] result in
            let carried = Carried(value: result)
            onQueue {
                switch carried.value {
                case .success(let (data, atEOF)): completionHandler(data, atEOF, nil)
                case .failure(let error): completionHandler(nil, ended, error)
                }
            }
        }
    }

    /// Reads between `minBytes` and `maxBytes` bytes (after the reads asked for before).
    open func readData(ofMinLength minBytes: Int, maxLength maxBytes: Int, timeout: TimeInterval) async throws -> (Data?, Bool) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Carried<Result<(Data?, Bool), any Error>>, Never>) in
            read(minBytes, maxBytes, timeout) { continuation.resume(returning: Carried(value: $0)) }
        }
        return try result.value.get()
    }

    /// Writes `data`, waiting at most `timeout` seconds (0: no limit); `completionHandler` gets nil once
    /// it is written, or the error.
    open func write(_ data: Data, timeout: TimeInterval, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        write(data, timeout) { [self] error in
            let carried = Carried(value: error)
            onQueue { completionHandler(carried.value) }
        }
    }

    /// Writes `data` (after the writes asked for before).
    open func write(_ data: Data, timeout: TimeInterval) async throws {
        let error = await withCheckedContinuation { (continuation: CheckedContinuation<Carried<(any Error)?>, Never>) in
            write(data, timeout) { continuation.resume(returning: Carried(value: $0)) }
        }
        if let failure = error.value { throw failure }
    }

    /// A read in the read chain; `done` gets its result (a task that could not be made: `badURL`; after
    /// ``captureStreams()``: `cancelled`, as the connection is the streams').
    private func read(_ minBytes: Int, _ maxBytes: Int, _ timeout: TimeInterval, done: @escaping @Sendable (Result<(Data?, Bool), any Error>) -> Void) {
        guard let stream else { return done(.failure(URLError(.badURL))) }
        guard !isCaptured else { return done(.failure(Self.capturedError)) }
        enqueue(.read) { [self] in
            do {
                let (data, atEOF) = try await stream.readData(ofMinLength: minBytes, maxLength: maxBytes, timeout: timeout)
                done(.success((data, atEOF)))
                if atEOF { await readSideClosed() }
            } catch {
                done(.failure(converted(error)))
            }
        }
    }

    /// A write in the write chain; `done` gets nil once it is written, or the error.
    private func write(_ data: Data, _ timeout: TimeInterval, done: @escaping @Sendable ((any Error)?) -> Void) {
        guard let stream else { return done(URLError(.badURL)) }
        guard !isCaptured else { return done(Self.capturedError) }
        enqueue(.write) { [self] in
            do {
                try await stream.write(data, timeout: timeout)
                done(nil)
            } catch {
                done(converted(error))
            }
        }
    }

    /// Ends writing once the writes asked for before are written; the delegate hears `writeClosedFor`.
    open func closeWrite() {
        guard let stream else { return }
        enqueue(.write) { [self] in
            guard let delegate = delegate(as: (any URLSessionStreamDelegate).self) else {
                await stream.closeWrite()
                return
            }
            let carried = Carried(value: (delegate, self))
            let session = owner
            // Told as the write side closes, on the connection's event loop: before the end of the stream
            // the server may send in answer is read, so `writeClosedFor` comes before `readClosedFor`
            // however late this task resumes (it once came after, on a loaded machine). Told after all
            // when there was no connection to close, as before.
            let told = Told()
            let tell: @Sendable () -> Void = {
                guard !told.flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
                self.onQueue { carried.value.0.urlSession(session, writeClosedFor: carried.value.1) }
            }
            await stream.closeWrite(whenClosed: tell)
            tell()
        }
    }

    /// Stops reading once the reads asked for before are done; the delegate hears `readClosedFor`.
    open func closeRead() {
        guard let stream else { return }
        enqueue(.read) { [self] in
            await stream.closeRead()
            await readSideClosed()
        }
    }

    /// Not offered: TLS cannot be taken off a connection once it is on (Apple deprecated this method for
    /// that reason).
    @available(*, unavailable, message: "TLS cannot be taken off a connection once it is on")
    open func stopSecureConnection() {
        fatalError("URLSessionStreamTask.stopSecureConnection() is unavailable: TLS cannot be taken off a connection")
    }

    /// Adds TLS once the writes asked for before are written, checked with the session's trust settings.
    /// A failed handshake fails the task.
    open func startSecureConnection() {
        guard let stream else { return }
        enqueue(.write) { [self] in
            do {
                try await stream.startSecureConnection()
            } catch {
                stream.cancel()
            }
        }
    }

    // MARK: Streams

    private static let capturedError = URLError(
        .cancelled,
        userInfo: [NSLocalizedDescriptionKey: "the stream task's connection was handed over by captureStreams(): read and write through its streams"]
    )

    /// Hands the connection over as a pair of Foundation streams, as Apple's does: once the reads and
    /// writes asked for before are done, the delegate's
    /// ``URLSessionStreamDelegate/urlSession(_:streamTask:didBecome:outputStream:)`` gets them, not yet
    /// open, and the task reports nothing more (reads and writes asked of it fail with `cancelled`).
    ///
    /// The input stream's `read` waits until bytes come, the output stream's `write` while 1 MiB is on
    /// its way; scheduled in a run loop they tell their delegate there. Closing both closes the
    /// connection. Without a stream delegate to take them, the connection is closed.
    open func captureStreams() {
        guard let stream, !captured.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let (reads, writes) = chains.withLock { ($0.read, $0.write) }
        let session = owner
        Task { [self] in
            await reads?.value
            await writes?.value
            guard let delegate = delegate(as: (any URLSessionStreamDelegate).self) else {
                stream.cancel()
                return
            }
            let pair = StreamTaskStreams(task: stream)
            let carried = Carried(value: (delegate, self, pair.input as InputStream, pair.output as OutputStream))
            onQueue { carried.value.0.urlSession(session, streamTask: carried.value.1, didBecome: carried.value.2, outputStream: carried.value.3) }
        }
    }

    // MARK: Delegate

    private func delegate<D>(as kind: D.Type) -> D? {
        (delegate as? D) ?? (owner.delegate as? D)
    }

    /// The read side is closed (the end of the stream, or closeRead): told once.
    private func readSideClosed() async {
        let first = readClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first, let delegate = delegate(as: (any URLSessionStreamDelegate).self) else { return }
        let carried = Carried(value: (delegate, self))
        let session = owner
        onQueue { carried.value.0.urlSession(session, readClosedFor: carried.value.1) }
    }
}

/// Whether a delegate call was made (for one that two paths may make).
private final class Told: Sendable {
    let flag = Atomic<Bool>(false)
}

/// A stream task's events (Apple's `URLSessionStreamDelegate`).
public protocol URLSessionStreamDelegate: URLSessionTaskDelegate {
    /// The read side closed: the server ended the stream, or ``URLSessionStreamTask/closeRead()``.
    func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask)
    /// The write side closed (``URLSessionStreamTask/closeWrite()``).
    func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask)
    /// A better route to the host exists. Ferry learns of no routes: never called.
    func urlSession(_ session: URLSession, betterRouteDiscoveredFor streamTask: URLSessionStreamTask)
    /// The task's connection as a pair of Foundation streams, not yet open, after
    /// ``URLSessionStreamTask/captureStreams()``; the task reports nothing more.
    func urlSession(_ session: URLSession, streamTask: URLSessionStreamTask, didBecome inputStream: InputStream, outputStream: OutputStream)
}

extension URLSessionStreamDelegate {
    public func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask) {}
    public func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask) {}
    public func urlSession(_ session: URLSession, betterRouteDiscoveredFor streamTask: URLSessionStreamTask) {}
    public func urlSession(_ session: URLSession, streamTask: URLSessionStreamTask, didBecome inputStream: InputStream, outputStream: OutputStream) {}
}
