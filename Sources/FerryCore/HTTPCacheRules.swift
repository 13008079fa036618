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
        /// Ask the server whether this stored response is still good, with these conditional fields
        /// (If-None-Match, If-Modified-Since); a 304 means serve it, updated.
        case validate(CachedResponse, conditions: Headers)
        /// Send the request as it is; the cache has nothing usable.
        case network
        /// Fail: the request may only be answered from the cache and nothing stored answers it.
        case unavailable
    }

    /// Status codes a response may be stored with on heuristic freshness alone (RFC 9110 §15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The key a URL's entries are stored under: the URL without its fragment.
    public static func key(for url: URL) -> String {
        let text = url.absoluteString
        guard let hash = text.firstIndex(of: "#") else { return text }
        return String(text[..<hash])
    }

    /// Where a response to `method` with `requestHeaders` may be kept (RFC 9111 §3), for a private cache.
    /// `.notAllowed` for anything but GET; for a `no-store` request or response; for `Vary: *`; for a
    /// status that is not final, is 206 (Ferry does not combine partial responses) or is 304; and for a
    /// response with neither explicit freshness nor a heuristically cacheable status.
    public static func storagePolicy(
        method: String,
        requestHeaders: Headers,
        statusCode: Int,
        responseHeaders: Headers
    ) -> CachedResponse.StoragePolicy {
        guard method.uppercased() == "GET", statusCode >= 200, statusCode != 206, statusCode != 304 else {
            return .notAllowed
        }
        let response = CacheControl(responseHeaders)
        guard !CacheControl(requestHeaders).noStore, !response.noStore else { return .notAllowed }
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
    /// nil for `Vary: *`. Several fields of one name join with ", "; whitespace runs collapse (the
    /// normalisation RFC 9111 §4.1 allows).
    public static func varyValues(requestHeaders: Headers, responseHeaders: Headers) -> [String: String]? {
        guard let names = varyNames(responseHeaders) else { return nil }
        var values: [String: String] = [:]
        for name in names {
            let fields = requestHeaders.values(name)
            guard !fields.isEmpty else { continue }
            values[name] = normalized(fields.joined(separator: ", "))
        }
        return values
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
        if let expires = stored.headers["expires"] {
            guard let expiry = HTTPDate.date(expires) else { return 0 }
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
        let ageValue = stored.headers["age"].flatMap { CacheControl.deltaSeconds($0) }.map(TimeInterval.init) ?? 0
        let delay = max(0, stored.responseDate.timeIntervalSince(stored.requestDate))
        let initial = max(apparent, ageValue + delay)
        return initial + max(0, now.timeIntervalSince(stored.responseDate))
    }

    /// What to do for a GET with `requestHeaders` under `policy`, given the entries stored for its URL.
    ///
    /// - `reloadIgnoringLocalCacheData`: always the network.
    /// - `returnCacheDataElseLoad` / `returnCacheDataDontLoad`: a matching entry whatever its age; none:
    ///   the network, or unavailable.
    /// - `useProtocolCachePolicy`: RFC 9111 §4 with the request's own directives (`no-cache` and
    ///   `Pragma: no-cache`, `max-age`, `min-fresh`, `max-stale`, `only-if-cached`); a stale entry with
    ///   a validator is validated, one without is replaced.
    ///
    /// A request that carries its own conditionals or a Range goes to the network untouched: it asks
    /// for something other than the stored response.
    public static func decide(
        requestHeaders: Headers,
        policy: Request.CachePolicy,
        stored candidates: [CachedResponse],
        now: Date
    ) -> Decision {
        if policy == .reloadIgnoringLocalCacheData { return .network }
        let ownConditions = ["range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range"]
        if ownConditions.contains(where: { requestHeaders[$0] != nil }) { return .network }
        let request = CacheControl(requestHeaders)
        let match =
            candidates
            .filter { varyMatches($0, requestHeaders: requestHeaders) }
            .max { $0.responseDate < $1.responseDate }
        guard let stored = match else {
            return policy == .returnCacheDataDontLoad || request.onlyIfCached ? .unavailable : .network
        }
        switch policy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return .useStored(stored)
        case .reloadIgnoringLocalCacheData:
            return .network
        case .useProtocolCachePolicy:
            break
        }
        let response = CacheControl(stored.headers)
        let pragmaNoCache =
            requestHeaders["cache-control"] == nil
            && requestHeaders.values("pragma").contains { $0.lowercased().contains("no-cache") }
        let mustValidate = request.noCache || pragmaNoCache || response.noCache
        if !mustValidate && isUsable(stored, request: request, response: response, now: now) {
            return .useStored(stored)
        }
        if request.onlyIfCached { return .unavailable }
        let conditions = conditionalHeaders(for: stored)
        return conditions.fields.isEmpty ? .network : .validate(stored, conditions: conditions)
    }

    /// Whether `stored` may be served without validation for a request with `request`'s directives.
    private static func isUsable(
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
    private static func dateValue(_ stored: CachedResponse) -> Date {
        stored.headers["date"].flatMap { HTTPDate.date($0) } ?? stored.responseDate
    }

    private static func normalized(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }
}
