import FerryCore
import Foundation

/// Field names as `HTTPURLResponse.allHeaderFields` shows them (FoundationNetworking's and Darwin's
/// rule): capitalised word by word (`content-type` → `Content-Type`, `etag` → `Etag`), except names
/// that start with `X-`, kept as they came, and `WWW-Authenticate`.
enum HeaderFieldName {
    static func canonical(_ name: String) -> String {
        let bytes = name.utf8
        if bytes.count >= 2, bytes.first! | 0x20 == UInt8(ascii: "x"), bytes[bytes.index(after: bytes.startIndex)] == UInt8(ascii: "-") {
            return name
        }
        if name.count == 16, Headers.sameName(name, "www-authenticate") { return "WWW-Authenticate" }
        return capitalized(name) ?? name.capitalized
    }

    /// Foundation's `capitalized` for the names nearly every server sends, without its Unicode
    /// machinery (a third of the cost of making a response, measured): a letter is upper-cased when
    /// the character before it is not a letter, lower-cased when it is. Nil for a name with a byte
    /// outside ASCII or one of the characters Unicode lets a word run across (`'`, `^`, `` ` ``,
    /// `:`), which Foundation's own rule then handles.
    static func capitalized(_ name: String) -> String? {
        var previousIsLetter = false
        var simple = true
        let result = String(unsafeUninitializedCapacity: name.utf8.count) { buffer in
            var index = 0
            for byte in name.utf8 {
                guard byte < 0x80, byte != UInt8(ascii: "'"), byte != UInt8(ascii: "^"), byte != UInt8(ascii: "`"), byte != UInt8(ascii: ":") else {
                    simple = false
                    return 0
                }
                let lower = byte | 0x20
                let isLetter = lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
                buffer[index] = isLetter ? (previousIsLetter ? lower : lower & ~0x20) : byte
                previousIsLetter = isLetter
                index += 1
            }
            return index
        }
        return simple ? result : nil
    }
}
