import FerryCore
import Foundation
import SwiftASN1
import Synchronization
import X509

/// The certificates trusted: the system's (or `SSL_CERT_FILE`/`SSL_CERT_DIR`'s) and extra ones.
final class TrustRoots: Sendable {
    private let additional: [Certificate]
    /// The extra roots' subjects, as DER.
    private let additionalSubjects: Set<[UInt8]>
    /// Every root parsed, for a chain no root was found for by name.
    private let everything = Mutex<CertificateStore?>(nil)

    /// - Throws: ``FerryError`` when an extra root is not a PEM certificate.
    init(additionalPEM: [String]) throws {
        var certificates: [Certificate] = []
        for pem in additionalPEM {
            do {
                let parsed = try SystemTrustBundle.certificates(inPEM: pem)
                guard !parsed.isEmpty else { throw FerryError(.invalidOperation, "no certificate") }
                certificates += parsed
            } catch {
                throw FerryError(.invalidOperation, "an additional trust root is not a PEM certificate")
            }
        }
        additional = certificates
        additionalSubjects = Set(certificates.map { DERNames.encoded($0.subject) })
    }

    /// The extra roots alone, when one of them is named as the issuer of a certificate in `chain` (DER,
    /// leaf first); nil otherwise. Reads nothing from the system.
    func addedStore(for chain: [[UInt8]]) -> CertificateStore? {
        guard namesAnAddedRoot(Self.issuers(of: chain)) else { return nil }
        return CertificateStore(additional)
    }

    /// The issuers of the certificates in `chain` (DER), as DER-encoded Names.
    private static func issuers(of chain: [[UInt8]]) -> [[UInt8]] {
        chain.compactMap { DERNames.of(certificate: $0)?.issuer }
    }

    /// Whether one of `issuers` is the subject of an extra root.
    private func namesAnAddedRoot(_ issuers: [[UInt8]]) -> Bool {
        issuers.contains(where: additionalSubjects.contains)
    }

    /// The roots to verify `chain` (DER, leaf first) against: the extra ones, and the system's whose
    /// subject is the issuer of a certificate in the chain (the only ones that can anchor it). When the
    /// system has none by those names, all of them (a name may be encoded differently but equal).
    func store(for chain: [[UInt8]]) async -> CertificateStore {
        let issuers = Self.issuers(of: chain)
        var store = CertificateStore(additional)
        let named = await SystemTrustBundle.shared.roots(named: issuers)
        if !named.isEmpty || namesAnAddedRoot(issuers) {
            store.append(contentsOf: named)
            return store
        }
        if let all = everything.withLock({ $0 }) { return all }
        store.append(contentsOf: await SystemTrustBundle.shared.all())
        everything.withLock { $0 = store }
        return store
    }
}

