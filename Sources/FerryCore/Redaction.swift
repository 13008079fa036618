public import Foundation

/// What listings show of a secret (docs/RELIABILITY.md, "Secrets"): the values of `Authorization`,
/// `Proxy-Authorization` and `Cookie` (and a response's `Set-Cookie`), and the values of URL query
/// parameters that carry tokens (`?token=…`, a signed URL's `X-Amz-Signature=…`), are shown as
/// `<redacted>` (in a URL, `REDACTED`). `ferry ls`, `GET /v1/tasks`, the status page and ferryd's log show redacted tasks; the
/// full values only where the user asks explicitly (`ferry ls --show-secrets`, `?secrets=show`).
public struct Redaction: Sendable, Hashable {
    /// What a hidden query value reads (`<` and `>` are not allowed in a URL).
    public static let redactedQueryValue = "REDACTED"

    /// The query parameter names whose values are hidden, lower case.
    public var queryKeys: Set<String>

    /// The query parameter names hidden unless configured otherwise: the usual names of tokens, keys
    /// and signatures.
    public static let standardQueryKeys: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "auth", "authorization", "key", "apikey",
        "api_key", "api-key", "secret", "client_secret", "password", "passwd", "pass", "sig", "signature",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
        "x-goog-credential",
    ]

    /// Redaction with `queryKeys` (any case).
    public init(queryKeys: Set<String> = Redaction.standardQueryKeys) {
        self.queryKeys = Set(queryKeys.map { $0.lowercased() })
    }

    /// The query keys from `FERRY_REDACT_QUERY` (names separated by commas; empty: none) when it is set,
    /// else the standard ones.
    public static func fromEnvironment(_ environment: [String: String]) -> Redaction {
        guard let list = environment["FERRY_REDACT_QUERY"] else { return Redaction() }
        let keys = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return Redaction(queryKeys: Set(keys))
    }

    /// `url` with the values of the hidden query parameters replaced (the names stay).
    public func url(_ url: URL) -> URL {
        guard !queryKeys.isEmpty, let text = self.text(url.absoluteString), let redacted = URL(string: text) else { return url }
        return redacted
    }

    /// A URL's text with the hidden query values replaced; nil when it has no query.
    public func text(_ urlText: String) -> String? {
        guard let question = urlText.firstIndex(of: "?") else { return nil }
        let end = urlText[question...].firstIndex(of: "#") ?? urlText.endIndex
        let query = urlText[urlText.index(after: question)..<end]
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard let equals = part.firstIndex(of: "=") else { return String(part) }
            let name = part[..<equals]
            let decoded = (name.removingPercentEncoding ?? String(name)).lowercased()
            return queryKeys.contains(decoded) ? name + "=" + Self.redactedQueryValue : String(part)
        }
        return String(urlText[...question]) + parts.joined(separator: "&") + String(urlText[end...])
    }

    /// A request with its credentials' values and hidden query values replaced.
    public func request(_ request: Request) -> Request {
        var copy = request
        copy.headers = request.headers.redacted
        copy.url = url(request.url)
        return copy
    }

    /// An error with its URL's hidden query values replaced, and no resume data (it holds the request).
    public func error(_ error: FerryError) -> FerryError {
        var copy = error
        copy.failingURL = error.failingURL.map { text($0) ?? $0 }
        copy.resumeData = nil
        return copy
    }

    /// A task as listings show it: requests, response cookies, errors and the like redacted.
    public func task(_ task: BackgroundTaskInfo) -> BackgroundTaskInfo {
        var copy = task
        copy.originalRequest = request(task.originalRequest)
        copy.currentRequest = task.currentRequest.map(request)
        copy.responseHeaders = task.responseHeaders?.redacted
        copy.error = task.error.map(error)
        copy.lastError = task.lastError.map(error)
        return copy
    }
}
