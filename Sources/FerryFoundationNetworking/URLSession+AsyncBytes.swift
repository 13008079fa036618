public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension URLSession {
    /// A response body read as it arrives (Apple's `URLSession.AsyncBytes`), from the data task that
    /// loads it (``task``). Errors are `URLError`s.
    ///
    /// The body waits in memory until it is read, up to 4 MiB: past that the task is suspended until
    /// the reader catches up, so a slow reader holds the server back instead of filling memory.
    /// Cancelling the Swift task that reads cancels the data task.
    public struct AsyncBytes: AsyncSequence, Sendable {
        /// One byte of the body.
        public typealias Element = UInt8

        /// The data task that loads the body: cancel it, or read its progress and metrics.
        public let task: URLSessionDataTask
        let sink: BytesTaskDelegate

        /// An iterator over the body's bytes (the body is read once).
        public func makeAsyncIterator() -> Iterator {
            Iterator(chunks: sink.body.makeAsyncIterator(), sink: sink)
        }

        /// Byte by byte, from the piece last read.
        public struct Iterator: AsyncIteratorProtocol {
            var chunks: AsyncThrowingStream<Data, any Error>.AsyncIterator
            let sink: BytesTaskDelegate
            var current = Data()
            var index = 0

            /// The next byte, or nil at the end of the body.
            public mutating func next() async throws -> UInt8? {
                while index >= current.count {
                    guard let next = try await chunks.next() else { return nil }
                    sink.consumed(next.count)
                    current = next
                    index = 0
                }
                defer { index += 1 }
                return current[current.startIndex + index]
            }
        }

        /// The body's lines, as Apple's `lines`: split at LF, CR LF or CR, without their ends, and
        /// without empty lines (Apple's line sequence yields none either).
        public var lines: Lines { Lines(bytes: self) }

        /// The lines of a body.
        public struct Lines: AsyncSequence, Sendable {
            /// One line, decoded as UTF-8.
            public typealias Element = String
            let bytes: AsyncBytes

            /// An iterator over the lines.
            public func makeAsyncIterator() -> Iterator { Iterator(bytes: bytes.makeAsyncIterator()) }

            /// Line by line.
            public struct Iterator: AsyncIteratorProtocol {
                var bytes: AsyncBytes.Iterator
                var pending: [UInt8] = []
                var afterCR = false

                /// The next non-empty line, or nil at the end of the body.
                public mutating func next() async throws -> String? {
                    while let byte = try await bytes.next() {
                        let lineFeedAfterCR = afterCR && byte == 0x0A
                        afterCR = byte == 0x0D
                        if byte == 0x0A || byte == 0x0D {
                            if lineFeedAfterCR || pending.isEmpty { continue }
                            defer { pending.removeAll(keepingCapacity: true) }
                            return String(decoding: pending, as: UTF8.self)
                        }
                        pending.append(byte)
                    }
                    guard !pending.isEmpty else { return nil }
                    defer { pending.removeAll() }
                    return String(decoding: pending, as: UTF8.self)
                }
            }
        }
    }

    /// Starts loading `request` in a data task and returns once the response's head has arrived, with
    /// its body to read as it comes. `delegate` is the task's delegate: it hears redirects, challenges,
    /// progress, metrics and the completion, as Apple's; a `URLProtocol` class of the session that takes
    /// the request loads it.
    public func bytes(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        let sink = BytesTaskDelegate(user: delegate)
        let task = dataTask(with: request)
        task.delegate = sink
        let response = try await sink.start(task)
        return (AsyncBytes(task: task, sink: sink), response)
    }

    /// `bytes(for:delegate:)` for a GET of `url`.
    public func bytes(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        try await bytes(for: URLRequest(url: url), delegate: delegate)
    }
}
