import Ferry
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension URLSession {
    /// A response body read as it arrives (Apple's `URLSession.AsyncBytes`): reading is what pulls data
    /// from the network. Errors are `URLError`s.
    ///
    /// Apple's has a `task` property; this one has none (the body comes from Ferry's streaming call,
    /// which makes no task): cancel the Swift task that reads to stop the transfer.
    public struct AsyncBytes: AsyncSequence, Sendable {
        /// One byte of the body.
        public typealias Element = UInt8

        let base: Ferry.AsyncBytes
        let url: URL?

        /// An iterator over the body's bytes (the body is read once).
        public func makeAsyncIterator() -> Iterator {
            Iterator(chunks: base.chunks.makeAsyncIterator(), url: url)
        }

        /// Byte by byte, from the piece last read.
        public struct Iterator: AsyncIteratorProtocol {
            var chunks: Ferry.AsyncBytes.Chunks.Iterator
            let url: URL?
            var current = Data()
            var index = 0

            /// The next byte, or nil at the end of the body.
            public mutating func next() async throws -> UInt8? {
                while index >= current.count {
                    do {
                        guard let next = try await chunks.next() else { return nil }
                        current = next
                        index = 0
                    } catch let error as FerryError {
                        throw FoundationBridge.error(error, url: url)
                    }
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

    /// Starts loading `request` and returns once the response's head has arrived, with its body to read
    /// as it comes. Redirects are followed and challenges answered from the session's credential store.
    /// Not taken yet, and refused with `URLError.unsupportedURL`: a task `delegate`, and a request one
    /// of the session's `URLProtocol` classes takes.
    public func bytes(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        if let refusal { throw refusal }
        guard delegate == nil else {
            throw FoundationBridge.error(
                .unsupportedURL,
                "bytes(for:delegate:) takes no task delegate in FerryFoundationNetworking yet: use a data task with a data delegate",
                url: request.url
            )
        }
        let classes = protocolClasses
        if !classes.isEmpty, classes.contains(where: { URLProtocolLoader.ProtocolClass($0)?.canInit(nil, request) == true }) {
            throw FoundationBridge.error(
                .unsupportedURL,
                "bytes(for:) does not run URLProtocol classes yet: use a data task for a request a protocol class takes",
                url: request.url
            )
        }
        let ferryRequest = try FoundationBridge.request(request).get()
        do {
            let (bytes, response) = try await ferry.bytes(for: ferryRequest)
            return (AsyncBytes(base: bytes, url: request.url), FoundationBridge.response(response))
        } catch let error as FerryError {
            throw FoundationBridge.error(error, url: request.url)
        }
    }

    /// `bytes(for:delegate:)` for a GET of `url`.
    public func bytes(from url: URL, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (AsyncBytes, URLResponse) {
        try await bytes(for: URLRequest(url: url), delegate: delegate)
    }
}
