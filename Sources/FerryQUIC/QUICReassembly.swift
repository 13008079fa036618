/// Bytes of one ordered stream (a crypto stream, a QUIC stream) that arrive in pieces at offsets, in
/// any order and possibly repeated (RFC 9000 §2.2): handed on once they are contiguous. What waits for
/// a gap is bounded by `limit` bytes past what was handed on, so a peer cannot make it grow without end.
public struct QUICReassembly: Sendable, Hashable {
    /// Bytes handed on so far: the next one expected is at this offset.
    public private(set) var delivered: UInt64 = 0
    /// Pieces past a gap, by offset.
    private var pending: [UInt64: [UInt8]] = [:]
    public let limit: UInt64

    public init(limit: UInt64) {
        self.limit = limit
    }

    /// Adds `data` at `offset`; returns the bytes that are now contiguous, in order. Throws when the
    /// piece ends past `limit` bytes beyond what was handed on (FLOW_CONTROL_ERROR or
    /// CRYPTO_BUFFER_EXCEEDED for the connection).
    public mutating func add(_ data: [UInt8], at offset: UInt64) throws(QUICError) -> [UInt8] {
        let end = offset + UInt64(data.count)
        guard end <= delivered + limit else { throw .malformed("\(end - delivered) bytes past what was read, more than the \(limit) allowed") }
        guard end > delivered else { return [] }
        // What is new of this piece.
        let fresh = offset < delivered ? Array(data[Int(delivered - offset)...]) : data
        let start = max(offset, delivered)
        if start > delivered {
            if (pending[start]?.count ?? 0) < fresh.count { pending[start] = fresh }
            return []
        }
        var output = fresh
        delivered += UInt64(fresh.count)
        // Pieces the gap kept back, now reachable.
        while let (key, piece) = pending.first(where: { $0.key <= delivered }) {
            pending[key] = nil
            let pieceEnd = key + UInt64(piece.count)
            guard pieceEnd > delivered else { continue }
            let tail = piece[Int(delivered - key)...]
            output += tail
            delivered = pieceEnd
        }
        return output
    }
}
