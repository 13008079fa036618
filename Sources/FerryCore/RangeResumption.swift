/// Continuing a download at an offset: the request headers that make it safe (RFC 9110 §14.2, §13.1.5),
/// and the judgement of the server's answer, so that a file is never a mix of two versions, never holds
/// an error page, and never has bytes at the wrong place (SPEC S5.3, S5.5).
public struct RangeResumption: Sendable, Hashable {
    /// Bytes already on disk; the first byte to ask for.
    public let offset: Int64
    /// The total length the first response announced, if any.
    public let expectedLength: Int64?
    /// The validator sent in If-Range: the strong entity tag, else Last-Modified.
    public let validator: String?

    /// Plans a continuation from resume data's fields.
    /// - Parameters:
    ///   - offset: bytes already received.
    ///   - expectedLength: the whole length, if known.
    ///   - entityTag: the entity tag seen; a weak one (`W/"..."`) cannot guard a range and is ignored.
    ///   - lastModified: the Last-Modified seen, used when there is no strong entity tag.
    public init(offset: Int64, expectedLength: Int64?, entityTag: String?, lastModified: String?) {
        self.offset = offset
        self.expectedLength = expectedLength
        self.validator = Self.validator(entityTag: entityTag, lastModified: lastModified)
    }

    /// The validator that can guard a range: the entity tag when it is strong, else Last-Modified; nil
    /// when there is none, and then a download cannot be continued safely.
    public static func validator(entityTag: String?, lastModified: String?) -> String? {
        if let entityTag, !entityTag.hasPrefix("W/") { return entityTag }
        return lastModified
    }

    /// Whether asking for a range is safe: there are bytes to keep and a validator to guard them. If not,
    /// the download starts over from byte 0 (the old bytes could belong to another version).
    public var canResume: Bool { offset > 0 && validator != nil }

    /// The headers to add to the request: `Range: bytes=offset-` and `If-Range`; none when
    /// ``canResume`` is false.
    public var requestHeaders: [(name: String, value: String)] {
        guard canResume, let validator else { return [] }
        return [("Range", "bytes=\(offset)-"), ("If-Range", validator)]
    }

    /// What to do with the response to a ranged request.
    public enum Decision: Sendable, Hashable {
        /// 206 for exactly our offset: append the body at ``RangeResumption/offset``; the whole
        /// resource is `totalLength` bytes when known.
        case append(totalLength: Int64?)
        /// 200: the body is the whole resource (a new version, or a server that ignores Range):
        /// truncate the file and write from 0; report didResumeAtOffset(0).
        case startOver(reason: String)
        /// The answer cannot be trusted (a Content-Range for other bytes, 416, a 206 that contradicts the
        /// validators): discard the partial data and ask again without Range.
        case discardAndRefetch(reason: String)
        /// An HTTP error (not 2xx): keep the partial data for a later attempt; the task fails.
        case httpError(status: Int)
    }

    /// Judges the response to a request sent with ``requestHeaders``.
    public func judge(status: Int, headers: Headers) -> Decision {
        switch status {
        case 206:
            return judgePartial(headers)
        case 200:
            return .startOver(reason: wholeResourceReason(headers))
        case 416:
            return .discardAndRefetch(reason: refusedRangeReason(headers))
        case 201...299:
            return .discardAndRefetch(reason: "unexpected status \(status) to a range request")
        default:
            return .httpError(status: status)
        }
    }

    /// Why a 200 answered the range, as far as its validators tell: the same version (the server does
    /// not continue downloads), another version, or no way to know.
    func wholeResourceReason(_ headers: Headers) -> String {
        let (etag, lastModified) = (headers["etag"], headers["last-modified"])
        if let validator {
            if validator == etag || validator == lastModified {
                return "the server sent the whole file again, the same version (it does not continue downloads)"
            }
            if validator.hasPrefix("\""), let etag { return "the server's file changed (ETag \(etag), was \(validator))" }
            if !validator.hasPrefix("\""), etag == nil, let lastModified {
                return "the server's file changed (modified \(lastModified), was \(validator))"
            }
        }
        return "the server sent the whole file again (it ignores ranges, or its file changed)"
    }

    /// Why a 416 answered the range, with the length the server gives (`Content-Range: bytes */N`).
    func refusedRangeReason(_ headers: Headers) -> String {
        let prefix = "the server refused the range (416)"
        guard let value = headers["content-range"]?.trimmingBlanks(), value.lowercased().hasPrefix("bytes */"),
            let length = Int64(value.dropFirst("bytes */".count))
        else { return prefix }
        if length < offset {
            return prefix + ": its file is \(length) bytes, shorter than the \(offset) already received"
        }
        return prefix + ": its file is \(length) bytes and \(offset) were already received"
    }

    private func judgePartial(_ headers: Headers) -> Decision {
        if let contentType = headers["content-type"], contentType.lowercased().hasPrefix("multipart/byteranges") {
            return .discardAndRefetch(reason: "the server sent several ranges (multipart/byteranges)")
        }
        guard let header = headers["content-range"], let range = ContentRange(header) else {
            return .discardAndRefetch(reason: "a 206 without a usable Content-Range")
        }
        guard range.first == offset else {
            return .discardAndRefetch(
                reason: "the server sent bytes from \(range.first), but the download continues at \(offset)"
            )
        }
        if let expectedLength, let total = range.total, total != expectedLength {
            return .discardAndRefetch(reason: "the resource's length changed from \(expectedLength) to \(total)")
        }
        if let validator, validator.hasPrefix("\""), let etag = headers["etag"], etag != validator {
            return .discardAndRefetch(reason: "a 206 with another entity tag (\(etag)) than asked for (\(validator))")
        }
        if let length = headers.contentLength, length != range.last - range.first + 1 {
            return .discardAndRefetch(reason: "Content-Length \(length) does not match the Content-Range")
        }
        return .append(totalLength: range.total ?? expectedLength)
    }
}

/// A parsed `Content-Range: bytes first-last/total` (total may be `*`).
public struct ContentRange: Sendable, Hashable {
    /// The first byte's offset.
    public var first: Int64
    /// The last byte's offset (inclusive).
    public var last: Int64
    /// The whole length, nil for `*`.
    public var total: Int64?

    /// Parses a Content-Range value; nil when malformed or inconsistent (last before first, last past total).
    public init?(_ value: String) {
        let trimmed = value.trimmingBlanks()
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count).trimmingBlanks()
        let parts = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first
        else { return nil }
        var total: Int64?
        if parts[1] != "*" {
            guard let value = Int64(parts[1]), value > last else { return nil }
            total = value
        }
        self.first = first
        self.last = last
        self.total = total
    }
}

extension StringProtocol {
    fileprivate func trimmingBlanks() -> String {
        let set: Set<Character> = [" ", "\t"]
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}
