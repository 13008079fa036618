import Crypto
import MultipartKit
import NIOCore

/// What the server learned from a request body.
struct BodySummary {
    /// Bytes received.
    var length: Int64 = 0
    /// Lower-case hex SHA-256 of the bytes received.
    var sha256 = ""
    /// The bytes, when the request asked to keep them and they fit.
    var kept: [UInt8]?
    /// The request asked to keep the body but it exceeded ``HashingSink/keepLimit``.
    var keepOverflow = false
    /// The parts of a multipart/form-data body, in order.
    var parts: [MultipartPartSummary] = []
    /// Why the body could not be parsed, for a multipart request.
    var parseError: String?
}

/// One part of a multipart/form-data body as received.
struct MultipartPartSummary: Codable, Hashable {
    var name: String?
    var filename: String?
    var contentType: String?
    var headers: [String: String]
    var length: Int64
    var sha256: String
    /// The part's content when it is short UTF-8 text (at most 1 KiB), for form fields.
    var text: String?
}

/// Consumes a request body as it arrives, without holding it unless asked.
protocol RequestBodySink: AnyObject {
    func consume(_ buffer: ByteBuffer)
    func finish() -> BodySummary
}

/// Counts and hashes a body; keeps the bytes (up to ``keepLimit``) when asked.
final class HashingSink: RequestBodySink {
    /// The largest body kept in memory for `keep=KEY`.
    static let keepLimit = 256 * 1024 * 1024

    private var hasher = SHA256()
    private var length: Int64 = 0
    private var kept: [UInt8]?
    private var overflow = false

    init(keep: Bool) {
        self.kept = keep ? [] : nil
    }

    func consume(_ buffer: ByteBuffer) {
        length += Int64(buffer.readableBytes)
        buffer.withUnsafeReadableBytes { bytes in
            hasher.update(bufferPointer: bytes)
            if kept != nil {
                if kept!.count + bytes.count <= Self.keepLimit {
                    kept!.append(contentsOf: bytes)
                } else {
                    kept = nil
                    overflow = true
                }
            }
        }
    }

    func finish() -> BodySummary {
        BodySummary(length: length, sha256: hasher.finalize().hexString, kept: kept, keepOverflow: overflow)
    }
}

/// Parses a multipart/form-data body as it streams in (multipart-kit's parser), hashing each part.
final class MultipartSink: RequestBodySink {
    private let whole = HashingSink(keep: false)
    private let parser: MultipartParser
    private var parts: [MultipartPartSummary] = []
    private var headers: [(String, String)] = []
    private var hasher = SHA256()
    private var length: Int64 = 0
    private var prefix: [UInt8] = []
    private var error: String?

    init(boundary: String) {
        self.parser = MultipartParser(boundary: boundary)
        parser.onHeader = { [unowned self] name, value in self.headers.append((name, value)) }
        parser.onBody = { [unowned self] buffer in
            self.length += Int64(buffer.readableBytes)
            buffer.withUnsafeReadableBytes { bytes in
                self.hasher.update(bufferPointer: bytes)
                if self.prefix.count <= 1024 { self.prefix.append(contentsOf: bytes.prefix(1025 - self.prefix.count)) }
            }
        }
        parser.onPartComplete = { [unowned self] in self.completePart() }
    }

    private func completePart() {
        var fields: [String: String] = [:]
        for (name, value) in headers { fields[name.lowercased()] = value }
        let disposition = fields["content-disposition"].map(Self.dispositionParameters) ?? [:]
        let text = prefix.count <= 1024 ? String(validating: prefix, as: UTF8.self) : nil
        parts.append(
            MultipartPartSummary(
                name: disposition["name"],
                filename: disposition["filename"],
                contentType: fields["content-type"],
                headers: fields,
                length: length,
                sha256: hasher.finalize().hexString,
                text: text
            )
        )
        headers = []
        hasher = SHA256()
        length = 0
        prefix = []
    }

    /// The parameters of a Content-Disposition value (`form-data; name="a"; filename="b.txt"`).
    static func dispositionParameters(_ value: String) -> [String: String] {
        var result: [String: String] = [:]
        for piece in value.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            var parameterValue = pair[1].trimmingSpaces
            if parameterValue.hasPrefix("\""), parameterValue.hasSuffix("\""), parameterValue.count >= 2 {
                parameterValue = String(parameterValue.dropFirst().dropLast())
            }
            result[pair[0].trimmingSpaces.lowercased()] = parameterValue
        }
        return result
    }

    func consume(_ buffer: ByteBuffer) {
        whole.consume(buffer)
        guard error == nil else { return }
        do {
            try parser.execute(buffer)
        } catch {
            self.error = "malformed multipart body: \(error)"
        }
    }

    func finish() -> BodySummary {
        var summary = whole.finish()
        summary.parts = parts
        summary.parseError = error ?? (parts.isEmpty ? "no complete part in the multipart body" : nil)
        return summary
    }
}
