import Crypto
import FerryCore
import Foundation

/// An expected digest given as `sha256=HEX` (`--checksum`).
public struct Checksum: Sendable, Hashable {
    /// The lower-case hex digest.
    public let hex: String

    /// Parses `sha256=HEX` (64 hex digits, any case); nil otherwise.
    public init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "sha256" else { return nil }
        let hex = parts[1].lowercased()
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        self.hex = hex
    }

    /// The SHA-256 of a file, read in 1 MiB pieces.
    /// - Throws: ``CLIFailure`` when the file cannot be read.
    public static func sha256(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIFailure("cannot read \(path) to check its checksum", status: .localFile)
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw CLIFailure("cannot read \(path) to check its checksum: \(error)", status: .localFile)
            }
            if chunk.isEmpty { break }
            hasher.update(data: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
