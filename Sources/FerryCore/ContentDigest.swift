/// An expected digest of a download's body (SPEC S10.3): the algorithm and the value in hex. A download
/// that carries one in ``Request/expectedDigest`` succeeds only when its file has exactly that digest.
public struct ContentDigest: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The hash functions Ferry verifies (those swift-crypto offers).
    public enum Algorithm: String, Sendable, Hashable, Codable, CaseIterable {
        case sha256, sha384, sha512
        /// Insecure: detects accidents, not tampering. Offered because many mirrors publish it.
        case sha1
        /// Insecure: detects accidents, not tampering. Offered because many mirrors publish it.
        case md5

        /// Hex digits in a digest.
        public var hexLength: Int {
            switch self {
            case .sha256: 64
            case .sha384: 96
            case .sha512: 128
            case .sha1: 40
            case .md5: 32
            }
        }
    }

    /// The hash function.
    public var algorithm: Algorithm
    /// The digest, lower-case hex.
    public var hex: String

    /// A digest; nil when `hex` is not ``Algorithm/hexLength`` hex digits (any case).
    public init?(_ algorithm: Algorithm, hex: String) {
        let lower = hex.lowercased()
        guard lower.utf8.count == algorithm.hexLength,
            lower.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        self.algorithm = algorithm
        self.hex = lower
    }

    /// Parses `ALGORITHM=HEX`, e.g. `sha256=9f86d0…` (the form the CLI's `--checksum` takes); nil otherwise.
    public init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].lowercased().replacing("-", with: ""))
        else { return nil }
        self.init(algorithm, hex: String(parts[1]))
    }

    /// `ALGORITHM=HEX`.
    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    private enum CodingKeys: String, CodingKey { case algorithm, hex }

    /// Decodes a digest, refusing a value of the wrong length or with non-hex characters.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let algorithm = try container.decode(Algorithm.self, forKey: .algorithm)
        let hex = try container.decode(String.self, forKey: .hex)
        guard let digest = ContentDigest(algorithm, hex: hex) else {
            throw DecodingError.dataCorruptedError(
                forKey: .hex,
                in: container,
                debugDescription: "a \(algorithm.rawValue) digest is \(algorithm.hexLength) hex digits"
            )
        }
        self = digest
    }
}
