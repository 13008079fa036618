import FerryEngine
public import Foundation
import NIOCore

/// A request body produced as it is sent (an upload from a stream): any async sequence of byte chunks.
/// It is read once; a 307 or 308 redirect asks the delegate for a new one.
public struct RequestBodyStream: Sendable {
    let length: Int64?
    let stream: TransportBodyStream

    /// A body of `[UInt8]` chunks; `length` (when known) is sent as Content-Length, else the body is
    /// sent chunked.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int64? = nil)
    where Chunks.Element == [UInt8] {
        self.length = length
        self.stream = TransportBodyStream(chunks.map { ByteBuffer(bytes: $0) })
    }

    /// A body of `Data` chunks.
    public init<Chunks: AsyncSequence & Sendable>(data chunks: Chunks, length: Int64? = nil)
    where Chunks.Element == Data {
        self.length = length
        self.stream = TransportBodyStream(chunks.map { ByteBuffer(bytes: $0) })
    }
}
