import Crypto
public import Foundation
public import NIOSSL
import SwiftASN1
import X509

/// The TLS identity of the HTTPS listener: a certificate chain and key, and the root a client must trust.
public struct TestCertificates: Sendable {
    /// The server's chain in PEM, leaf first.
    public var chainPEM: String
    /// The leaf's private key in PEM.
    public var privateKeyPEM: String
    /// The certificate a client adds to its trust roots, in PEM (for a generated identity: the test CA).
    public var trustRootPEM: String

    /// The server's chain, leaf first.
    public var chain: [NIOSSLCertificate] {
        get throws { try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8)) }
    }

    /// The leaf's private key.
    public var privateKey: NIOSSLPrivateKey {
        get throws { try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem) }
    }

    /// A trust root for clients, ready for `TLSConfiguration.trustRoots = .certificates(...)`.
    public var trustRoot: NIOSSLCertificate {
        get throws { try NIOSSLCertificate(bytes: Array(trustRootPEM.utf8), format: .pem) }
    }

    /// Loads a PEM certificate chain and a PEM private key from files; the chain's last certificate is
    /// reported as the trust root.
    /// - Throws: ``TestServerError`` naming the file that is missing or not PEM.
    public static func load(certificateFile: String, keyFile: String) throws -> TestCertificates {
        func read(_ path: String, _ what: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw TestServerError("cannot read the \(what) file \(path)")
            }
            return text
        }
        let identity = TestCertificates(
            chainPEM: try read(certificateFile, "certificate"),
            privateKeyPEM: try read(keyFile, "private key"),
            trustRootPEM: ""
        )
        guard let last = (try? identity.chain)?.last else {
            throw TestServerError("no certificate in \(certificateFile): expected PEM 'BEGIN CERTIFICATE' blocks")
        }
        guard (try? identity.privateKey) != nil else {
            throw TestServerError("no private key in \(keyFile): expected a PEM 'PRIVATE KEY' block")
        }
        var loaded = identity
        loaded.trustRootPEM = try Certificate(derEncoded: try last.toDERBytes()).serializeAsPEM().pemString
        return loaded
    }

    /// Generates a throw-away certificate authority and a leaf it signs for `localhost` and `127.0.0.1`,
    /// valid from an hour ago for 30 days. P-256 keys keep generation fast (milliseconds).
    /// - Parameters:
    ///   - now: the moment the validity is counted from (a date 60 days ago makes an expired leaf).
    ///   - clientAuth: the leaf may also authenticate a client (mutual TLS), not only a server.
    public static func generate(now: Date = Date(), clientAuth: Bool = false) throws -> TestCertificates {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            CommonName("ferry-testserver test CA")
            OrganizationName("Ferry")
        }
        let ca = try issue(
            key: caKey,
            subject: caName,
            issuer: caName,
            signer: caKey,
            now: now,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
        )
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try issue(
            key: leafKey,
            subject: try DistinguishedName { CommonName("localhost") },
            issuer: caName,
            signer: caKey,
            now: now,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage(clientAuth ? [.serverAuth, .clientAuth] : [.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            }
        )
        let leafPEM = try leaf.serializeAsPEM().pemString
        let caPEM = try ca.serializeAsPEM().pemString
        return TestCertificates(
            chainPEM: leafPEM + "\n" + caPEM,
            privateKeyPEM: leafKey.pemRepresentation,
            trustRootPEM: caPEM
        )
    }

    /// A certificate for `key`, signed by `signer`, valid from an hour before `now` for 30 days.
    private static func issue(
        key: P256.Signing.PrivateKey,
        subject: DistinguishedName,
        issuer: DistinguishedName,
        signer: P256.Signing.PrivateKey,
        now: Date,
        extensions: Certificate.Extensions
    ) throws -> Certificate {
        try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 86_400),
            issuer: issuer,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(signer)
        )
    }
}
