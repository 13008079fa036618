/// Packet numbers on the wire (RFC 9000 §17.1, Appendix A): sent truncated to 1–4 bytes, enough for
/// the receiver to tell them from those around the largest it has acknowledged, and recovered from
/// that truncation against the largest received.
public enum QUICPacketNumber {
    /// The bytes to send `packetNumber` in, when the peer has acknowledged `largestAcknowledged` (nil:
    /// nothing yet): twice the distance in flight and one bit more (Appendix A.2).
    public static func encodedLength(of packetNumber: UInt64, largestAcknowledged: UInt64?) -> Int {
        let unacknowledged = largestAcknowledged.map { packetNumber - $0 } ?? packetNumber + 1
        // ceil(log2(n)) + 1 bits, as the bit length of n - 1, plus one.
        let bits = 64 - (max(unacknowledged, 1) - 1).leadingZeroBitCount + 1
        return min(4, max(1, (bits + 7) / 8))
    }

    /// The full packet number of `truncated` (its low `length` bytes), given the largest packet number
    /// received so far (nil: none), as Appendix A.3 decodes it.
    public static func decode(_ truncated: UInt64, length: Int, largestReceived: UInt64?) -> UInt64 {
        let expected = largestReceived.map { $0 + 1 } ?? 0
        let window: UInt64 = 1 << (UInt64(length) * 8)
        let halfWindow = window / 2
        let mask = window - 1
        let candidate = (expected & ~mask) | truncated
        if candidate + halfWindow <= expected, candidate < (1 << 62) - window {
            return candidate + window
        }
        if candidate > expected + halfWindow, candidate >= window {
            return candidate - window
        }
        return candidate
    }
}
