import FerryCore
public import Foundation
import Synchronization

/// A response's metadata, independent of its protocol: Apple's `URLResponse`.
///
/// This module declares its own class rather than re-using FoundationNetworking's: FoundationNetworking's
/// `HTTPURLResponse` rewrites every field name when it is made (its properties are `public`, not
/// `open`, so a subclass cannot do it later), which was the dearest step of a small request (see
/// docs/FOUNDATION_NETWORKING.md, "Speed and cost"). Here an HTTP response keeps Ferry's fields as they
/// came and works out the rest when it is first asked.
open class URLResponse: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// What a response says about its body.
    struct Metadata: Sendable {
        var mimeType: String?
        var expectedContentLength: Int64
        var textEncodingName: String?
        var suggestedFilename: String?
    }

    private let storedURL: URL?
    private let stored: Metadata?

    /// A response for `url` with this metadata (the designated initializer); `length` is -1 when not
    /// known.
    public init(url: URL, mimeType: String?, expectedContentLength length: Int, textEncodingName name: String?) {
        storedURL = url
        stored = Metadata(
            mimeType: mimeType,
            expectedContentLength: Int64(length),
            textEncodingName: name,
            suggestedFilename: Self.filename(from: url)
        )
        super.init()
    }

    /// Apple's rule for a file name without a `Content-Disposition`: the URL's last path component,
    /// else its host, else "Unknown" (FoundationNetworking gives "Unknown" for every HTTP response
    /// without one, and "/" for a URL ending in a slash).
    static func filename(from url: URL?) -> String {
        let last = url?.lastPathComponent ?? ""
        if !last.isEmpty, last != "/" { return last }
        if let host = url?.host(percentEncoded: false), !host.isEmpty { return host }
        return "Unknown"
    }

    /// For a subclass that works its metadata out itself (it overrides ``metadata``).
    init(derivingMetadataFor url: URL?) {
        storedURL = url
        stored = nil
        super.init()
    }

    /// The metadata: given to the initializer, or worked out by the subclass.
    var metadata: Metadata {
        stored ?? Metadata(mimeType: nil, expectedContentLength: -1, textEncodingName: nil, suggestedFilename: "Unknown")
    }

    /// The URL of the response.
    open var url: URL? { storedURL }

    /// The MIME type of the body, lower-cased, from the `Content-Type` field for HTTP.
    open var mimeType: String? { metadata.mimeType }

    /// The body's length as announced, or -1 when the response did not say.
    open var expectedContentLength: Int64 { metadata.expectedContentLength }

    /// The body's text encoding (the `charset` parameter), lower-cased, or nil.
    open var textEncodingName: String? { metadata.textEncodingName }

    /// A file name for the body: the `Content-Disposition` filename, else the URL's last path
    /// component, else its host, else "Unknown" (Apple's rule; Apple also adds an extension by type,
    /// which this module does not).
    open var suggestedFilename: String? { metadata.suggestedFilename }

    // MARK: Coding and copying

    public static var supportsSecureCoding: Bool { true }

    /// Decodes what ``encode(with:)`` wrote (keyed coding only, as Foundation's).
    public required init?(coder: NSCoder) {
        guard coder.allowsKeyedCoding, let url = coder.decodeObject(of: NSURL.self, forKey: "NS.url") else { return nil }
        storedURL = url as URL
        let filename = (coder.decodeObject(of: NSString.self, forKey: "NS.suggestedFilename") as String?).map { ($0 as NSString).lastPathComponent }
        stored = Metadata(
            mimeType: coder.decodeObject(of: NSString.self, forKey: "NS.mimeType") as String?,
            expectedContentLength: coder.decodeInt64(forKey: "NS.expectedContentLength"),
            textEncodingName: coder.decodeObject(of: NSString.self, forKey: "NS.textEncodingName") as String?,
            suggestedFilename: filename.flatMap { $0.isEmpty ? nil : $0 } ?? "Unknown"
        )
        super.init()
    }

    /// Encodes the URL and metadata under Foundation's keys.
    open func encode(with coder: NSCoder) {
        guard coder.allowsKeyedCoding else { return }
        coder.encode(url.map { NSURL(string: $0.absoluteString) }, forKey: "NS.url")
        coder.encode(mimeType.map { NSString(string: $0) }, forKey: "NS.mimeType")
        coder.encode(expectedContentLength, forKey: "NS.expectedContentLength")
        coder.encode(textEncodingName.map { NSString(string: $0) }, forKey: "NS.textEncodingName")
        coder.encode(suggestedFilename.map { NSString(string: $0) }, forKey: "NS.suggestedFilename")
    }

    /// The response itself: responses do not change.
    open override func copy() -> Any { copy(with: nil) }

    /// The response itself: responses do not change.
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Equal when URL, length, MIME type and encoding are (as Foundation compares responses).
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? URLResponse else { return false }
        return other === self
            || (url == other.url && expectedContentLength == other.expectedContentLength && mimeType == other.mimeType
                && textEncodingName == other.textEncodingName)
    }

    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(url)
        hasher.combine(expectedContentLength)
        hasher.combine(mimeType)
        hasher.combine(textEncodingName)
        return hasher.finalize()
    }
}

