import Crypto
import FerryCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import Synchronization
import X509

/// TLS for Ferry's own transport: one NIOSSL context per transport, and the server's certificate checked
/// by swift-certificates' `Verifier` in NIOSSL's custom verification callback.
///
/// Why not BoringSSL's own check: its failure is one opaque "CERTIFICATE_VERIFY_FAILED" with library
/// internals and build paths in the text, and it has no hook for pins. Here the chain is built against
/// the trust roots Ferry chose (the system bundle, or `SSL_CERT_FILE`/`SSL_CERT_DIR` as OpenSSL reads
/// them, plus the session's extra CAs) under RFC 5280 and server-identity policies, and a failure is
/// named in plain words: untrusted issuer, expired, not yet valid, a name the certificate does not hold
/// (with the names it has), or a pin mismatch.
final class TLSClient: Sendable {
    let context: NIOSSLContext
    private let settings: TLSSettings
    private let roots: TrustRoots
    private let evaluator: (@Sendable (ServerTrustChallenge) async -> ServerTrustDisposition)?
    let minimumVersion: SessionConfiguration.TLSVersion
    let maximumVersion: SessionConfiguration.TLSVersion

    /// A client for `options`, offering `protocols` by ALPN.
    /// - Throws: ``FerryError`` for a client identity or CA that is not valid PEM.
    init(options: TransportOptions, protocols: [String]) throws {
        settings = options.tls
        evaluator = options.serverTrustEvaluator
        minimumVersion = options.minimumTLSVersion
        maximumVersion = options.maximumTLSVersion
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = Self.nioVersion(options.minimumTLSVersion)
        configuration.maximumTLSVersion = Self.nioVersion(options.maximumTLSVersion)
        configuration.applicationProtocols = protocols
        // The chain is checked in the callback below; BoringSSL's own roots are not consulted.
        configuration.certificateVerification = .fullVerification
        configuration.trustRoots = .certificates([])
        if let chainPEM = options.tls.clientCertificatePEM {
            guard let keyPEM = options.tls.clientPrivateKeyPEM else {
                throw FerryError(.invalidOperation, "a client certificate needs its private key (--key)")
            }
            do {
                let blocks = PEMBlocks.find(in: chainPEM, label: { $0 == "CERTIFICATE" })
                guard !blocks.isEmpty else { throw FerryError(.invalidOperation, "no certificate") }
                configuration.certificateChain = try blocks.map { .certificate(try NIOSSLCertificate(bytes: Array($0.utf8), format: .pem)) }
            } catch {
                throw FerryError(.invalidOperation, "the client certificate is not a PEM certificate")
            }
            do {
                // The key may share a file with the certificate (curl's --cert without --key).
                guard let block = PEMBlocks.find(in: keyPEM, label: { $0.hasSuffix("PRIVATE KEY") }).first else {
                    throw FerryError(.invalidOperation, "no private key")
                }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(block.utf8), format: .pem))
            } catch {
                throw FerryError(
                    .invalidOperation,
                    "the client key is not an unencrypted PEM private key (decrypt it with openssl pkey first)"
                )
            }
        } else if options.tls.clientPrivateKeyPEM != nil {
            throw FerryError(.invalidOperation, "a client key was given without its certificate (--cert)")
        }
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw FerryError(.secureConnectionFailed, "cannot set up TLS: \(TLSClient.plainReason(error))")
        }
        roots = try TrustRoots(additionalPEM: options.tls.additionalTrustRootsPEM)
    }

    /// A handler for one connection to `host`:`port`; its verdict goes to `report`.
    func handler(host: String, port: Int, report: TLSReport) throws -> NIOSSLClientHandler {
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        return try NIOSSLClientHandler(
            context: context,
            // SNI carries names only, never an address (RFC 6066 §3).
            serverHostname: isAddress ? nil : host
        ) { [self] chain, promise in
            // Off the event loop: the first use loads and parses the system bundle.
            promise.completeWithTask {
                if let failure = await self.verdict(on: chain, host: host, port: port) {
                    report.fail(failure)
                    return .failed
                }
                return .certificateVerified
            }
        }
    }

    /// Nil when `chain` (leaf first) may be trusted for `host`:`port`: pins, then the roots, then the
    /// session's delegate, which may overrule the evaluation but never a pin. TCP's TLS and QUIC's
    /// (HTTP/3) judge a chain the same way.
    func verdict(on chain: [NIOSSLCertificate], host: String, port: Int) async -> TLSFailure? {
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        var verdict = await Self.verify(chain, host: host, isAddress: isAddress, settings: settings, roots: roots)
        if let evaluator, verdict?.isPinMismatch != true {
            let challenge = ServerTrustChallenge(
                host: host,
                port: port,
                certificateChain: chain.compactMap { try? Data($0.toDERBytes()) },
                defaultEvaluationFailure: verdict?.message
            )
            switch await evaluator(challenge) {
            case .performDefaultHandling: break
            case .trust: verdict = nil
            case .reject:
                verdict = TLSFailure(.serverCertificateUntrusted, "the session's delegate refused the certificate of \(host)")
            }
        }
        return verdict
    }

    /// ``verdict(on:host:port:)`` for a chain of DER certificates (QUIC's TLS hands them so).
    func verdict(onDER chain: [[UInt8]], host: String, port: Int) async -> TLSFailure? {
        let certificates = chain.compactMap { try? NIOSSLCertificate(bytes: $0, format: .der) }
        guard certificates.count == chain.count else {
            return TLSFailure(.serverCertificateUntrusted, "\(host) sent a certificate that cannot be parsed")
        }
        return await verdict(on: certificates, host: host, port: port)
    }

    /// Nil when the chain is acceptable; otherwise what is wrong with it.
    private static func verify(
        _ chain: [NIOSSLCertificate],
        host: String,
        isAddress: Bool,
        settings: TLSSettings,
        roots: TrustRoots
    ) async -> TLSFailure? {
        guard let leafNIO = chain.first else {
            return TLSFailure(.serverCertificateUntrusted, "\(host) sent no certificate")
        }
        if !settings.pinnedPublicKeys.isEmpty {
            let spki = (try? leafNIO.extractPublicKey().toSPKIBytes()) ?? []
            let digest = Data(SHA256.hash(data: spki)).base64EncodedString()
            guard settings.pinnedPublicKeys.contains(digest) else {
                var failure = TLSFailure(
                    .serverCertificateUntrusted,
                    "the public key of \(host)'s certificate (sha256//\(digest)) matches no pinned key"
                )
                failure.isPinMismatch = true
                return failure
            }
        }
        if settings.allowsUntrustedCertificates { return nil }
        let certificates: [Certificate]
        let encoded: [[UInt8]]
        do {
            encoded = try chain.map { try $0.toDERBytes() }
            certificates = try encoded.map { try Certificate(derEncoded: $0) }
        } catch {
            return TLSFailure(.serverCertificateUntrusted, "\(host) sent a certificate that cannot be parsed")
        }
        let leaf = certificates[0]
        let now = Date()
        func validates(against store: CertificateStore) async -> Bool {
            var verifier = Verifier(rootCertificates: store) {
                RFC5280Policy(validationTime: now)
                ServerIdentityPolicy(serverHostname: isAddress ? nil : host, serverIP: isAddress ? host : nil)
            }
            let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(certificates.dropFirst()))
            if case .validCertificate = result { return true }
            return false
        }
        // A chain issued by a root the caller added (curl's --cacert) is tried against those roots
        // alone first, as curl does: the system's bundle is not read for it (about 10 ms of a fresh
        // process's https request, perf). Refused there, it is tried against both.
        if let added = roots.addedStore(for: encoded), await validates(against: added) { return nil }
        if await validates(against: await roots.store(for: encoded)) { return nil }
        return describe(leaf, host: host, isAddress: isAddress, now: now)
    }

    /// Why `leaf` was refused, in plain words: validity first, then the name, then the issuer.
    static func describe(_ leaf: Certificate, host: String, isAddress: Bool, now: Date) -> TLSFailure {
        let day = Date.FormatStyle(date: .abbreviated, time: .omitted).locale(Locale(identifier: "en_US_POSIX"))
        if now > leaf.notValidAfter {
            return TLSFailure(
                .serverCertificateUntrusted,
                "the certificate of \(host) expired on \(leaf.notValidAfter.formatted(day))"
            )
        }
        if now < leaf.notValidBefore {
            return TLSFailure(
                .serverCertificateUntrusted,
                "the certificate of \(host) is not valid before \(leaf.notValidBefore.formatted(day)) (is this machine's clock right?)"
            )
        }
        let names = Self.names(of: leaf)
        if !Self.covers(names, host: host, isAddress: isAddress) {
            return TLSFailure(
                .serverCertificateUntrusted,
                "the certificate of \(host) does not name it; it is for "
                    + (names.isEmpty ? "no host name" : names.joined(separator: ", "))
            )
        }
        let issuer = leaf.issuer.description
        return TLSFailure(
            .serverCertificateUntrusted,
            "the certificate of \(host) is issued by \(issuer.isEmpty ? "an unnamed issuer" : issuer), which is not trusted; \(FerryError.trustTheIssuerHint)"
        )
    }

    /// Whether one of a certificate's names is `host` (RFC 6125: a `*` stands for one whole leftmost
    /// label, never for an address). Only to word a refusal: the verifier's policy decides.
    static func covers(_ names: [String], host: String, isAddress: Bool) -> Bool {
        let wanted = host.lowercased()
        for name in names.map({ $0.lowercased() }) {
            if name == wanted { return true }
            if isAddress, let a = try? SocketAddress(ipAddress: name, port: 0),
                let b = try? SocketAddress(ipAddress: wanted, port: 0), a.ipAddress == b.ipAddress
            {
                return true
            }
            if !isAddress, name.hasPrefix("*."), let dot = wanted.firstIndex(of: "."),
                wanted[dot...] == name.dropFirst(), wanted[..<dot].count > 0
            {
                return true
            }
        }
        return false
    }

    /// The DNS names and addresses a certificate is for.
    static func names(of certificate: Certificate) -> [String] {
        guard let names = try? certificate.extensions.subjectAlternativeNames else { return [] }
        return names.compactMap { name in
            switch name {
            case .dnsName(let dns): return dns
            case .ipAddress(let octets):
                let bytes = Array(octets.bytes)
                if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
                if bytes.count == 16 {
                    return stride(from: 0, to: 16, by: 2).map { String(format: "%x", Int(bytes[$0]) << 8 | Int(bytes[$0 + 1])) }
                        .joined(separator: ":")
                }
                return nil
            default: return nil
            }
        }
    }

    /// A TLS error without library internals: BoringSSL's reason names (WRONG_VERSION_NUMBER) as words.
    static func plainReason(_ error: any Error) -> String {
        let text = String(describing: error)
        var reasons: [String] = []
        var current = ""
        for character in text {
            if character.isUppercase || character == "_" || (character.isNumber && !current.isEmpty) {
                current.append(character)
            } else {
                if current.count >= 8, current.contains("_") { reasons.append(current) }
                current = ""
            }
        }
        if current.count >= 8, current.contains("_") { reasons.append(current) }
        let words = reasons.map { $0.lowercased().replacingOccurrences(of: "_", with: " ") }
        var seen = Set<String>()
        let unique = words.filter { seen.insert($0).inserted }
        return unique.isEmpty ? "the handshake failed" : unique.joined(separator: "; ")
    }

    /// True when a handshake error says the two sides share no protocol version.
    static func isVersionMismatch(_ error: any Error) -> Bool {
        let text = String(describing: error)
        return ["UNSUPPORTED_PROTOCOL", "PROTOCOL_VERSION", "NO_SUPPORTED_VERSIONS", "WRONG_VERSION_NUMBER"].contains {
            text.contains($0)
        }
    }

    static func nioVersion(_ version: SessionConfiguration.TLSVersion) -> TLSVersion {
        switch version {
        case .tlsv10: .tlsv1
        case .tlsv11: .tlsv11
        case .tlsv12: .tlsv12
        case .tlsv13: .tlsv13
        }
    }

    static func name(_ version: TLSVersion?) -> String? {
        switch version {
        case .tlsv1?: "TLSv1.0"
        case .tlsv11?: "TLSv1.1"
        case .tlsv12?: "TLSv1.2"
        case .tlsv13?: "TLSv1.3"
        default: nil
        }
    }
}

