public import Foundation

/// RFC 9111's rules for a private cache, as pure functions of the messages and the time: whether a
/// response may be stored, how fresh a stored one is, what to do for a request (serve, validate, load,
/// or fail), how a 304 updates an entry, and what an unsafe request invalidates. No I/O; the clock is a
/// parameter. `ResponseCache` (FerryEngine) stores entries and ``SessionTransport`` applies these.
public enum HTTPCacheRules {
    /// What to do for a request.
    public enum Decision: Sendable, Hashable {
        /// Serve this stored response without asking the server.
        case useStored(CachedResponse)
        /// Serve this stale response at once (within its `stale-while-revalidate`), and revalidate it in
        /// the background with these conditional fields (RFC 5861 §3).
        case useStale(CachedResponse, conditions: Headers)
        /// The request's own conditions (If-None-Match, If-Modified-Since) hold for this fresh stored
        /// response: answer 304 from it (RFC 9111 §4.3.2).
        case notModified(CachedResponse)
        /// Ask the server whether this stored response is still good, with these conditional fields
        /// (If-None-Match, If-Modified-Since); a 304 means serve it, updated.
        case validate(CachedResponse, conditions: Headers)
        /// Send the request as it is; the cache has nothing usable.
        case network
        /// Fail: the request's cache policy (`returnCacheDataDontLoad`) allows only the cache and nothing
        /// stored answers it.
        case unavailable
        /// Answer 504: the request said `only-if-cached` and nothing stored answers it (§5.2.1.7).
        case gatewayTimeout
        /// Answer the request's Range from this stored response (complete, or a part that holds the
        /// range): a 206 with these bytes of the representation.
        case partialContent(CachedResponse, ClosedRange<Int64>)
    }

    /// Statuses a `stale-if-error` response may stand in for (RFC 5861 §4).
    public static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    /// Statuses whose caching rules this cache implements: a `must-understand` response with another is
    /// not stored (RFC 9111 §5.2.2.3).
    public static let understoodStatuses: Set<Int> = heuristicallyCacheable.union([302, 303, 307])

