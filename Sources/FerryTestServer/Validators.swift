import FerryCore

/// The validators of one version of a resource (RFC 9110 §8.8).
public struct Validators: Sendable, Hashable {
    /// A strong entity tag, quotes included, e.g. `"bytes-100-7-v0"`.
    public var etag: String
    /// The last modification time, seconds since the epoch.
    public var lastModified: Int64

    /// Creates validators.
    public init(etag: String, lastModified: Int64) {
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// The outcome of evaluating a request's preconditions and Range against a resource (RFC 9110 §13.2.2).
public enum ConditionalOutcome: Sendable, Hashable {
    /// 304 Not Modified (If-None-Match or If-Modified-Since said the client's copy is current).
    case notModified
    /// 200 with the whole representation (no Range, an If-Range that no longer matches, or a Range the
    /// server does not serve).
    case whole
    /// 206 with this range.
    case partial(ByteRange)
    /// 416 Range Not Satisfiable.
    case unsatisfiable

    /// Evaluates the conditional headers of a GET or HEAD.
    /// - Parameters:
    ///   - ifNoneMatch: the If-None-Match value, if any.
    ///   - ifModifiedSince: the If-Modified-Since value, if any (ignored when If-None-Match is present).
    ///   - range: the Range value, if any.
    ///   - ifRange: the If-Range value, if any: an entity tag (strong comparison) or an HTTP date (exact).
    ///   - validators: the current version's validators.
    ///   - length: the representation's length.
    public init(
        ifNoneMatch: String?,
        ifModifiedSince: String?,
        range: String?,
        ifRange: String?,
        validators: Validators,
        length: Int64
    ) {
        if let ifNoneMatch {
            if Self.anyTagMatches(ifNoneMatch, validators.etag, weak: true) {
                self = .notModified
                return
            }
        } else if let ifModifiedSince, let since = HTTPDate.parse(ifModifiedSince),
            validators.lastModified <= since
        {
            self = .notModified
            return
        }
        guard let range else {
            self = .whole
            return
        }
        if let ifRange, !Self.ifRangeHolds(ifRange.trimmingSpaces, validators) {
            self = .whole
            return
        }
        switch RangeRequest(header: range, length: length) {
        case .whole: self = .whole
        case .partial(let byteRange): self = .partial(byteRange)
        case .unsatisfiable: self = .unsatisfiable
        }
    }

    private static func ifRangeHolds(_ value: String, _ validators: Validators) -> Bool {
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            // RFC 9110 §13.1.5: a strong comparison; a weak tag never matches.
            return value == validators.etag && !value.hasPrefix("W/")
        }
        guard let date = HTTPDate.parse(value) else { return false }
        return date == validators.lastModified
    }

    private static func anyTagMatches(_ list: String, _ etag: String, weak: Bool) -> Bool {
        func opaque(_ tag: String) -> String { tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
        for candidate in list.split(separator: ",").map({ $0.trimmingSpaces }) {
            if candidate == "*" { return true }
            if weak ? opaque(candidate) == opaque(etag) : candidate == etag { return true }
        }
        return false
    }
}
