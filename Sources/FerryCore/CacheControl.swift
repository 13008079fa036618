import Foundation

/// The Cache-Control directives of a request or a response (RFC 9111 §5.2), from every Cache-Control
/// field of the message. Names are compared without case; a directive given twice keeps its first
/// argument (RFC 9111 §4.2.1 allows using the first occurrence).
public struct CacheControl: Sendable, Hashable {
    /// Each directive by lower-case name, with its argument (quotes removed), nil when it has none.
    public private(set) var directives: [String: String?] = [:]

    /// The directives of every Cache-Control field in `headers`.
    public init(_ headers: Headers) {
        for value in headers.values("cache-control") { parse(value) }
    }

    /// The directives in one field value, e.g. `max-age=60, must-revalidate`.
    public init(parsing value: String) {
        parse(value)
    }

    /// Whether `name` is present.
    public func has(_ name: String) -> Bool { directives[name] != nil }

    /// The delta-seconds argument of `name` (RFC 9111 §1.2.2): nil when the directive is absent or its
    /// argument is not a number of seconds. Values beyond 2^31 count as 2^31, as the RFC says.
    public func seconds(_ name: String) -> Int? {
        guard let argument = directives[name], let text = argument else { return nil }
        return Self.deltaSeconds(text)
    }

    /// A delta-seconds value (a directive's argument, or `Age`): digits only, at most 2^31.
    static func deltaSeconds(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(trimmed.prefix(10)).map { min($0, 2_147_483_648) }
    }

    /// `no-store`: the message must not be stored.
    public var noStore: Bool { has("no-store") }
    /// `no-cache` without field names: a stored response must be validated before use. The qualified
    /// form (`no-cache="Set-Cookie"`) is ``noCacheFields`` instead.
    public var noCache: Bool { directives["no-cache"].map { $0 == nil } ?? false }
    /// The lower-case field names of a qualified `no-cache="a, b"` (RFC 9111 §5.2.2.4): the response may
    /// be reused without validation, but never with those fields, so they are not stored. Empty when
    /// there is none.
    public var noCacheFields: [String] { Self.fieldNames(directives["no-cache"] ?? nil) }
    /// `must-understand` (§5.2.2.3): store only for a status whose caching rules the cache implements;
    /// for such a status it overrides `no-store`.
    public var mustUnderstand: Bool { has("must-understand") }
    /// `stale-while-revalidate=N` (RFC 5861 §3): seconds past freshness the response may be served while
    /// it is revalidated in the background.
    public var staleWhileRevalidate: Int? { seconds("stale-while-revalidate") }
    /// `stale-if-error=N` (RFC 5861 §4), of a request or a response: seconds past freshness the response
    /// may be served when the server answers 500, 502, 503 or 504, or cannot be reached.
    public var staleIfError: Int? { seconds("stale-if-error") }
    /// `must-revalidate`: once stale, never served without validation.
    public var mustRevalidate: Bool { has("must-revalidate") }
    /// `max-age` in seconds.
    public var maxAge: Int? { seconds("max-age") }
    /// `min-fresh` in seconds (requests).
    public var minFresh: Int? { seconds("min-fresh") }
    /// `max-stale` (requests): the seconds of staleness accepted; `Int.max` when it has no argument.
    public var maxStale: Int? {
        guard let argument = directives["max-stale"] else { return nil }
        return argument == nil ? Int.max : seconds("max-stale")
    }
    /// `only-if-cached` (requests): use a stored response or fail.
    public var onlyIfCached: Bool { has("only-if-cached") }
    /// `public`: storable even where it would not be by default.
    public var isPublic: Bool { has("public") }
    /// `private`: for one user; a private cache (Ferry's) may store it.
    public var isPrivate: Bool { has("private") }

    /// Field names listed in a directive's argument (`"Set-Cookie, X-Token"`), lower-case.
    private static func fieldNames(_ argument: String?) -> [String] {
        guard let argument else { return [] }
        return argument.split(separator: ",").map { $0.trimmingSpacesAndTabs.lowercased() }.filter { !$0.isEmpty }
    }

    private mutating func parse(_ value: String) {
        var bytes = Substring(value)[...]
        while !bytes.isEmpty {
            // One directive: up to a comma outside quotes.
            var inQuotes = false
            var escaped = false
            var end = bytes.startIndex
            while end < bytes.endIndex {
                let character = bytes[end]
                if escaped {
                    escaped = false
                } else if inQuotes && character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inQuotes.toggle()
                } else if character == "," && !inQuotes {
                    break
                }
                end = bytes.index(after: end)
            }
            add(bytes[bytes.startIndex..<end])
            bytes = end < bytes.endIndex ? bytes[bytes.index(after: end)...] : bytes[end...]
        }
    }

    private mutating func add(_ directive: Substring) {
        let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts[0].trimmingSpacesAndTabs.lowercased()
        guard !name.isEmpty, directives[name] == nil else { return }
        guard parts.count == 2 else {
            directives[name] = .some(nil)
            return
        }
        var argument = parts[1].trimmingSpacesAndTabs
        if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
            argument = String(argument.dropFirst().dropLast()).replacingOccurrences(of: "\\", with: "")
        }
        directives[name] = .some(argument)
    }
}

extension Substring {
    fileprivate var trimmingSpacesAndTabs: String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
