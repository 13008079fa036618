/// A single byte range of a representation, as requested by a `Range: bytes=...` header (RFC 9110 §14).
public struct ByteRange: Sendable, Hashable {
    /// The first byte's offset.
    public var start: Int64
    /// The offset one past the last byte.
    public var end: Int64
    /// The number of bytes in the range.
    public var count: Int64 { end - start }

    /// Creates the range `start ..< end`.
    public init(start: Int64, end: Int64) {
        precondition(0 <= start && start <= end, "a byte range runs forwards from 0")
        self.start = start
        self.end = end
    }

    /// The value of a `Content-Range` header for this range of a representation of `total` bytes.
    public func contentRange(total: Int64) -> String {
        "bytes \(start)-\(end - 1)/\(total)"
    }
}

/// What a `Range` header asks of a representation of a known length.
public enum RangeRequest: Sendable, Hashable {
    /// No usable Range header: serve the whole representation (RFC 9110 lets a server ignore a Range it
    /// does not understand, and one with several ranges, which this server does not serve).
    case whole
    /// One satisfiable range: serve 206 with Content-Range.
    case partial(ByteRange)
    /// A well-formed range that starts past the end: serve 416 with `Content-Range: bytes */length`.
    case unsatisfiable

    /// Interprets a Range header value for a representation of `length` bytes.
    public init(header: String?, length: Int64) {
        guard let header else {
            self = .whole
            return
        }
        let trimmed = header.trimmingSpaces
        guard trimmed.lowercased().hasPrefix("bytes=") else {
            self = .whole
            return
        }
        let spec = trimmed.dropFirst("bytes=".count).trimmingSpaces
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash].trimmingSpaces
        let last = spec[spec.index(after: dash)...].trimmingSpaces
        if first.isEmpty {
            // A suffix range: the last N bytes.
            guard let suffix = Int64(last), suffix >= 0 else {
                self = .whole
                return
            }
            guard suffix > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(ByteRange(start: max(0, length - suffix), end: length))
            return
        }
        guard let start = Int64(first), start >= 0 else {
            self = .whole
            return
        }
        var end = length
        if !last.isEmpty {
            guard let lastByte = Int64(last), lastByte >= start else {
                self = .whole
                return
            }
            end = lastByte >= length - 1 ? length : lastByte + 1  // no `lastByte + 1`: it may be Int64.max
        }
        guard start < length else {
            self = .unsatisfiable
            return
        }
        self = .partial(ByteRange(start: start, end: end))
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
