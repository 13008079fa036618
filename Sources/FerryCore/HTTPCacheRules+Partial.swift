public import Foundation

/// Partial content in the cache (RFC 9111 §3.3, §3.4): a 206 is stored as the part it is, parts of one
/// representation (one strong entity tag) are combined, a complete combination becomes the 200 it
/// adds up to, and a Range request is answered from a complete stored response or a part that holds it.
extension HTTPCacheRules {
    /// The part a stored 206 holds: its bytes' place and the representation's length.
    public static func storedPart(_ stored: CachedResponse) -> (range: ClosedRange<Int64>, total: Int64)? {
        guard stored.statusCode == 206, let range = stored.headers["content-range"].flatMap(ContentRange.init),
            let total = range.total, range.last - range.first + 1 == Int64(stored.data.count)
        else { return nil }
        return (range.first...range.last, total)
    }

    /// The one byte range `header` asks for (`bytes=a-b`, `bytes=a-`, `bytes=-n`) within a
    /// representation of `length` bytes; nil for several ranges, another unit, or none satisfiable.
    public static func byteRange(_ header: String, length: Int64) -> ClosedRange<Int64>? {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), length > 0 else { return nil }
        let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let (first, last) = (spec[..<dash], spec[spec.index(after: dash)...])
        if first.isEmpty {
            guard let suffix = Int64(last), suffix > 0 else { return nil }
            return max(0, length - suffix)...(length - 1)
        }
        guard let start = Int64(first), start < length else { return nil }
        if last.isEmpty { return start...(length - 1) }
        guard let end = Int64(last), end >= start else { return nil }
        return start...min(end, length - 1)
    }

    /// What to do for a request with a Range: answered from a usable complete response, or a usable part
    /// that holds the range, when its If-Range (if any) names the stored entity tag; otherwise sent as
    /// it is (and its 206 stored, combined with what is there).
    static func partialDecision(
        requestHeaders: Headers,
        policy: Request.CachePolicy,
        stored candidates: [CachedResponse],
        now: Date
    ) -> Decision {
        guard let header = requestHeaders["range"],
            !["if-match", "if-unmodified-since", "if-none-match", "if-modified-since"].contains(where: { requestHeaders[$0] != nil })
        else { return .network }
        let request = CacheControl(requestHeaders)
        let pragmaNoCache = pragmaNoCache(requestHeaders)
        func usable(_ stored: CachedResponse) -> Bool {
            if let ifRange = requestHeaders["if-range"], ifRange != stored.headers["etag"] || ifRange.hasPrefix("W/") { return false }
            if policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad { return true }
            let response = CacheControl(stored.headers)
            guard !request.noCache, !pragmaNoCache, !response.noCache else { return false }
            return isUsable(stored, request: request, response: response, now: now)
        }
        let matching = candidates.filter { varyMatches($0, requestHeaders: requestHeaders) }.sorted { $0.responseDate > $1.responseDate }
        for stored in matching where usable(stored) {
            if stored.statusCode == 200, let range = byteRange(header, length: Int64(stored.data.count)) {
                return .partialContent(stored, range)
            }
            if let part = storedPart(stored), let range = byteRange(header, length: part.total),
                part.range.contains(range.lowerBound), part.range.contains(range.upperBound)
            {
                return .partialContent(stored, range)
            }
        }
        if request.onlyIfCached { return .gatewayTimeout }
        return policy == .returnCacheDataDontLoad ? .unavailable : .network
    }

    /// `new` (a stored 206) combined with `old`, a stored part of the same representation (the same
    /// strong entity tag and length) that it overlaps or adjoins (§3.4): one part covering both, with
    /// `new`'s fields; the complete 200 when it covers the whole representation. Nil when they cannot
    /// be combined (then `new` is stored alone).
    public static func combine(_ old: CachedResponse, with new: CachedResponse) -> CachedResponse? {
        guard let a = storedPart(old), let b = storedPart(new), a.total == b.total,
            let etag = new.headers["etag"], !etag.hasPrefix("W/"), old.headers["etag"] == etag,
            a.range.lowerBound <= b.range.upperBound + 1, b.range.lowerBound <= a.range.upperBound + 1
        else { return nil }
        let first = min(a.range.lowerBound, b.range.lowerBound)
        let last = max(a.range.upperBound, b.range.upperBound)
        var data = Data(count: Int(last - first + 1))
        for (part, bytes) in [(a.range, old.data), (b.range, new.data)] {
            let offset = Int(part.lowerBound - first)
            data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        }
        var combined = new
        combined.data = data
        combined.headers["content-length"] = String(data.count)
        if first == 0, last == a.total - 1 {
            combined.statusCode = 200
            combined.headers["content-range"] = nil
        } else {
            combined.headers["content-range"] = "bytes \(first)-\(last)/\(a.total)"
        }
        return combined
    }
}