    /// Fields never stored (§3.1): the connection's own, and the proxy's authentication.
    public static let unstoredFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]

    /// Status codes a response may be stored with on heuristic freshness alone (RFC 9110 §15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The key a URL's entries are stored under: the URL without its fragment.
    public static func key(for url: URL) -> String {
        let text = url.absoluteString
        guard let hash = text.firstIndex(of: "#") else { return text }
        return String(text[..<hash])
    }

    /// Where a response to `method` with `requestHeaders` may be kept (RFC 9111 §3), for a private cache.
    /// `.notAllowed` for anything but GET; for a `no-store` request or response; for `Vary: *`; for a
    /// status that is not final, or is 304; for a 206 that is not one part of a representation with a
    /// strong entity tag (``storedPart(_:)``: parts are combined by it, §3.4); and for a response with
    /// neither explicit freshness nor a heuristically cacheable status.
    public static func storagePolicy(
        method: String,
        requestHeaders: Headers,
        statusCode: Int,
        responseHeaders: Headers
    ) -> CachedResponse.StoragePolicy {
        guard method.uppercased() == "GET", statusCode >= 200, statusCode != 304 else { return .notAllowed }
        if statusCode == 206 {
            guard let etag = responseHeaders["etag"], !etag.hasPrefix("W/"),
                let range = responseHeaders["content-range"].flatMap(ContentRange.init), range.total != nil
            else { return .notAllowed }
        }
        let response = CacheControl(responseHeaders)
        guard !CacheControl(requestHeaders).noStore else { return .notAllowed }
        // must-understand: stored only for a status the cache knows, and then despite no-store.
        if response.mustUnderstand {
            guard understoodStatuses.contains(statusCode) else { return .notAllowed }
        } else if response.noStore {
            return .notAllowed
        }
        guard varyNames(responseHeaders) != nil else { return .notAllowed }
        let explicit =
            response.maxAge != nil || response.isPublic || response.isPrivate || response.has("s-maxage")
            || responseHeaders["expires"] != nil
        guard explicit || heuristicallyCacheable.contains(statusCode) else { return .notAllowed }
        return .allowed
    }

    /// The lower-case field names `Vary` lists; nil for `Vary: *` (a response that matches no request).
    public static func varyNames(_ headers: Headers) -> [String]? {
        var names: [String] = []
        for value in headers.values("vary") {
            for name in value.split(separator: ",") {
                let trimmed = name.trimmingCharacters(in: .whitespaces).lowercased()
                if trimmed == "*" { return nil }
                if !trimmed.isEmpty, !names.contains(trimmed) { names.append(trimmed) }
            }
        }
        return names
    }

    /// The request's values of the fields the response's `Vary` names, for ``CachedResponse/varyValues``;
    /// nil for `Vary: *`. Normalised as RFC 9111 §4.1 allows (``VaryValue``): values that mean the same
    /// compare equal.
    public static func varyValues(requestHeaders: Headers, responseHeaders: Headers) -> [String: String]? {
        guard let names = varyNames(responseHeaders) else { return nil }
        var values: [String: String] = [:]
        for name in names {
            let fields = requestHeaders.values(name)
            guard !fields.isEmpty else { continue }
            values[name] = VaryValue.normalized(name: name, fields: fields)
        }
        return values
    }

    /// `headers` as a cache may store them (§3.1, §5.2.2.4): without the connection's own fields, those
    /// `Connection` names, the proxy's authentication, and those a qualified `no-cache` names.
    public static func storable(_ headers: Headers) -> Headers {
        var dropped = unstoredFields
        for value in headers.values("connection") {
            for name in value.split(separator: ",") { dropped.insert(name.trimmingCharacters(in: .whitespaces).lowercased()) }
        }
        dropped.formUnion(CacheControl(headers).noCacheFields)
        var kept = Headers()
        for field in headers.fields where !dropped.contains(field.name.lowercased()) {
            kept.add(name: field.name, value: field.value)
        }
        return kept
    }

    /// Whether `stored` was fetched with the same values, for the fields its `Vary` names, as `requestHeaders`.
    public static func varyMatches(_ stored: CachedResponse, requestHeaders: Headers) -> Bool {
        varyValues(requestHeaders: requestHeaders, responseHeaders: stored.headers) == stored.varyValues
    }

    /// How long `stored` stays fresh after it was generated (RFC 9111 §4.2.1): `max-age`, else `Expires`
    /// minus `Date` (an unparsable `Expires` means already stale), else 10 % of the time since
    /// `Last-Modified` for a heuristically cacheable status, else zero.
    public static func freshnessLifetime(_ stored: CachedResponse) -> TimeInterval {
        let control = CacheControl(stored.headers)
        if let maxAge = control.maxAge { return TimeInterval(maxAge) }
        let date = dateValue(stored)
        let expires = stored.headers.values("expires")
        if !expires.isEmpty {
            // Two Expires fields, or one that is not an HTTP date: already expired (§5.3).
            guard expires.count == 1, let expiry = HTTPDate.date(expires[0]) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        if heuristicallyCacheable.contains(stored.statusCode), let lastModified = stored.headers["last-modified"],
            let modified = HTTPDate.date(lastModified), modified < date
        {
            return date.timeIntervalSince(modified) / 10
        }
        return 0
    }

    /// The age of `stored` at `now` (RFC 9111 §4.2.3): the server's `Age` plus the request's round trip,
    /// or the apparent age by `Date`, whichever is larger, plus the time since it arrived.
    public static func currentAge(_ stored: CachedResponse, now: Date) -> TimeInterval {
        let apparent = max(0, stored.responseDate.timeIntervalSince(dateValue(stored)))
        let ageValue = ageField(stored.headers).map(TimeInterval.init) ?? 0
        let delay = max(0, stored.responseDate.timeIntervalSince(stored.requestDate))
        let initial = max(apparent, ageValue + delay)
        return initial + max(0, now.timeIntervalSince(stored.responseDate))
    }

    /// The `Age` a response carries (§5.1): the first member of the first field; nil when absent or
    /// not delta-seconds (then ignored).
    public static func ageField(_ headers: Headers) -> Int? {
        guard let first = headers.values("age").first?.split(separator: ",", omittingEmptySubsequences: false).first else {
            return nil
        }
        return CacheControl.deltaSeconds(String(first))
    }

    /// What to do for a GET (or a HEAD, answered from stored GETs) with `requestHeaders` under `policy`,
    /// given the entries stored for its URL.
    ///
    /// - `reloadIgnoringLocalCacheData`: always the network.
    /// - `returnCacheDataElseLoad` / `returnCacheDataDontLoad`: a matching entry whatever its age; none:
    ///   the network, or unavailable.
    /// - `useProtocolCachePolicy`: RFC 9111 §4 with the request's own directives (`no-cache` and
    ///   `Pragma: no-cache`, `max-age`, `min-fresh`, `max-stale`, `only-if-cached`) and RFC 5861's
    ///   `stale-while-revalidate`; a stale entry with a validator is validated, one without is replaced.
    ///
    /// The request's own If-None-Match or If-Modified-Since is answered from a fresh entry (304 when it
    /// holds); with a stale one the request goes to the network untouched, as does one with a Range,
    /// If-Match, If-Unmodified-Since or If-Range: it asks for something other than the stored response.
    public static func decide(
        requestHeaders: Headers,
        policy: Request.CachePolicy,
        stored candidates: [CachedResponse],
        now: Date
    ) -> Decision {
        if policy == .reloadIgnoringLocalCacheData { return .network }
        if requestHeaders["range"] != nil {
            return partialDecision(requestHeaders: requestHeaders, policy: policy, stored: candidates, now: now)
        }
        if ["if-match", "if-unmodified-since", "if-range"].contains(where: { requestHeaders[$0] != nil }) {
            return .network
        }
        let ownConditions = requestHeaders["if-none-match"] != nil || requestHeaders["if-modified-since"] != nil
        let request = CacheControl(requestHeaders)
        // A stored part (206) answers only range requests.
        guard let stored = newestMatch(candidates.filter { $0.statusCode != 206 }, requestHeaders: requestHeaders) else {
            if request.onlyIfCached { return .gatewayTimeout }
            return policy == .returnCacheDataDontLoad ? .unavailable : .network
        }
        // A usable entry answers the request's own conditions itself.
        let answer: Decision =
            ownConditions && conditionsHold(requestHeaders, for: stored) ? .notModified(stored) : .useStored(stored)
        if policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad { return answer }
        let response = CacheControl(stored.headers)
        let mustValidate = request.noCache || pragmaNoCache(requestHeaders) || response.noCache
        if !mustValidate && isUsable(stored, request: request, response: response, now: now) { return answer }
        if ownConditions { return request.onlyIfCached ? .gatewayTimeout : .network }
        let conditions = conditionalHeaders(for: stored)
        if !mustValidate, request.maxAge == nil, request.minFresh == nil, !response.mustRevalidate,
            let window = response.staleWhileRevalidate,
            currentAge(stored, now: now) - freshnessLifetime(stored) <= TimeInterval(window)
        {
            return .useStale(stored, conditions: conditions)
        }
        if request.onlyIfCached { return .gatewayTimeout }
        return conditions.fields.isEmpty ? .network : .validate(stored, conditions: conditions)
    }

    /// `Pragma: no-cache` in a request without Cache-Control (RFC 9111 §5.4): as `no-cache`.
    static func pragmaNoCache(_ requestHeaders: Headers) -> Bool {
        requestHeaders["cache-control"] == nil && requestHeaders.values("pragma").contains { $0.lowercased().contains("no-cache") }
    }

    /// The stored response that may stand in for a server that failed (a 500, 502, 503 or 504, or no
    /// answer at all) under `stale-if-error` (RFC 5861 §4), the response's or the request's: the newest
    /// matching variant, stale by no more than the window. Nil when none may; never for one that says
    /// `must-revalidate` or `no-cache`, which may be reused only once the server agrees.
    public static func staleIfErrorFallback(
        requestHeaders: Headers,
        stored candidates: [CachedResponse],
        now: Date
    ) -> CachedResponse? {
        guard let stored = newestMatch(candidates, requestHeaders: requestHeaders) else { return nil }
        let response = CacheControl(stored.headers)
        guard !response.mustRevalidate, !response.noCache,
            let window = [response.staleIfError, CacheControl(requestHeaders).staleIfError].compactMap({ $0 }).max()
        else { return nil }
        return currentAge(stored, now: now) - freshnessLifetime(stored) <= TimeInterval(window) ? stored : nil
    }

    /// The newest stored variant whose `Vary` values match the request's.
    static func newestMatch(_ candidates: [CachedResponse], requestHeaders: Headers) -> CachedResponse? {
        candidates.filter { varyMatches($0, requestHeaders: requestHeaders) }.max { $0.responseDate < $1.responseDate }
    }

    /// Whether the request's If-None-Match (weak comparison, `*` for any) or, without one, its
    /// If-Modified-Since (against Last-Modified, else Date) holds for `stored`: then the answer is 304
    /// (RFC 9110 §13.1.2, §13.1.3; RFC 9111 §4.3.2).
    public static func conditionsHold(_ requestHeaders: Headers, for stored: CachedResponse) -> Bool {
        let noneMatch = requestHeaders.values("if-none-match")
        if !noneMatch.isEmpty {
            guard let etag = stored.headers["etag"] else { return false }
            // Weak comparison: the opaque tags, W/ aside.
            func opaque(_ tag: Substring) -> Substring {
                var trimmed = tag.drop { $0 == " " || $0 == "\t" }
                while let last = trimmed.last, last == " " || last == "\t" { trimmed = trimmed.dropLast() }
                return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
            }
            let tags = noneMatch.flatMap { $0.split(separator: ",") }.map(opaque)
            return tags.contains("*") || tags.contains(opaque(Substring(etag)))
        }
        guard let since = requestHeaders["if-modified-since"].flatMap({ HTTPDate.date($0) }) else { return false }
        let modified = stored.headers["last-modified"].flatMap { HTTPDate.date($0) } ?? dateValue(stored)
        return modified <= since
    }

    /// Whether `stored` may be served without validation for a request with `request`'s directives.
    static func isUsable(
        _ stored: CachedResponse,
        request: CacheControl,
        response: CacheControl,
        now: Date
    ) -> Bool {
        let age = currentAge(stored, now: now)
        let lifetime = freshnessLifetime(stored)
        if let maxAge = request.maxAge, age > TimeInterval(maxAge) { return false }
        if let minFresh = request.minFresh, lifetime - age < TimeInterval(minFresh) { return false }
        if age < lifetime { return true }
        // Stale: only when the request accepts this much staleness and the response allows it.
        guard let maxStale = request.maxStale, !response.mustRevalidate else { return false }
        return maxStale == Int.max || age - lifetime <= TimeInterval(maxStale)
    }

    /// The fields that ask whether `stored` is current: If-None-Match with its entity tag,
    /// If-Modified-Since with its Last-Modified (RFC 9111 §4.3.1). Empty when it has neither.
    public static func conditionalHeaders(for stored: CachedResponse) -> Headers {
        var conditions = Headers()
        if let etag = stored.headers["etag"] { conditions.add(name: "If-None-Match", value: etag) }
        if let modified = stored.headers["last-modified"] {
            conditions.add(name: "If-Modified-Since", value: modified)
        }
        return conditions
    }

    /// `stored` after a 304 with `headers` (RFC 9111 §4.3.4): each field the 304 carries replaces the
    /// stored fields of that name, except Content-Length and the hop-by-hop fields; the dates become
    /// those of the validating exchange.
    public static func updating(
        _ stored: CachedResponse,
        notModified headers: Headers,
        requestDate: Date,
        responseDate: Date
    ) -> CachedResponse {
        let kept: Set<String> = [
            "content-length", "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding",
            "upgrade", "trailer", "proxy-authenticate", "proxy-authorization",
        ]
        var updated = stored
        var replaced = Set<String>()
        for field in headers.fields {
            let name = field.name.lowercased()
            guard !kept.contains(name) else { continue }
            if replaced.insert(name).inserted { updated.headers[name] = nil }
            updated.headers.add(name: field.name, value: field.value)
        }
        updated.requestDate = requestDate
        updated.responseDate = responseDate
        return updated
    }

    /// The URLs whose stored responses an exchange makes invalid (RFC 9111 §4.4): for an unsafe method
    /// (anything but GET, HEAD, OPTIONS and TRACE) answered with a 2xx or 3xx, the target and the
    /// `Location` and `Content-Location` it names on the same origin.
    public static func invalidatedURLs(
        method: String,
        url: URL,
        statusCode: Int,
        responseHeaders: Headers
    ) -> [URL] {
        let safe: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]
        guard !safe.contains(method.uppercased()), (200..<400).contains(statusCode) else { return [] }
        var urls = [url]
        for name in ["location", "content-location"] {
            guard let value = responseHeaders[name], let target = URL(string: value, relativeTo: url)?.absoluteURL
            else { continue }
            if target.httpOrigin == url.httpOrigin { urls.append(target) }
        }
        return urls
    }

    /// The response's `Date`, or when it arrived when it has none (or an unparsable one).
    static func dateValue(_ stored: CachedResponse) -> Date {
        stored.headers["date"].flatMap { HTTPDate.date($0) } ?? stored.responseDate
    }
}
