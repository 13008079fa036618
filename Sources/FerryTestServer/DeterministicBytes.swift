/// The content of `GET /bytes/{n}?seed={s}`: a pseudo-random byte stream that any byte offset can be
/// computed from directly, so a range, a resumed download or a client's own check all see the same bytes.
///
/// Byte `i` of the stream for `seed` is byte `i % 8` (little-endian) of `splitmix64(seed, i / 8)`.
/// The stream has no period a client could be fooled by: two different offsets give unrelated words.
/// A new version of a resource (fault `change_after`) uses another seed, see ``seed(_:version:)``.
public struct DeterministicBytes: Sendable, Hashable {
    /// The seed the stream was built from.
    public let seed: UInt64

    /// Creates the stream for a seed.
    public init(seed: UInt64) {
        self.seed = seed
    }

    /// Creates the stream for a resource's seed and version: version 0 is the seed itself.
    public init(seed: UInt64, version: Int) {
        self.seed = Self.seed(seed, version: version)
    }

    /// The seed of version `version` of the resource whose version 0 has `seed`.
    public static func seed(_ seed: UInt64, version: Int) -> UInt64 {
        version == 0 ? seed : seed ^ mix(UInt64(truncatingIfNeeded: version) &* 0xD6E8_FEB8_6659_FD93)
    }

    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    func word(_ index: UInt64) -> UInt64 {
        Self.mix(self.seed ^ (index &* 0x9E37_79B9_7F4A_7C15))
    }

    /// Fills `buffer` with the bytes at `offset ..< offset + buffer.count`.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int64) {
        precondition(offset >= 0, "offset must not be negative")
        guard buffer.count > 0, let base = buffer.baseAddress else { return }
        var position = 0
        var index = UInt64(offset) / 8
        let skip = Int(UInt64(offset) % 8)
        if skip != 0 {
            let word = self.word(index).littleEndian
            withUnsafeBytes(of: word) { bytes in
                let count = min(8 - skip, buffer.count)
                for k in 0..<count { base.storeBytes(of: bytes[skip + k], toByteOffset: k, as: UInt8.self) }
                position = count
            }
            index += 1
        }
        while buffer.count - position >= 8 {
            base.storeBytes(of: self.word(index).littleEndian, toByteOffset: position, as: UInt64.self)
            position += 8
            index += 1
        }
        if position < buffer.count {
            let word = self.word(index).littleEndian
            withUnsafeBytes(of: word) { bytes in
                for k in 0..<(buffer.count - position) {
                    base.storeBytes(of: bytes[k], toByteOffset: position + k, as: UInt8.self)
                }
            }
        }
    }

    /// The bytes at `offset ..< offset + count`, as an array (for tests and small checks).
    public func bytes(offset: Int64, count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            self.fill(UnsafeMutableRawBufferPointer(buffer), offset: offset)
            initialized = count
        }
    }
}
