import Foundation

/// A field value with parameters, as `Content-Type` and `Content-Disposition` carry them
/// (`text/html; charset="utf-8"`): split at each `;` outside quotes, quotes and `\` escapes removed.
struct HeaderFieldValue: Sendable, Equatable {
    /// The part before the first `;`, trimmed.
    var value: String
    /// The parameters in order, names as sent; a parameter without `=` has a nil value.
    var parameters: [(name: String, value: String?)]

    init?(_ text: String) {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text.unicodeScalars {
            if escaped {
                current.unicodeScalars.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";", !quoted {
                parts.append(current)
                current = ""
            } else {
                current.unicodeScalars.append(character)
            }
        }
        parts.append(current)
        value = parts[0].trimmingCharacters(in: .whitespaces)
        parameters = parts.dropFirst().map { part in
            guard let equals = part.firstIndex(of: "=") else { return (part.trimmingCharacters(in: .whitespaces), nil) }
            return (
                String(part[..<equals]).trimmingCharacters(in: .whitespaces),
                String(part[part.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
            )
        }
    }

    /// The value of the first parameter named `name` (in any case).
    func parameter(_ name: String) -> String? {
        parameters.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func == (a: Self, b: Self) -> Bool {
        a.value == b.value && a.parameters.elementsEqual(b.parameters) { $0.name == $1.name && $0.value == $1.value }
    }
}
