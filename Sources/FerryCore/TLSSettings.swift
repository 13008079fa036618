import Foundation

/// What a TLS connection trusts and presents, besides its protocol versions (those are
/// ``SessionConfiguration/tlsMinimumSupportedProtocolVersion`` and
/// ``SessionConfiguration/tlsMaximumSupportedProtocolVersion``).
///
/// A value (Codable): a background task records the settings of the client that created it — the
/// contents of its CA files, not their paths — so ferryd connects as that client would.
public struct TLSSettings: Sendable, Hashable, Codable {
    /// Certificates trusted besides the system's (PEM, one or more each), e.g. a private CA.
    public var additionalTrustRootsPEM: [String] = []
    /// A client certificate chain (PEM) for mutual TLS; with ``clientPrivateKeyPEM``.
    public var clientCertificatePEM: String?
    /// The client certificate's private key (PEM, unencrypted).
    public var clientPrivateKeyPEM: String?
    /// SHA-256 digests of the server certificate's public key (SubjectPublicKeyInfo), base64: the
    /// connection succeeds only if the leaf's key has one of them. Empty: no pinning.
    public var pinnedPublicKeys: [String] = []
    /// Accept any certificate (curl's `-k`). Only when asked for explicitly; pins still apply.
    public var allowsUntrustedCertificates = false

    /// No extra roots, no identity, no pins, full verification.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case additionalTrustRootsPEM, clientCertificatePEM, clientPrivateKeyPEM, pinnedPublicKeys
        case allowsUntrustedCertificates
    }

    /// Decodes, with the defaults for absent fields (the control API's clients send what they set).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        additionalTrustRootsPEM = try container.decodeIfPresent([String].self, forKey: .additionalTrustRootsPEM) ?? []
        clientCertificatePEM = try container.decodeIfPresent(String.self, forKey: .clientCertificatePEM)
        clientPrivateKeyPEM = try container.decodeIfPresent(String.self, forKey: .clientPrivateKeyPEM)
        pinnedPublicKeys = try container.decodeIfPresent([String].self, forKey: .pinnedPublicKeys) ?? []
        allowsUntrustedCertificates =
            try container.decodeIfPresent(Bool.self, forKey: .allowsUntrustedCertificates) ?? false
    }

    /// True when nothing differs from ``init()``.
    public var isDefault: Bool { self == TLSSettings() }

    /// Pins in curl's `--pinnedpubkey` form: `sha256//BASE64`, several separated by `;`.
    /// - Throws: ``FerryError`` with ``FerryError/Code/invalidOperation`` naming the bad part.
    public static func parsePins(_ text: String) throws -> [String] {
        var pins: [String] = []
        for part in text.split(separator: ";", omittingEmptySubsequences: true) {
            let pin = part.trimmingCharacters(in: .whitespaces)
            guard pin.hasPrefix("sha256//") else {
                throw FerryError(
                    .invalidOperation,
                    "a pinned public key is sha256// followed by the base64 SHA-256 of the key (curl's form), not '\(pin)'; a file of the key is not supported"
                )
            }
            let digest = String(pin.dropFirst("sha256//".count))
            guard let bytes = Data(base64Encoded: digest), bytes.count == 32 else {
                throw FerryError(.invalidOperation, "'\(digest)' is not the base64 of a 32-byte SHA-256 digest")
            }
            pins.append(digest)
        }
        guard !pins.isEmpty else {
            throw FerryError(.invalidOperation, "no pinned public key given: use sha256//BASE64[;sha256//BASE64...]")
        }
        return pins
    }
}
