/// A deterministic random number generator (SplitMix64, the mixing ``DeterministicBytes`` uses), so a
/// test that draws random cases can be run again from its printed seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        defer { state &+= 0x9E37_79B9_7F4A_7C15 }
        return DeterministicBytes.mix(state)
    }
}
