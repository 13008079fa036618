import FerryTestServer
import Foundation
import NIOSSL
import Testing
import X509

@testable import FerryEngine

/// Trust roots are indexed by subject and parsed only when a chain names them.
@Suite struct TrustRootsTests {
    @Test func namesAreReadFromTheDERWithoutParsingTheCertificate() throws {
        let certificates = try TestCertificates.generate()
        let leafDER = try certificates.chain[0].toDERBytes()
        let rootDER = try certificates.trustRoot.toDERBytes()
        let leaf = try Certificate(derEncoded: leafDER)
        let root = try Certificate(derEncoded: rootDER)
        let leafNames = try #require(DERNames.of(certificate: leafDER))
        let rootNames = try #require(DERNames.of(certificate: rootDER))
        // The same bytes swift-certificates would encode, and the chain links up by them.
        #expect(leafNames.issuer == DERNames.encoded(leaf.issuer))
        #expect(leafNames.subject == DERNames.encoded(leaf.subject))
        #expect(rootNames.subject == DERNames.encoded(root.subject))
        #expect(leafNames.issuer == rootNames.subject)
        // Not a certificate: nil, not a crash.
        #expect(DERNames.of(certificate: [0x30, 0x03, 0x02, 0x01, 0x01]) == nil)
        #expect(DERNames.of(certificate: Array(leafDER.prefix(40))) == nil)
        #expect(DERNames.of(certificate: []) == nil)
    }

    @Test func aPEMBlockDecodesToItsDER() throws {
        let certificates = try TestCertificates.generate()
        let block = try #require(PEMBlocks.find(in: certificates.trustRootPEM, label: { $0 == "CERTIFICATE" }).first)
        #expect(PEMBlocks.der(of: block) == (try certificates.trustRoot.toDERBytes()))
    }

    @Test func aPEMBodyDecodesAsFoundationsStrictBase64() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let base64 = Data(bytes).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            let block = "-----BEGIN CERTIFICATE-----\r\n\(base64)\n-----END CERTIFICATE-----\n"
            #expect(PEMBlocks.der(of: block) == bytes, "length \(length)")
        }
        // What Foundation's strict decoder refuses is refused: a byte outside the alphabet, a group
        // without its padding, a digit after the padding, a lone digit.
        for body in ["QUJD*A==", "QUJDRA", "QUJDRA=", "QQ==QQ==", "QUJDR"] {
            #expect(Data(base64Encoded: body) == nil, "\(body)")
            #expect(PEMBlocks.der(of: "-----BEGIN X-----\n\(body)\n-----END X-----") == nil, "\(body)")
        }
    }

    @Test func aDirectoryIsReadByItsHashNamesOnlyEachFileOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-certdir-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hashed = try TestCertificates.generate().trustRootPEM
        let unhashed = try TestCertificates.generate().trustRootPEM
        try hashed.write(toFile: directory + "/5ad8a5d6.0", atomically: true, encoding: .utf8)
        try unhashed.write(toFile: directory + "/my-root.pem", atomically: true, encoding: .utf8)
        // The same file under a second hash name (two names that hash alike, or a link): read once.
        try FileManager.default.createSymbolicLink(atPath: directory + "/5ad8a5d6.1", withDestinationPath: directory + "/5ad8a5d6.0")
        #expect(SystemTrustBundle.texts(firstOf: [], directories: [directory]) == [hashed])
        #expect(SystemTrustBundle.isHashName("5ad8a5d6.0") && SystemTrustBundle.isHashName("002c0b4f.12"))
        for name in ["5ad8a5d6.r0", "5AD8A5D6.0", "5ad8a5d.0", "5ad8a5d6.", "ca-certificates.crt", "5ad8a5d6.0.pem"] {
            #expect(!SystemTrustBundle.isHashName(name), "\(name)")
        }
    }

    @Test func aChainGetsTheExtraRootThatIssuedIt() async throws {
        let certificates = try TestCertificates.generate()
        let roots = try TrustRoots(additionalPEM: [certificates.trustRootPEM])
        let chain = try certificates.chain.map { try $0.toDERBytes() }
        let store = await roots.store(for: chain)
        let root = try Certificate(derEncoded: try certificates.trustRoot.toDERBytes())
        // Only that root: the system's roots were not all parsed for a chain one extra root anchors.
        #expect(store == CertificateStore([root]))
    }

    @Test func aChainAnExtraRootIssuedIsCheckedAgainstTheExtraRootsAlone() throws {
        let certificates = try TestCertificates.generate()
        let other = try TestCertificates.generate()
        let roots = try TrustRoots(additionalPEM: [certificates.trustRootPEM, other.trustRootPEM])
        let chain = try certificates.chain.map { try $0.toDERBytes() }
        let added = try #require(roots.addedStore(for: chain))
        let expected = try [certificates, other].map { try Certificate(derEncoded: try $0.trustRoot.toDERBytes()) }
        #expect(added == CertificateStore(expected))
        // A chain no extra root is named in gets no such store (the system's roots are looked up): the
        // leaf as the only extra root names "localhost", which issued nothing here.
        let leafPEM = try Certificate(derEncoded: chain[0]).serializeAsPEM().pemString
        #expect(try TrustRoots(additionalPEM: [leafPEM]).addedStore(for: chain) == nil)
        #expect(try TrustRoots(additionalPEM: []).addedStore(for: chain) == nil)
    }
}
