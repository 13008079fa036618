public import Foundation
public import NIOCore

/// `Data` as a body in slices: an upload's, so progress moves as it is sent, or a cached response's.
public struct DataChunks: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer
    /// The bytes.
    public let data: Data
    /// The largest slice.
    public var sliceSize: Int

    /// `data` in slices of `sliceSize` bytes.
    public init(data: Data, sliceSize: Int = 256 * 1024) {
        self.data = data
        self.sliceSize = sliceSize
    }

    public func makeAsyncIterator() -> Iterator { Iterator(data: data, sliceSize: sliceSize) }

    /// Hands out the slices in order.
    public struct Iterator: AsyncIteratorProtocol {
        let data: Data
        let sliceSize: Int
        var position: Data.Index

        init(data: Data, sliceSize: Int) {
            self.data = data
            self.sliceSize = sliceSize
            self.position = data.startIndex
        }

        public mutating func next() async throws -> ByteBuffer? {
            guard position < data.endIndex else { return nil }
            let end = Swift.min(data.endIndex, position + sliceSize)
            defer { position = end }
            return ByteBuffer(bytes: data[position..<end])
        }
    }
}
