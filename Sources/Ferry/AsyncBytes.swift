import FerryEngine
public import Foundation
import NIOCore

/// A response body read as it arrives (URLSession.AsyncBytes): byte by byte, or in ``chunks``.
/// Reading is what pulls data from the network (backpressure). It can be iterated once.
public struct AsyncBytes: AsyncSequence, Sendable {
    /// One byte of the body.
    public typealias Element = UInt8

    let body: TransportBodyStream
    let declaredLength: Int64?
    let url: URL

    /// The body in pieces as they arrive, each a `Data`.
    public var chunks: Chunks { Chunks(bytes: self) }

    /// An iterator over the body's bytes (the body is read once).
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator())
    }

    /// Byte by byte, from a buffered chunk.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.Iterator
        var current = Data()
        var index = 0

        /// The next byte, or nil at the end of the body.
        /// - Throws: `FerryError` when the transfer fails.
        public mutating func next() async throws -> UInt8? {
            while index >= current.count {
                guard let next = try await chunks.next() else { return nil }
                current = next
                index = 0
            }
            defer { index += 1 }
            return current[current.startIndex + index]
        }
    }

    /// The body as `Data` pieces; the end is checked against Content-Length.
    public struct Chunks: AsyncSequence, Sendable {
        /// One piece of the body, as the network delivered it.
        public typealias Element = Data
        let bytes: AsyncBytes

        /// An iterator over the body's pieces (the body is read once).
        public func makeAsyncIterator() -> Iterator {
            Iterator(base: bytes.body.makeAsyncIterator(), declaredLength: bytes.declaredLength, url: bytes.url)
        }

        /// Reads the next piece.
        public struct Iterator: AsyncIteratorProtocol {
            var base: TransportBodyStream.Iterator
            let declaredLength: Int64?
            let url: URL
            var received: Int64 = 0

            /// The next piece, or nil at the end of the body.
            /// - Throws: `FerryError` when the transfer fails, or the body is shorter than its Content-Length.
            public mutating func next() async throws -> Data? {
                guard let chunk = try await base.next() else {
                    if let declaredLength, received != declaredLength {
                        throw FerryError(
                            .networkConnectionLost,
                            "the server announced \(declaredLength) bytes but sent \(received)",
                            failingURL: url.absoluteString
                        )
                    }
                    return nil
                }
                received += Int64(chunk.readableBytes)
                return Data(chunk.readableBytesView)
            }
        }
    }
}
