import Crypto
import _CryptoExtras
import Foundation

/// Protecting and unprotecting one packet with one direction's keys (RFC 9001 §5.3, §5.4): the payload
/// sealed with the AEAD (the header as associated data, the nonce the IV with the packet number), then
/// the first byte's low bits and the packet number masked with a sample of the ciphertext.
public struct QUICPacketProtection: Sendable {
    public let keys: QUICKeys
    // (SymmetricKey is not Sendable in this swift-crypto: made from the bytes where used.)
    private var aeadKey: SymmetricKey { SymmetricKey(data: keys.key) }
    private var headerKey: SymmetricKey { SymmetricKey(data: keys.headerProtectionKey) }

    /// The AEAD's tag: 16 bytes for every suite QUIC uses.
    public static let tagLength = 16
    /// Bytes of ciphertext sampled for the header mask.
    public static let sampleLength = 16

    public init(keys: QUICKeys) {
        self.keys = keys
    }

    /// The packet `header` (its packet number, `packetNumberLength` bytes, at its end) followed by
    /// `payload` sealed and the header protected. `packetNumber` is the full number the truncated one
    /// in the header stands for.
    public func protect(header: [UInt8], payload: [UInt8], packetNumber: UInt64, packetNumberLength: Int) throws -> [UInt8] {
        let packetNumberOffset = header.count - packetNumberLength
        guard packetNumberOffset > 0, (1...4).contains(packetNumberLength) else {
            throw QUICError.malformed("a packet number of \(packetNumberLength) bytes")
        }
        var packet = header
        packet += try seal(payload, header: header, packetNumber: packetNumber)
        // The sample starts 4 bytes after the packet number's start, whatever its length (§5.4.2).
        let sampleStart = packetNumberOffset + 4
        guard packet.count >= sampleStart + Self.sampleLength else {
            throw QUICError.malformed("a packet too short to sample for header protection (pad the payload)")
        }
        let mask = try headerMask(sample: Array(packet[sampleStart..<(sampleStart + Self.sampleLength)]))
        packet[0] ^= mask[0] & (packet[0] & 0x80 != 0 ? 0x0F : 0x1F)
        for index in 0..<packetNumberLength { packet[packetNumberOffset + index] ^= mask[1 + index] }
        return packet
    }

    /// What ``unprotect(_:packetNumberOffset:largestReceived:)`` recovers.
    public struct Opened: Sendable, Hashable {
        /// The header without protection, its packet number as sent (truncated).
        public var header: [UInt8]
        public var payload: [UInt8]
        /// The full packet number.
        public var packetNumber: UInt64
        public var packetNumberLength: Int
    }

    /// Removes header protection and opens the payload of `packet`, whose packet number starts at
    /// `packetNumberOffset` (after the connection IDs, token and length); `largestReceived` recovers the
    /// full packet number. Throws ``QUICError/decryptionFailed`` for a packet these keys did not seal.
    public func unprotect(_ packet: [UInt8], packetNumberOffset: Int, largestReceived: UInt64?) throws -> Opened {
        let sampleStart = packetNumberOffset + 4
        guard packetNumberOffset > 0, packet.count >= sampleStart + Self.sampleLength else { throw QUICError.truncated }
        let mask = try headerMask(sample: Array(packet[sampleStart..<(sampleStart + Self.sampleLength)]))
        var first = packet[0]
        first ^= mask[0] & (first & 0x80 != 0 ? 0x0F : 0x1F)
        let packetNumberLength = Int(first & 0x03) + 1
        var header = Array(packet[0..<(packetNumberOffset + packetNumberLength)])
        header[0] = first
        var truncated: UInt64 = 0
        for index in 0..<packetNumberLength {
            header[packetNumberOffset + index] ^= mask[1 + index]
            truncated = truncated << 8 | UInt64(header[packetNumberOffset + index])
        }
        let packetNumber = QUICPacketNumber.decode(truncated, length: packetNumberLength, largestReceived: largestReceived)
        let sealed = packet[(packetNumberOffset + packetNumberLength)...]
        let payload = try open(Array(sealed), header: header, packetNumber: packetNumber)
        return Opened(header: header, payload: payload, packetNumber: packetNumber, packetNumberLength: packetNumberLength)
    }

    /// The AEAD nonce: the IV with the packet number XORed into its last bytes (§5.3).
    func nonce(_ packetNumber: UInt64) -> [UInt8] {
        var nonce = keys.iv
        for index in 0..<8 { nonce[nonce.count - 1 - index] ^= UInt8(truncatingIfNeeded: packetNumber >> (UInt64(index) * 8)) }
        return nonce
    }

    private func seal(_ payload: [UInt8], header: [UInt8], packetNumber: UInt64) throws -> [UInt8] {
        switch keys.suite {
        case .aes128GCM, .aes256GCM:
            let box = try AES.GCM.seal(payload, using: aeadKey, nonce: AES.GCM.Nonce(data: nonce(packetNumber)), authenticating: header)
            return Array(box.ciphertext) + Array(box.tag)
        case .chacha20Poly1305:
            let box = try ChaChaPoly.seal(payload, using: aeadKey, nonce: ChaChaPoly.Nonce(data: nonce(packetNumber)), authenticating: header)
            return Array(box.ciphertext) + Array(box.tag)
        }
    }

    private func open(_ sealed: [UInt8], header: [UInt8], packetNumber: UInt64) throws -> [UInt8] {
        guard sealed.count >= Self.tagLength else { throw QUICError.truncated }
        let ciphertext = sealed.dropLast(Self.tagLength)
        let tag = sealed.suffix(Self.tagLength)
        do {
            switch keys.suite {
            case .aes128GCM, .aes256GCM:
                let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce(packetNumber)), ciphertext: ciphertext, tag: tag)
                return Array(try AES.GCM.open(box, using: aeadKey, authenticating: header))
            case .chacha20Poly1305:
                let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonce(packetNumber)), ciphertext: ciphertext, tag: tag)
                return Array(try ChaChaPoly.open(box, using: aeadKey, authenticating: header))
            }
        } catch {
            throw QUICError.decryptionFailed
        }
    }

    /// The 5 mask bytes of header protection for `sample` (§5.4.3, §5.4.4).
    func headerMask(sample: [UInt8]) throws -> [UInt8] {
        switch keys.suite {
        case .aes128GCM, .aes256GCM:
            var block = sample
            try AES.permute(&block, key: headerKey)
            return Array(block.prefix(5))
        case .chacha20Poly1305:
            let counter = try Insecure.ChaCha20CTR.Counter(data: sample[0..<4])
            let nonce = try Insecure.ChaCha20CTR.Nonce(data: sample[4..<16])
            return Array(try Insecure.ChaCha20CTR.encrypt([UInt8](repeating: 0, count: 5), using: headerKey, counter: counter, nonce: nonce))
        }
    }
}
