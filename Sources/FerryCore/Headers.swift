/// Request or response header fields, in order, with case-insensitive names.
///
/// Ferry checks fields before a request leaves (``validate()``): a name must be an RFC 9110 token, and
/// neither names nor values may hold CR, LF or NUL, which would let a value smuggle a second header or
/// request onto the wire. Foundation silently accepts such values; Ferry refuses them with
/// ``FerryError/Code/invalidHeader``.
public struct Headers: Sendable, Hashable, Codable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field as given.
    public struct Field: Sendable, Hashable, Codable {
        /// The name as given (compared without regard to case).
        public var name: String
        /// The value as given.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field] = []

    /// No fields.
    public init() {}

    /// Fields from name–value pairs, in order.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The first value for `name`, or nil; setting replaces every field of that name (nil removes them).
    public subscript(name: String) -> String? {
        get { fields.first(where: { Self.sameName($0.name, name) })?.value }
        set {
            guard let newValue else {
                fields.removeAll(where: { Self.sameName($0.name, name) })
                return
            }
            if let index = fields.firstIndex(where: { Self.sameName($0.name, name) }) {
                fields[index].value = newValue
                var after = fields.index(after: index)
                while after < fields.endIndex {
                    if Self.sameName(fields[after].name, name) {
                        fields.remove(at: after)
                    } else {
                        after = fields.index(after: after)
                    }
                }
            } else {
                fields.append(Field(name: name, value: newValue))
            }
        }
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Adds a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Makes room for `count` fields in all.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Whether two field names are the same, ignoring ASCII case (names are tokens: ASCII). Compared
    /// byte by byte: lowercasing both names allocated two strings per field looked at, which was a
    /// tenth of the header work of a small request.
    public static func sameName(_ a: String, _ b: String) -> Bool {
        // Over the bytes in place (no copy of either string: `withUTF8` needs a `var`, a retained copy);
        // a string without contiguous UTF-8 (bridged) is made native first.
        if let same = a.utf8.withContiguousStorageIfAvailable({ x in
            b.utf8.withContiguousStorageIfAvailable { y in sameName(x, y) }
        }), let same {
            return same
        }
        var a = a
        var b = b
        return a.withUTF8 { x in b.withUTF8 { y in sameName(x, y) } }
    }

    private static func sameName(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        for index in 0..<x.count where x[index] != y[index] {
            // ASCII letters differ by 0x20 between cases; anything else must match exactly.
            let lower = x[index] | 0x20
            guard lower == y[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else {
                return false
            }
        }
        return true
    }

    /// The Content-Length as a number; nil when absent or not a non-negative integer.
    public var contentLength: Int64? {
        self["content-length"].flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Checks every field: names are tokens, and no name or value holds CR, LF or NUL.
    /// - Throws: ``FerryError`` with code ``FerryError/Code/invalidHeader``, naming the field.
    public func validate() throws {
        for field in fields {
            try Self.validate(name: field.name, value: field.value)
        }
    }

    /// Checks one field: the name by RFC 9110 §5.1's token rule (``isToken(_:)``), the value here.
    /// `HTTPField.isValidValue` would also refuse leading or trailing white space and other control
    /// characters, which curl sends and servers take; Ferry refuses only what could inject another
    /// field (CR, LF, NUL).
    /// - Throws: ``FerryError`` with code ``FerryError/Code/invalidHeader``.
    public static func validate(name: String, value: String) throws {
        guard isToken(name) else {
            throw FerryError(
                .invalidHeader,
                "header name \(String(reflecting: name)) is not a valid token (RFC 9110 §5.1): use letters, digits and !#$%&'*+-.^_`|~"
            )
        }
        var value = value
        // (Over the contiguous bytes: String.UTF8View's own iteration cost more than the check.)
        if let bad = value.withUTF8({ $0.first(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0x00 }) }) {
            let character = bad == 0x0d ? "CR" : bad == 0x0a ? "LF" : "NUL"
            throw FerryError(
                .invalidHeader,
                "the value of header \(name) contains \(character), which could inject headers: remove line breaks from it"
            )
        }
    }

    /// Whether `text` is an RFC 9110 token (§5.6.2: one or more of ALPHA, DIGIT and
    /// ``!#$%&'*+-.^_`|~``): a field name, or a method.
    ///
    /// The rule swift-http-types' `HTTPField.Name` applies (the tests compare the two on every byte and
    /// on random names), without its cost here: `HTTPField.Name(_:)` also makes the lower-case name,
    /// a new string for every name with a capital (`User-Agent`, `GET`), and every request checked its
    /// method and each field that way.
    public static func isToken(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            !bytes.isEmpty
                && bytes.allSatisfy { byte in
                    byte < 64 ? tokenBitsBelow64 & (1 << UInt64(byte)) != 0 : byte < 128 && tokenBitsFrom64 & (1 << UInt64(byte - 64)) != 0
                }
        }
    }

    /// Token bytes 0–63 as bits: `!#$%&'*+-.` and the digits.
    private static let tokenBitsBelow64: UInt64 = bits("!#$%&'*+-.0123456789", offset: 0)
    /// Token bytes 64–127 as bits (byte − 64): the letters and `^_`|~`.
    private static let tokenBitsFrom64: UInt64 = bits("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz^_`|~", offset: 64)

    private static func bits(_ characters: String, offset: UInt8) -> UInt64 {
        characters.utf8.reduce(0) { $0 | 1 << UInt64($1 - offset) }
    }
}