/// An HTTP response's metadata: its status and header fields (Apple's `HTTPURLResponse`).
///
/// `allHeaderFields` names each field as FoundationNetworking and Darwin do: capitalised
/// (`Content-Type`), except `X-` fields as they came and `WWW-Authenticate`; fields of one name are
/// joined with ", ". Responses Ferry makes keep the fields as received and build that dictionary, the
/// MIME type and the file name only when first asked.
open class HTTPURLResponse: URLResponse, @unchecked Sendable {
    /// What is worked out from the fields on first use.
    private struct Derived: Sendable {
        var fields: [String: String]
        var metadata: Metadata
    }

    private let status: Int
    /// The fields as given, in order; several may share a name.
    private let fields: Headers
    private let derived = Mutex<Derived?>(nil)

    /// A response for `url` with this status and these fields. `httpVersion` is accepted as Apple's
    /// initializer takes it (neither Apple's class nor FoundationNetworking's shows it). Never nil.
    public init?(url: URL, statusCode: Int, httpVersion: String?, headerFields: [String: String]?) {
        status = statusCode
        fields = Headers((headerFields ?? [:]).map { ($0.key, $0.value) })
        super.init(derivingMetadataFor: url)
    }

    /// A response Ferry received: its fields are kept as they are.
    init(url: URL, statusCode: Int, fields: Headers) {
        status = statusCode
        self.fields = fields
        super.init(derivingMetadataFor: url)
    }

    /// Decodes what ``encode(with:)`` wrote.
    public required init?(coder: NSCoder) {
        guard coder.allowsKeyedCoding else { return nil }
        status = coder.decodeInteger(forKey: "NS.statusCode")
        let stored = coder.decodeObject(of: NSDictionary.self, forKey: "NS.allHeaderFields") as? [AnyHashable: Any]
        fields = FoundationBridge.headers(stored ?? [:])
        super.init(coder: coder)
    }

    /// Encodes the URL, metadata, status and fields under Foundation's keys.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(statusCode, forKey: "NS.statusCode")
        coder.encode(NSDictionary(dictionary: allHeaderFields), forKey: "NS.allHeaderFields")
    }

    /// The HTTP status code.
    open var statusCode: Int { status }

    /// Every header field, by its canonical name (see the type's description).
    open var allHeaderFields: [AnyHashable: Any] { worked().fields }

    /// The value of the field named `field`, in any case; the values of several such fields joined
    /// with ", ".
    open func value(forHTTPHeaderField field: String) -> String? {
        var found: String?
        // Field names are ASCII tokens; a name given with other characters is compared as Foundation would.
        let unicode = field.utf8.contains { $0 >= 0x80 } ? field.lowercased() : nil
        for each in fields where Headers.sameName(each.name, field) || (unicode != nil && each.name.lowercased() == unicode) {
            found = found.map { $0 + ", " + each.value } ?? each.value
        }
        return found
    }

    override var metadata: Metadata { worked().metadata }

    /// A short English phrase for `statusCode` ("Not Found"; a class's name, "Client Error", for a code
    /// without one of its own), as Foundation gives.
    open class func localizedString(forStatusCode statusCode: Int) -> String {
        if let phrase = HTTPStatusPhrases.phrase[statusCode] { return phrase }
        switch statusCode {
        case 100...199: return "Informational"
        case 200...299: return "Success"
        case 300...399: return "Redirection"
        case 400...499: return "Client Error"
        default: return "Server Error"
        }
    }

    open override var description: String {
        var text = "<\(type(of: self)) \(Unmanaged.passUnretained(self).toOpaque())> { URL: \(url?.absoluteString ?? "") }{ status: \(statusCode), headers {\n"
        let all = worked().fields
        for name in all.keys.sorted() {
            text += "   \"\(name)\" = \"\(all[name] ?? "")\";\n"
        }
        return text + "} }"
    }

    /// The canonical dictionary and the metadata, made once.
    private func worked() -> Derived {
        if let done = derived.withLock({ $0 }) { return done }
        let made = Self.derive(fields, url: url)
        derived.withLock { if $0 == nil { $0 = made } }
        return made
    }

    private static func derive(_ fields: Headers, url: URL?) -> Derived {
        var canonical: [String: String] = [:]
        var byLowercased: [String: String] = [:]
        for field in fields where !field.name.isEmpty {
            let key = field.name.lowercased()
            if let name = byLowercased[key], let value = canonical[name] {
                canonical[name] = value + ", " + field.value
            } else {
                let name = HeaderFieldName.canonical(field.name)
                byLowercased[key] = name
                canonical[name] = field.value
            }
        }
        var metadata = Metadata(mimeType: nil, expectedContentLength: -1, textEncodingName: nil, suggestedFilename: nil)
        if let length = canonical["Content-Length"].flatMap({ Int64($0) }) { metadata.expectedContentLength = length }
        if let type = canonical["Content-Type"].flatMap(HeaderFieldValue.init) {
            metadata.mimeType = type.value.lowercased()
            metadata.textEncodingName = type.parameter("charset")?.lowercased()
        }
        if let disposition = canonical["Content-Disposition"].flatMap(HeaderFieldValue.init), let name = disposition.parameter("filename") {
            // As FoundationNetworking: path separators become "_", so the name is one component.
            metadata.suggestedFilename = (name as NSString).pathComponents.map { $0 == "/" ? "" : $0 }.joined(separator: "_")
        } else {
            metadata.suggestedFilename = URLResponse.filename(from: url)
        }
        return Derived(fields: canonical, metadata: metadata)
    }
}
