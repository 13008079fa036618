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