/// A refused certificate: the error's code and its plain-words reason.
struct TLSFailure: Sendable {
    let code: FerryError.Code
    let message: String
    /// A pin mismatch: final, whatever a delegate says.
    var isPinMismatch = false

    init(_ code: FerryError.Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// What one connection's verification found, read when its handshake fails.
final class TLSReport: Sendable {
    private let failure = NIOLockedValueBox<TLSFailure?>(nil)

    func fail(_ reason: TLSFailure) { failure.withLockedValue { $0 = reason } }

    var refusal: TLSFailure? { failure.withLockedValue { $0 } }
}

/// The blocks of a PEM text (`-----BEGIN LABEL-----` … `-----END LABEL-----`) whose label passes a test;
/// text between blocks is ignored, as OpenSSL ignores it.
enum PEMBlocks {
    static func find(in text: String, label wanted: (String) -> Bool) -> [String] {
        // Byte scanning: Foundation's range(of:) over a 200 KB system bundle took 13 % of a small
        // https download's CPU.
        let bytes = Array(text.utf8)
        let begin = Array("-----BEGIN ".utf8)
        let dashes = Array("-----".utf8)
        var found: [String] = []
        var index = 0
        func match(_ pattern: [UInt8], at position: Int) -> Bool {
            guard position + pattern.count <= bytes.count else { return false }
            for offset in 0..<pattern.count where bytes[position + offset] != pattern[offset] { return false }
            return true
        }
        func next(_ pattern: [UInt8], from start: Int) -> Int? {
            var position = start
            while position + pattern.count <= bytes.count {
                if bytes[position] == pattern[0], match(pattern, at: position) { return position }
                position += 1
            }
            return nil
        }
        while let start = next(begin, from: index) {
            let labelStart = start + begin.count
            guard let labelEnd = next(dashes, from: labelStart) else { break }
            let label = String(decoding: bytes[labelStart..<labelEnd], as: UTF8.self)
            let end = Array("-----END \(label)-----".utf8)
            guard let stop = next(end, from: labelEnd + dashes.count) else { break }
            if wanted(label) { found.append(String(decoding: bytes[start..<(stop + end.count)], as: UTF8.self)) }
            index = stop + end.count
        }
        return found
    }

    /// The DER bytes of a PEM block (nil when its body is not base64).
    static func der(of block: String) -> [UInt8]? {
        var block = block
        return block.withUTF8 { der(ofBytes: $0) }
    }

    /// ``der(of:)`` over the block's bytes: lines that start with `-` (the boundaries) and white space
    /// are skipped, the rest decoded as base64 in one pass. Bytes, not Characters (splitting by lines as
    /// Strings took 28 % of a one-request run), and no copy for Foundation's decoder (filtering the body
    /// and `Data(base64Encoded:)` were 10 % of a fresh https request that reads the system bundle, perf).
    static func der(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        base64Values.withUnsafeBufferPointer { values in
            var failed = false
            let decoded = [UInt8](unsafeUninitializedCapacity: bytes.count * 3 / 4 + 3) { output, written in
                var accumulated: UInt32 = 0
                var digits = 0
                var padding = 0
                var lineStart = true
                var boundaryLine = false
                for byte in bytes {
                    if byte == UInt8(ascii: "\n") {
                        lineStart = true
                        boundaryLine = false
                        continue
                    }
                    if lineStart {
                        lineStart = false
                        boundaryLine = byte == UInt8(ascii: "-")
                    }
                    if boundaryLine || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                        continue
                    }
                    if byte == UInt8(ascii: "=") {
                        padding += 1
                        continue
                    }
                    let value = values[Int(byte)]
                    // Not base64, or a digit after the padding.
                    guard value < 64, padding == 0 else {
                        failed = true
                        return
                    }
                    accumulated = accumulated << 6 | UInt32(value)
                    digits += 1
                    if digits == 4 {
                        output[written] = UInt8(truncatingIfNeeded: accumulated >> 16)
                        output[written + 1] = UInt8(truncatingIfNeeded: accumulated >> 8)
                        output[written + 2] = UInt8(truncatingIfNeeded: accumulated)
                        written += 3
                        accumulated = 0
                        digits = 0
                    }
                }
                // The last group: two digits and "==" make one byte, three and "=" two (as Foundation's
                // strict decoder, which wants the padding).
                switch (digits, padding) {
                case (0, 0):
                    break
                case (2, 2):
                    output[written] = UInt8(truncatingIfNeeded: accumulated >> 4)
                    written += 1
                case (3, 1):
                    output[written] = UInt8(truncatingIfNeeded: accumulated >> 10)
                    output[written + 1] = UInt8(truncatingIfNeeded: accumulated >> 2)
                    written += 2
                default:
                    failed = true
                }
            }
            return failed ? nil : decoded
        }
    }

    /// Each byte's base64 value (A–Z, a–z, 0–9, +, /), 255 for the others.
    private static let base64Values: [UInt8] = {
        var values = [UInt8](repeating: 255, count: 256)
        for (value, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            values[Int(byte)] = UInt8(value)
        }
        return values
    }()
}
