import Crypto
import _CryptoExtras

/// The AEAD a QUIC connection protects packets with, from its TLS 1.3 cipher suite (RFC 9001 §5.3).
public enum QUICCipherSuite: Sendable, Hashable {
    /// TLS_AES_128_GCM_SHA256: the Initial packets' suite.
    case aes128GCM
    /// TLS_AES_256_GCM_SHA384.
    case aes256GCM
    /// TLS_CHACHA20_POLY1305_SHA256.
    case chacha20Poly1305

    /// Bytes of the packet protection key.
    var keyLength: Int { self == .aes128GCM ? 16 : 32 }
    /// Bytes of a secret (the suite's hash output).
    var secretLength: Int { self == .aes256GCM ? 48 : 32 }
}

/// A traffic secret's packet protection keys (RFC 9001 §5.1): the AEAD key, the IV, and the header
/// protection key, each HKDF-Expand-Label of the secret.
public struct QUICKeys: Sendable, Hashable {
    public let suite: QUICCipherSuite
    public let secret: [UInt8]
    public let key: [UInt8]
    public let iv: [UInt8]
    public let headerProtectionKey: [UInt8]

    /// The keys of `secret` under `suite`.
    public init(secret: [UInt8], suite: QUICCipherSuite) {
        self.suite = suite
        self.secret = secret
        key = Self.expandLabel(secret, label: "quic key", length: suite.keyLength, suite: suite)
        iv = Self.expandLabel(secret, label: "quic iv", length: 12, suite: suite)
        headerProtectionKey = Self.expandLabel(secret, label: "quic hp", length: suite.keyLength, suite: suite)
    }

    /// The keys of the next key phase (RFC 9001 §6.1): a new secret ("quic ku"), a new key and IV; the
    /// header protection key stays.
    public func updated() -> QUICKeys {
        let next = Self.expandLabel(secret, label: "quic ku", length: suite.secretLength, suite: suite)
        return QUICKeys(secret: next, suite: suite, headerProtectionKey: headerProtectionKey)
    }

    private init(secret: [UInt8], suite: QUICCipherSuite, headerProtectionKey: [UInt8]) {
        self.suite = suite
        self.secret = secret
        key = Self.expandLabel(secret, label: "quic key", length: suite.keyLength, suite: suite)
        iv = Self.expandLabel(secret, label: "quic iv", length: 12, suite: suite)
        self.headerProtectionKey = headerProtectionKey
    }

    /// TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1) with an empty context, under the suite's hash.
    static func expandLabel(_ secret: [UInt8], label: String, length: Int, suite: QUICCipherSuite) -> [UInt8] {
        let fullLabel = Array("tls13 \(label)".utf8)
        var info: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)]
        info += fullLabel
        info.append(0)
        let key = SymmetricKey(data: secret)
        let output: SymmetricKey =
            suite == .aes256GCM
            ? HKDF<SHA384>.expand(pseudoRandomKey: key, info: info, outputByteCount: length)
            : HKDF<SHA256>.expand(pseudoRandomKey: key, info: info, outputByteCount: length)
        return output.withUnsafeBytes { Array($0) }
    }
}

/// The Initial packets' secrets (RFC 9001 §5.2), derived from the Destination Connection ID of the
/// client's first Initial with QUIC version 1's salt: anyone who sees that ID can read them.
public struct QUICInitialSecrets: Sendable, Hashable {
    /// QUIC version 1's initial salt.
    public static let saltV1: [UInt8] = [
        0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
    ]

    public let client: QUICKeys
    public let server: QUICKeys

    public init(destinationConnectionID: [UInt8]) {
        let initial = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: destinationConnectionID), salt: Self.saltV1)
        let secret = initial.withUnsafeBytes { Array($0) }
        client = QUICKeys(
            secret: QUICKeys.expandLabel(secret, label: "client in", length: 32, suite: .aes128GCM),
            suite: .aes128GCM
        )
        server = QUICKeys(
            secret: QUICKeys.expandLabel(secret, label: "server in", length: 32, suite: .aes128GCM),
            suite: .aes128GCM
        )
    }
}
