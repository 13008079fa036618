/// The rules a name chosen by someone else (a server's `Content-Disposition`, a URL's last path
/// component) must pass before it names a local file (docs/CLI.md, "Names a server chooses").
///
/// What is removed: any path (everything up to the last `/` or `\`), control characters (C0, DEL and
/// C1), the bidirectional controls that make `evil\u{202E}fdp.exe` show as `evilexe.pdf`, and leading
/// dots (a server must not be able to name `.bashrc` or `.ssh`) and surrounding spaces. What is refused
/// (nil): a name with nothing left, and a name ending in one of Ferry's own suffixes (`.ferry-part`,
/// `.ferry-resume`, …), which would make the download pose as another download's working file.
public enum SafeFilename {
    /// The suffixes of the files Ferry keeps beside a download.
    public static let reservedSuffixes = [
        ".ferry-part", ".ferry-resume", ".ferry-resume.new", ".ferry-mismatch", ".ferry-include",
    ]

    /// `name` made safe to use as a file name in a directory, or nil when nothing usable is left.
    public static func sanitize(_ name: String) -> String? {
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in last.unicodeScalars where !isUnsafe(scalar) { scalars.append(scalar) }
        var cleaned = Substring(String(scalars))
        // Spaces and dots at the start, spaces at the end: ". .bashrc" is ".bashrc" in disguise.
        while let first = cleaned.first, first == "." || first == " " { cleaned = cleaned.dropFirst() }
        while let last = cleaned.last, last == " " { cleaned = cleaned.dropLast() }
        guard !cleaned.isEmpty else { return nil }
        let result = String(cleaned)
        let lowered = result.lowercased()
        guard !reservedSuffixes.contains(where: { lowered.hasSuffix($0) }) else { return nil }
        // NAME_MAX is 255 bytes; a longer name cannot be created. Cut at a character boundary,
        // keeping the extension.
        return result.utf8.count <= 255 ? result : shortened(result)
    }

    /// True for a character that never belongs in a file name taken from someone else.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // Bidirectional controls: LRM, RLM, ALM, the embeddings and overrides, the isolates.
        case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
        // Zero-width characters that hide a name's real shape, and the byte-order mark.
        case 0x200B...0x200D, 0xFEFF: true
        default: false
        }
    }

    /// A name cut to at most 255 bytes, its extension (up to 16 bytes) kept.
    private static func shortened(_ name: String) -> String {
        var stem = Substring(name)
        var suffix = ""
        if let dot = name.lastIndex(of: "."), name.utf8.distance(from: dot, to: name.endIndex) <= 16 {
            stem = name[..<dot]
            suffix = String(name[dot...])
        }
        var result = ""
        for character in stem {
            guard result.utf8.count + String(character).utf8.count + suffix.utf8.count <= 255 else { break }
            result.append(character)
        }
        return result + suffix
    }
}
