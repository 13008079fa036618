extension String {
    /// The string with ASCII letters in lower case; the string itself (no copy) when it has no upper-case
    /// ASCII letter, as URL schemes and hosts almost never do. For protocol elements (schemes, hosts,
    /// field names), where `lowercased()`'s Unicode rules and its new string on every call are not
    /// wanted: a small request lowercased a dozen strings that were lower case already.
    public var asciiLowercased: String {
        guard utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return self }
        return String(decoding: utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
