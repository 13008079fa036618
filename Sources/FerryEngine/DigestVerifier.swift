import Crypto
public import FerryCore
public import Foundation
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Computes and checks the digest of a downloaded file (SPEC S10.3), reading it back in 1 MiB pieces on a
/// pool thread: a segmented download's bytes arrive out of order, so the file is the one place they are
/// in order, and reading it back also proves what is on disk.
public enum DigestVerifier {
    /// The digest of the file at `path`, lower-case hex.
    /// - Throws: ``FerryError`` with ``FerryError/Code/cannotWriteToFile`` when the file cannot be read.
    public static func digest(ofFile path: String, algorithm: ContentDigest.Algorithm) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive {
            switch algorithm {
            case .sha256: try hash(path, SHA256())
            case .sha384: try hash(path, SHA384())
            case .sha512: try hash(path, SHA512())
            case .sha1: try hash(path, Insecure.SHA1())
            case .md5: try hash(path, Insecure.MD5())
            }
        }
    }

    /// Checks that the file at `path` has the `expected` digest.
    /// - Throws: ``FerryError`` with ``FerryError/Code/checksumMismatch`` naming both digests and the
    ///   file, which is left in place for inspection.
    public static func verify(file path: String, expected: ContentDigest, url: URL) async throws {
        let actual = try await digest(ofFile: path, algorithm: expected.algorithm)
        guard actual == expected.hex else {
            throw FerryError(
                .checksumMismatch,
                "the download's \(expected.algorithm.rawValue) is \(actual), not the expected \(expected.hex); the bytes are kept in \(path) for inspection",
                failingURL: url.absoluteString
            )
        }
    }

    private static func hash<Function: HashFunction>(_ path: String, _ function: Function) throws -> String {
        var function = function
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FerryError(.cannotWriteToFile, "cannot read \(path) to check its digest: \(FileSink.reason(errno))")
        }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw FerryError(
                    .cannotWriteToFile,
                    "cannot read \(path) to check its digest: \(FileSink.reason(errno))"
                )
            }
            if count == 0 { break }
            function.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        return function.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
