/// A request field's value as the cache compares it for `Vary` (RFC 9111 §4.1): normalised in the ways
/// the RFC allows, so that values that mean the same match.
///
/// - Every field: the fields of one name are one list; white space around its members, around `;` and
///   `=` in their parameters, and in runs inside them does not count.
/// - The `Accept` fields (`Accept`, `Accept-Charset`, `Accept-Encoding`, `Accept-Language`): their
///   members are case-insensitive and their order carries no meaning (weights do, RFC 9110 §12.4.2), so
///   they compare without case and in sorted order.
public enum VaryValue {
    /// Fields whose members compare without case and in any order.
    public static let unorderedCaseless: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

    /// The normalised value of the request's `fields` named `name` (lower-case).
    public static func normalized(name: String, fields: [String]) -> String {
        var members = fields.flatMap(Self.members).map(Self.tidied).filter { !$0.isEmpty }
        if unorderedCaseless.contains(name) {
            members = members.map { $0.lowercased() }.sorted()
        }
        return members.joined(separator: ", ")
    }

    /// The comma-separated members of a field value, commas inside quoted strings kept.
    static func members(_ value: String) -> [Substring] {
        var result: [Substring] = []
        var start = value.startIndex
        var quoted = false
        var escaped = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ",", !quoted {
                result.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        result.append(value[start...])
        return result
    }

    /// One member without white space at its ends, around `;` and `=`, or in runs (quoted text aside).
    static func tidied(_ member: Substring) -> String {
        var output = ""
        var pendingSpace = false
        var quoted = false
        for character in member {
            if character == "\"" { quoted.toggle() }
            if !quoted, character == " " || character == "\t" {
                pendingSpace = true
                continue
            }
            if pendingSpace, !output.isEmpty, !quoted || character == "\"",
                character != ";", character != "=", output.last != ";", output.last != "="
            {
                output.append(" ")
            }
            pendingSpace = false
            output.append(character)
        }
        return output
    }
}
