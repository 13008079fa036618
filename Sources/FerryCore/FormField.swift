/// One field of a multipart/form-data upload (RFC 7578), as `ferry put --form` gives it and ferryd keeps
/// it with a background task: a text value, or a file read when the body is sent.
///
/// It is a description, not the bytes: a background form's files are read by ferryd each time the
/// upload is sent, as a plain background upload's file is.
public struct FormField: Sendable, Hashable, Codable {
    /// The field's name.
    public var name: String
    /// A text value (nil for a file part).
    public var value: String?
    /// A file part: the absolute path of the file whose bytes are the part (nil for a text value).
    public var file: String?
    /// The file name sent (only its last path component leaves the machine); nil: the file's own name,
    /// or none for a text value.
    public var filename: String?
    /// The part's media type; nil: none for a text value, application/octet-stream for a file.
    public var contentType: String?

    /// A text field.
    public init(name: String, value: String, filename: String? = nil, contentType: String? = nil) {
        self.name = name
        self.value = value
        self.filename = filename
        self.contentType = contentType
    }

    /// A file part.
    public init(name: String, file: String, filename: String? = nil, contentType: String? = nil) {
        self.name = name
        self.file = file
        self.filename = filename
        self.contentType = contentType
    }

    /// A field in curl's `--form` syntax: `name=value`, or `name=@path` for a file, either followed by
    /// `;type=MIME` and `;filename=NAME` (other `;…` text is part of the value, as in curl). A file part
    /// without a type gets the one curl guesses from its extension (``contentType(forFile:)``). The
    /// path is kept as written: make it absolute before handing the field to another process.
    /// - Throws: ``FerryError/Code/invalidOperation`` with a message for a field without `name=`, or an
    ///   empty or multi-line media type.
    public init(curlSyntax field: String) throws {
        guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
            throw FerryError(.invalidOperation, "a form field must look like name=value or name=@file, not '\(field)'")
        }
        name = String(field[..<equals])
        var rest = String(field[field.index(after: equals)...])
        while let semicolon = rest.lastIndex(of: ";") {
            let attribute = rest[rest.index(after: semicolon)...]
            if attribute.hasPrefix("type=") {
                contentType = String(attribute.dropFirst("type=".count))
            } else if attribute.hasPrefix("filename=") {
                filename = String(attribute.dropFirst("filename=".count))
            } else {
                break
            }
            rest = String(rest[..<semicolon])
        }
        if let contentType, !Self.isOneLine(contentType) {
            throw FerryError(.invalidOperation, "';type=' needs a media type such as text/plain, not '\(contentType)'")
        }
        if rest.hasPrefix("@") {
            let path = String(rest.dropFirst())
            file = path
            contentType = contentType ?? Self.contentType(forFile: path)
        } else {
            value = rest
        }
    }

    /// Checks what a form sent by another process must be: a name, exactly one of a value and a file,
    /// a file given by its absolute path, and a media type on one line.
    /// - Throws: ``FerryError/Code/invalidOperation`` saying which field is wrong and how.
    public func validate() throws {
        guard !name.isEmpty else { throw FerryError(.invalidOperation, "a form field needs a name") }
        guard (value == nil) != (file == nil) else {
            throw FerryError(.invalidOperation, "the form field '\(name)' needs either a value or a file, not both or neither")
        }
        // By bytes, not characters: "/" or NUL followed by a combining mark is one Character.
        if let file, file.utf8.first != UInt8(ascii: "/") || file.utf8.contains(0) {
            throw FerryError(.invalidOperation, "the form field '\(name)' names its file by an absolute path, not '\(file)'")
        }
        if let contentType, !Self.isOneLine(contentType) {
            throw FerryError(.invalidOperation, "the form field '\(name)' has a media type that is empty or not on one line")
        }
    }

    /// Not empty, and without CR, LF or NUL (checked by bytes: "\r\n" is one Character, equal to neither).
    static func isOneLine(_ text: String) -> Bool {
        !text.isEmpty && !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }

    /// The media type curl gives a file part by its extension (curl's short table), else
    /// application/octet-stream.
    public static func contentType(forFile path: String) -> String {
        let table = [
            "gif": "image/gif", "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "svg": "image/svg+xml",
            "txt": "text/plain", "htm": "text/html", "html": "text/html", "pdf": "application/pdf",
            "xml": "application/xml",
        ]
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        return table[name[name.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }
}
