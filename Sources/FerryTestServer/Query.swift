/// A request target split into its path and decoded query items (`a=1&b=x%20y`, `+` as a space).
public struct Query: Sendable, Hashable {
    /// The path, percent-decoded, e.g. `/bytes/100`.
    public var path: String
    /// The query items in order; a name may repeat.
    public var items: [(name: String, value: String)]

    /// Splits a request target such as `/bytes/100?seed=7`.
    public init(target: String) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.path = Self.percentDecode(parts.first.map(String.init) ?? "/", plusIsSpace: false)
        self.items = []
        guard parts.count == 2 else { return }
        for pair in parts[1].split(separator: "&") where !pair.isEmpty {
            let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.percentDecode(String(nameValue[0]), plusIsSpace: true)
            let value = nameValue.count == 2 ? Self.percentDecode(String(nameValue[1]), plusIsSpace: true) : ""
            self.items.append((name, value))
        }
    }

    /// The first value of `name`, if present.
    public subscript(name: String) -> String? {
        items.first(where: { $0.name == name })?.value
    }

    /// Every value of `name`, in order.
    public func all(_ name: String) -> [String] {
        items.filter { $0.name == name }.map(\.value)
    }

    public static func == (lhs: Query, rhs: Query) -> Bool {
        lhs.path == rhs.path && lhs.items.map(\.name) == rhs.items.map(\.name)
            && lhs.items.map(\.value) == rhs.items.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        for item in items {
            hasher.combine(item.name)
            hasher.combine(item.value)
        }
    }

    /// Decodes `%XX` escapes (invalid escapes are kept as they are) and optionally `+` as a space.
    public static func percentDecode(_ text: String, plusIsSpace: Bool) -> String {
        guard text.contains("%") || (plusIsSpace && text.contains("+")) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let utf8 = Array(text.utf8)
        var index = 0
        func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), index + 2 < utf8.count,
                let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
