import FerryEngine
public import Foundation
import NIOCore
import Synchronization

/// A TCP connection to a host and port (URLSessionStreamTask), through the session's proxy (CONNECT or
/// SOCKS5) when one applies; TLS added with ``startSecureConnection()``. Resume it, then read and write.
///
/// ```swift
/// let stream = session.streamTask(withHostName: "mail.example.com", port: 587)
/// stream.resume()
/// try await stream.write(Data("EHLO me\r\n".utf8), timeout: 10)
/// let (greeting, atEOF) = try await stream.readData(ofMinLength: 1, maxLength: 4096, timeout: 10)
/// ```
///
/// The task completes when the connection closes: ``closeWrite(whenClosed:)`` and the server's close, ``SessionTask/cancel()``,
/// or a failure.
public final class StreamTask: SessionTask, @unchecked Sendable {
    private let slot = ConnectionSlot<ByteStreamConnection>()
    /// The host it connects to.
    public let host: String
    /// The port it connects to.
    public let port: Int

    init(session: Session, identifier: Int, host: String, port: Int, rejection: FerryError?) {
        self.host = host
        self.port = port
        let named = host.contains(":") ? "[\(host)]" : host
        super.init(
            session: session,
            identifier: identifier,
            request: URL(string: "tcp://\(named):\(port)").map { Request(url: $0) },
            work: .stream(host: host, port: port),
            route: .delegates,
            rejection: rejection
        )
    }

    /// Between `minBytes` and `maxBytes` bytes, and whether the stream has ended (then fewer may come,
    /// even none). Waits at most `timeout` seconds (0 or less: no limit) for `minBytes`.
    public func readData(ofMinLength minBytes: Int, maxLength maxBytes: Int, timeout: TimeInterval) async throws -> (Data?, Bool) {
        let limit: TimeAmount? = timeout > 0 ? .nanoseconds(Int64(min(timeout, 1e6) * 1e9)) : nil
        let (data, atEOF) = try await connection().read(minimum: minBytes, maximum: maxBytes, timeout: limit)
        return (data.isEmpty && atEOF ? nil : data, atEOF)
    }

    /// Writes `data`; returns once it is written, or fails after `timeout` seconds (0 or less: no limit).
    public func write(_ data: Data, timeout: TimeInterval) async throws {
        let connection = try await connection()
        guard timeout > 0 else { return try await connection.write(data) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await connection.write(data) }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                throw FerryError(.timedOut, "the write did not finish within \(timeout) s")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Adds TLS (STARTTLS), checked with the session's trust settings; returns once the handshake is done.
    public func startSecureConnection() async throws {
        guard let connector = session.transport.byteStreams else {
            throw FerryError(.unsupportedURL, "this session's transport cannot add TLS to a stream")
        }
        try await connection().startTLS(connector, deadline: session.requestDeadline())
    }

    /// Ends writing (the server reads the end of the stream); reading goes on.
    /// - Parameter whenClosed: called as the write side closes, before anything the server sends in
    ///   answer is read; not called when there is no connection to close.
    public func closeWrite(whenClosed: (@Sendable () -> Void)? = nil) async {
        guard let connection = try? await connection() else { return }
        await connection.closeWrite(whenClosed: whenClosed)
    }

    /// Stops reading: reads return the end of the stream.
    public func closeRead() async {
        guard let connection = try? await connection() else { return }
        connection.closeRead()
    }

    /// The stream's bytes as an async sequence, and a writer (the captureStreams equivalent).
    public func streams() -> (bytes: AsyncThrowingStream<Data, any Error>, write: @Sendable (Data) async throws -> Void) {
        let bytes = AsyncThrowingStream<Data, any Error> { continuation in
            let reading = Task {
                do {
                    while true {
                        let (data, atEOF) = try await self.readData(ofMinLength: 1, maxLength: 65536, timeout: 0)
                        if let data, !data.isEmpty { continuation.yield(data) }
                        if atEOF { break }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reading.cancel() }
        }
        return (bytes, { [self] data in try await write(data, timeout: 0) })
    }

    // MARK: The transfer

    func transferStream(deadline: NIODeadline) async throws -> TransferResult {
        do {
            guard let connector = session.transport.byteStreams else {
                throw FerryError(.unsupportedURL, "this session's transport carries HTTP exchanges only; stream tasks need Ferry's standard transport")
            }
            let stream = try await connector.openByteStream(host: host, port: port, tls: nil, deadline: session.requestDeadline())
            let connection = try await ByteStreamConnection.attach(stream)
            slot.open(connection)
            await withTaskCancellationHandler {
                await connection.closed()
            } onCancel: {
                connection.close()
            }
            return .closed
        } catch {
            let failure = error as? FerryError ?? FerryError(.unknown, "\(error)")
            slot.fail(failure)
            throw failure
        }
    }

    /// Runs on the connection a data task handed over (``ResponseDisposition/becomeStream``), in that
    /// task's transfer, until it closes or this task is cancelled.
    func runAdopted(_ connection: ByteStreamConnection, context: TransferContext) async {
        slot.open(connection)
        await withTaskCancellationHandler {
            await connection.closed()
        } onCancel: {
            connection.close()
        }
        await transferEnded(result: .closed, failure: nil, context: context)
    }

    private func connection() async throws -> ByteStreamConnection {
        if let rejection { throw rejection }
        return try await slot.connection()
    }

    override func markEnded(error: FerryError?) {
        slot.fail(error ?? FerryError(.notConnected, "the stream task ended before it connected"))
        super.markEnded(error: error)
    }
}

extension Session {
    /// A stream task: a TCP connection to `hostname`:`port` (URLSession's streamTask(withHostName:port:)).
    public func streamTask(withHostName hostname: String, port: Int) -> StreamTask {
        register { identifier, rejection in
            var refusal = rejection
            if refusal == nil, !(1...65535).contains(port) {
                refusal = FerryError(.badURL, "the port \(port) is not between 1 and 65535")
            }
            if refusal == nil, hostname.isEmpty || hostname.contains(where: { $0 == "/" || $0 == " " || $0 == "@" }) {
                refusal = FerryError(.badURL, "\"\(hostname)\" is not a host name or address")
            }
            let bare = hostname.hasPrefix("[") && hostname.hasSuffix("]") ? String(hostname.dropFirst().dropLast()) : hostname
            return StreamTask(session: self, identifier: identifier, host: bare, port: port, rejection: refusal)
        }
    }
}
