/// The syntax rules of the control API's strings, as docs/openapi.json states them (its `pattern`s are
/// these, character for character; a test compares them). The daemon checks requests by these rules, so
/// the document and the daemon agree on what is valid.
extension ControlAPI {
    /// An absolute http or https URL by RFC 3986's grammar: a scheme, a host (a registered name, without
    /// percent-encodings, which could decode to no name at all: an international name goes in its
    /// punycode form; or an IPv6 literal), an optional port 1–65535, then path, query and fragment of URI
    /// characters, with `%` only as a percent-encoding.
    public static let urlPattern =
        #"^[Hh][Tt][Tt][Pp][Ss]?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=-]+)(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?(#([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"#

    /// Whether `text` is an absolute http or https URL by ``urlPattern``.
    public static func isHTTPURL(_ text: String) -> Bool {
        text.wholeMatch(of: urlRegex) != nil
    }

    /// ``urlPattern`` compiled once (a batch checks up to a thousand URLs). A Regex is an immutable
    /// program; each match keeps its own state, so sharing it between threads is safe.
    nonisolated(unsafe) private static let urlRegex = try! Regex(urlPattern)
}
