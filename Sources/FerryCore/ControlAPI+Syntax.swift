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
    ///
    /// Checked byte by byte, as the pattern reads (it never needs to look back: each part ends where a
    /// character of the next part begins); a test holds it to the pattern compiled as a Regex on many
    /// strings. Matching with the Regex was 4 % of ferryd's CPU for a task created one a request.
    public static func isHTTPURL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var syntax = URLSyntax(bytes: bytes)
            return syntax.matches()
        }
    }
}

/// ``ControlAPI/urlPattern`` as a scanner over UTF-8 bytes.
private struct URLSyntax {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func matches() -> Bool {
        guard scheme(), host() else { return false }
        if current == UInt8(ascii: ":") {
            index += 1
            guard port() else { return false }
        }
        if current == UInt8(ascii: "/") { guard part(allowsQuestionMark: false) else { return false } }
        if current == UInt8(ascii: "?") {
            index += 1
            guard part(allowsQuestionMark: true) else { return false }
        }
        if current == UInt8(ascii: "#") {
            index += 1
            guard part(allowsQuestionMark: true) else { return false }
        }
        return index == bytes.count
    }

    /// `http://` or `https://`, letters in either case.
    private mutating func scheme() -> Bool {
        for letter in "http".utf8 {
            guard let byte = current, byte | 0x20 == letter else { return false }
            index += 1
        }
        if let byte = current, byte | 0x20 == UInt8(ascii: "s") { index += 1 }
        for mark in "://".utf8 {
            guard current == mark else { return false }
            index += 1
        }
        return true
    }

    /// `[` hex digits, colons and dots `]`, or one or more characters of a registered name.
    private mutating func host() -> Bool {
        let start = index
        if current == UInt8(ascii: "[") {
            index += 1
            while let byte = current, Self.isHex(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") {
                index += 1
            }
            guard index > start + 1, current == UInt8(ascii: "]") else { return false }
            index += 1
            return true
        }
        while let byte = current, Self.isUnreserved(byte) || Self.isSubDelimiter(byte) { index += 1 }
        return index > start
    }

    /// 1 to 65535, without a leading zero.
    private mutating func port() -> Bool {
        var value = 0
        var digits = 0
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            if digits == 0, byte == UInt8(ascii: "0") { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            guard digits <= 5 else { return false }
            index += 1
        }
        return digits > 0 && value <= 65535
    }

    /// A path (from its `/`), or a query or fragment (after its mark): URI characters and `%XX`.
    private mutating func part(allowsQuestionMark: Bool) -> Bool {
        while let byte = current {
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, Self.isHex(bytes[index + 1]), Self.isHex(bytes[index + 2]) else {
                    return false
                }
                index += 3
            } else if Self.isUnreserved(byte) || Self.isSubDelimiter(byte) || byte == UInt8(ascii: ":")
                || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "/")
                || (allowsQuestionMark && byte == UInt8(ascii: "?"))
            {
                index += 1
            } else {
                return true
            }
        }
        return true
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }

    /// Letters, digits, `-._~`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// `!$&'()*+,;=`.
    private static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            true
        default:
            false
        }
    }
}
