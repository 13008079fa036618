public import Foundation

/// An HTTP response head as a task reports it (HTTPURLResponse).
public struct Response: Sendable, Hashable {
    /// The URL the response came from (after redirects).
    public var url: URL
    /// The status code.
    public var statusCode: Int
    /// The header fields, in the order received.
    public var headers: Headers

    /// Creates a response.
    public init(url: URL, statusCode: Int, headers: Headers) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
    }

    /// The body length the server announced (Content-Length), or nil when it did not.
    public var expectedContentLength: Int64? { headers.contentLength }

    /// The media type of Content-Type without parameters, lower-cased (`text/html`), if any.
    public var mimeType: String? {
        guard let value = headers["content-type"] else { return nil }
        let type = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? value
        let trimmed = type.trimmingCharacters(in: .whitespaces).lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The `charset` parameter of Content-Type, if any.
    public var textEncodingName: String? {
        guard let value = headers["content-type"] else { return nil }
        for parameter in value.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else {
                continue
            }
            return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"")).lowercased()
        }
        return nil
    }

    /// A file name for the body: from Content-Disposition when it names one, else the URL's last path
    /// component, else `index.html`. Always a plain name by ``SafeFilename``'s rules: never a path,
    /// never hidden (a leading dot), no control or bidirectional characters.
    public var suggestedFilename: String {
        if let disposition = headers["content-disposition"],
            let name = Self.filename(fromContentDisposition: disposition)
        {
            return name
        }
        return Self.sanitizedFilename(url.lastPathComponent) ?? "index.html"
    }

    /// The `filename` parameter of a Content-Disposition value, made safe by ``SafeFilename``, if it
    /// has a usable one.
    public static func filename(fromContentDisposition value: String) -> String? {
        for parameter in value.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "filename" else {
                continue
            }
            let raw = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \""))
            return sanitizedFilename(raw)
        }
        return nil
    }

    /// `name` made safe to name a local file by ``SafeFilename``'s rules (no path, no control or
    /// bidirectional characters, no leading dot, not one of Ferry's own suffixes); nil when nothing
    /// usable is left.
    public static func sanitizedFilename(_ name: String) -> String? {
        SafeFilename.sanitize(name)
    }
}
