import Crypto

/// The Retry packet's integrity tag (RFC 9001 §5.8): AES-128-GCM with QUIC version 1's fixed key and
/// nonce over the Original Destination Connection ID and the Retry packet, so that a client can tell a
/// Retry from the server it asked from one an off-path attacker made up.
public enum QUICRetry {
    static let keyV1: [UInt8] = [0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e]
    static let nonceV1: [UInt8] = [0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb]

    /// The tag for `packet` (the Retry packet without its tag) answering a first Initial sent to
    /// `originalDestinationConnectionID`.
    public static func integrityTag(_ packet: [UInt8], originalDestinationConnectionID: [UInt8]) throws -> [UInt8] {
        var pseudo = [UInt8(originalDestinationConnectionID.count)] + originalDestinationConnectionID
        pseudo += packet
        let box = try AES.GCM.seal([UInt8](), using: SymmetricKey(data: keyV1), nonce: AES.GCM.Nonce(data: nonceV1), authenticating: pseudo)
        return Array(box.tag)
    }

    /// Whether `retry` (tag included) carries the right tag for `originalDestinationConnectionID`.
    public static func isValid(_ retry: [UInt8], originalDestinationConnectionID: [UInt8]) -> Bool {
        guard retry.count > 16 else { return false }
        let tag = try? integrityTag(Array(retry.dropLast(16)), originalDestinationConnectionID: originalDestinationConnectionID)
        return tag == Array(retry.suffix(16))
    }
}