/// The system's trust roots, read once per process: `SSL_CERT_FILE` if set (else the distribution's
/// bundle), and the certificates in `SSL_CERT_DIR`'s directories if set (OpenSSL's rules).
///
/// The files are read and indexed by subject name at first use, but a certificate is parsed only when a
/// chain names it as an issuer: parsing the 140 roots of a Debian bundle with swift-certificates (RSA
/// keys included) took about 25 ms of every process's first https request (perf), where OpenSSL (and so
/// curl) looks roots up by name as well.
actor SystemTrustBundle {
    static let shared = SystemTrustBundle()

    /// The texts of the first readable file of `files`, then of every file in `directories` (by name),
    /// as OpenSSL reads `SSL_CERT_FILE` and `SSL_CERT_DIR`.
    static func texts(firstOf files: [String], directories: [String]) -> [String] {
        var texts: [String] = []
        for path in files {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            texts.append(text)
            break
        }
        // Of a directory, the files OpenSSL looks roots up by: named by the subject's hash (`5ad8a5d6.0`).
        // Each is read once, whatever links lead to it. Debian's /etc/ssl/certs also holds every root
        // under its own name and the whole bundle: reading all 280 entries decoded each root three times
        // and was a fifth of a fresh https request (perf).
        var read = Set<String>()
        for directory in directories {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where isHashName(name) {
                let path = directory + "/" + name
                guard read.insert(URL(fileURLWithPath: path).resolvingSymlinksInPath().path).inserted,
                    let text = try? String(contentsOfFile: path, encoding: .utf8)
                else { continue }
                texts.append(text)
            }
        }
        return texts
    }

    /// Whether `name` is how OpenSSL's `c_rehash` names a certificate in a directory: eight lower-case hex
    /// digits, a dot and a number (`.r0` and the like are revocation lists).
    static func isHashName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 10, bytes[8] == UInt8(ascii: ".") else { return false }
        let hex = bytes[..<8].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
        return hex && bytes[9...].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The directories `SSL_CERT_DIR` names (separated by `:`), none when it is unset or empty.
    static func directories(_ environment: [String: String]) -> [String] {
        (environment["SSL_CERT_DIR"] ?? "").split(separator: ":").map(String.init)
    }

    /// Where distributions keep the bundle (the first that exists is read).
    static let bundlePaths = [
        "/etc/ssl/certs/ca-certificates.crt",  // Debian, Ubuntu, Arch, Alpine
        "/etc/pki/tls/certs/ca-bundle.crt",  // Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",  // openSUSE
        "/etc/ssl/cert.pem",  // Alpine, macOS
    ]

    /// The roots' DER by their subject's DER.
    private var index: [[UInt8]: [[UInt8]]]?
    private var parsed: [[UInt8]: [Certificate]] = [:]
    private var loaded: [Certificate]?

    /// The roots whose subject is one of `names` (DER-encoded Names).
    func roots(named names: [[UInt8]]) -> [Certificate] {
        let index = self.index ?? load()
        var found: [Certificate] = []
        for name in Set(names) {
            if let known = parsed[name] {
                found += known
                continue
            }
            let certificates = (index[name] ?? []).compactMap { try? Certificate(derEncoded: $0) }
            parsed[name] = certificates
            found += certificates
        }
        return found
    }

    /// Every root, parsed.
    func all() -> [Certificate] {
        if let loaded { return loaded }
        let index = self.index ?? load()
        let certificates = index.values.joined().compactMap { try? Certificate(derEncoded: $0) }
        loaded = certificates
        return certificates
    }

    private func load() -> [[UInt8]: [[UInt8]]] {
        let environment = ProcessInfo.processInfo.environment
        let files = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : [$0] } ?? Self.bundlePaths
        let texts = Self.texts(firstOf: files, directories: Self.directories(environment))
        var index: [[UInt8]: [[UInt8]]] = [:]
        for text in texts {
            for block in PEMBlocks.find(in: text, label: { $0 == "CERTIFICATE" }) {
                // A block that does not decode is skipped, as OpenSSL does; so is a root read twice (the
                // bundle and a directory's hash-named file hold the same one), found among those of its
                // subject (hashing every certificate's DER a byte at a time for a set was 4 % of a fresh
                // process's https request).
                guard let der = PEMBlocks.der(of: block), let subject = DERNames.of(certificate: der)?.subject,
                    index[subject]?.contains(der) != true
                else { continue }
                index[subject, default: []].append(der)
            }
        }
        self.index = index
        return index
    }

    /// Every certificate in a PEM text.
    /// - Throws: when a certificate block does not parse.
    static func certificates(inPEM text: String) throws -> [Certificate] {
        try PEMBlocks.find(in: text, label: { $0 == "CERTIFICATE" }).map { try Certificate(pemEncoded: $0) }
    }
}

