/// QUIC's variable-length integers (RFC 9000 §16): 1, 2, 4 or 8 bytes, the two high bits of the first
/// saying which, for values up to 2^62 - 1.
public enum QUICVarint {
    /// The largest value a varint holds: 2^62 - 1.
    public static let maximum: UInt64 = (1 << 62) - 1

    /// The bytes `value` takes, in the shortest encoding.
    public static func length(of value: UInt64) -> Int {
        switch value {
        case 0..<64: 1
        case 64..<16_384: 2
        case 16_384..<1_073_741_824: 4
        default: 8
        }
    }

    /// Appends `value` to `bytes` in `length` bytes (the shortest when nil).
    /// - Precondition: `value` ≤ ``maximum`` and fits `length`.
    public static func append(_ value: UInt64, to bytes: inout [UInt8], length: Int? = nil) {
        precondition(value <= maximum, "a QUIC varint holds at most 2^62 - 1")
        let length = length ?? Self.length(of: value)
        precondition(length >= Self.length(of: value) && [1, 2, 4, 8].contains(length), "\(value) does not fit \(length) bytes")
        let prefix: UInt64 =
            switch length {
            case 1: 0
            case 2: 1
            case 4: 2
            default: 3
            }
        let tagged = value | prefix << (UInt64(length) * 8 - 2)
        for index in stride(from: length - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: tagged >> (UInt64(index) * 8)))
        }
    }

    /// `value` encoded in the shortest form.
    public static func encode(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }
}