/// The issuer and subject of a DER certificate, as the raw DER of their Names (RFC 5280 §4.1), read
/// without parsing the rest.
enum DERNames {
    static func of(certificate der: [UInt8]) -> (issuer: [UInt8], subject: [UInt8])? {
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
        //   signature, issuer, validity, subject, ... }, ... }
        guard let certificate = element(der, at: 0), certificate.tag == 0x30,
            let tbs = element(der, at: certificate.contentStart), tbs.tag == 0x30
        else { return nil }
        var position = tbs.contentStart
        if let version = element(der, at: position), version.tag == 0xA0 { position = version.end }
        // serialNumber, signature, issuer, validity, subject.
        var fields: [Range<Int>] = []
        while fields.count < 5, position < tbs.end, let field = element(der, at: position) {
            fields.append(position..<field.end)
            position = field.end
        }
        guard fields.count == 5 else { return nil }
        return (Array(der[fields[2]]), Array(der[fields[4]]))
    }

    /// A Name as DER, for comparing with ``of(certificate:)``'s.
    static func encoded(_ name: DistinguishedName) -> [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(name)
        return serializer.serializedBytes
    }

    /// The TLV at `index`: its tag, where its content starts, where it ends.
    private static func element(_ der: [UInt8], at index: Int) -> (tag: UInt8, contentStart: Int, end: Int)? {
        guard index + 2 <= der.count else { return nil }
        let tag = der[index]
        let first = Int(der[index + 1])
        var length = first
        var contentStart = index + 2
        if first & 0x80 != 0 {
            let count = first & 0x7F
            guard count >= 1, count <= 4, index + 2 + count <= der.count else { return nil }
            length = 0
            for offset in 0..<count { length = length << 8 | Int(der[index + 2 + offset]) }
            contentStart += count
        }
        guard contentStart + length <= der.count else { return nil }
        return (tag, contentStart, contentStart + length)
    }
}

/// The roots `SSL_CERT_FILE` and `SSL_CERT_DIR` name that the system bundle lacks, as PEM: what a
/// background task records of its creator's environment, as it records `--cacert`'s contents, so that
/// ferryd (started elsewhere, without those variables) trusts what the foreground trusts. Only the
/// certificates beyond the system's go (a bundle-plus-private-CA file would otherwise put 200 KB into
/// every task).
public enum EnvironmentTrustRoots {
    /// The extra roots of `environment` (empty without the variables).
    /// - Throws: ``FerryError`` with ``FerryError/Code/fileDoesNotExist`` when `SSL_CERT_FILE` names a
    ///   file that cannot be read.
    public static func additions(_ environment: [String: String]) throws -> [String] {
        // The system's own bundle and directory add nothing, and reading them cost a quarter of a second
        // of every `--background` on machines that set them (many do, for other tools).
        var texts: [String] = []
        if let file = environment["SSL_CERT_FILE"], !file.isEmpty,
            !Set(SystemTrustBundle.bundlePaths.map(resolved)).contains(resolved(file))
        {
            texts = SystemTrustBundle.texts(firstOf: [file], directories: [])
            guard !texts.isEmpty else {
                throw FerryError(.fileDoesNotExist, "SSL_CERT_FILE names \(file), which cannot be read")
            }
        }
        let directories = SystemTrustBundle.directories(environment).filter { !systemDirectories.contains(resolved($0)) }
        texts += SystemTrustBundle.texts(firstOf: [], directories: directories)
        guard !texts.isEmpty else { return [] }
        var known = Set<[UInt8]>()
        for text in SystemTrustBundle.texts(firstOf: SystemTrustBundle.bundlePaths, directories: []) {
            for block in PEMBlocks.find(in: text, label: { $0 == "CERTIFICATE" }) {
                if let der = PEMBlocks.der(of: block) { known.insert(der) }
            }
        }
        var found: [String] = []
        for text in texts {
            for block in PEMBlocks.find(in: text, label: { $0 == "CERTIFICATE" }) {
                guard let der = PEMBlocks.der(of: block), known.insert(der).inserted else { continue }
                found.append(block)
            }
        }
        return found
    }

    /// Where distributions keep the certificates their bundle is made from (OpenSSL's default directory).
    static let systemDirectories: Set<String> = ["/etc/ssl/certs", "/etc/pki/tls/certs"]

    /// `path` with its symbolic links resolved (as given when it cannot be).
    private static func resolved(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}
