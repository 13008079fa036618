public import Foundation
import RawStructuredFieldValues

/// The client's side of the IETF draft "Resumable Uploads for HTTP" (draft-ietf-httpbis-resumable-upload;
/// SPEC S4.6), as pure functions: the header fields of each request for an interop version, and what the
/// server's answers say. ``ResumableUploader`` (FerryEngine) does the I/O.
///
/// The procedure Ferry follows: feature detection with OPTIONS (a server that supports the draft answers
/// with `Upload-Limit` or `Upload-Draft-Interop-Version`); upload creation with `Upload-Complete: ?0` and an
/// empty body (201 and the upload's `Location` — so the resource exists before a byte is at risk; an
/// interrupted creation request leaves nothing to resume); appends with PATCH and `Upload-Offset`; the
/// offset retrieved with HEAD after an interruption; 409 answered by moving to the server's offset; DELETE
/// to cancel.
public enum ResumableUploadProtocol {
    /// The interop versions: 6 (the current one, the default), and 5 and 3, which Apple's URLSession sends.
    public enum Version: Int, Sendable, Hashable, Codable, CaseIterable {
        case v3 = 3
        case v5 = 5
        case v6 = 6

        /// The version Ferry sends unless told otherwise.
        public static let latest = Version.v6
    }

    /// Header fields a request to the upload carries: the interop version.
    public static func baseFields(_ version: Version) -> [(name: String, value: String)] {
        [("Upload-Draft-Interop-Version", String(version.rawValue))]
    }

    /// "This request ends the upload" or not: `Upload-Complete` (5 and later) or `Upload-Incomplete` (3).
    public static func completionField(_ complete: Bool, _ version: Version) -> (name: String, value: String) {
        version == .v3 ? ("Upload-Incomplete", complete ? "?0" : "?1") : ("Upload-Complete", complete ? "?1" : "?0")
    }

    /// The fields of the creation request (its body empty: the bytes follow in appends).
    public static func creationFields(_ version: Version) -> [(name: String, value: String)] {
        baseFields(version) + [completionField(false, version)]
    }

    /// The fields of an append at `offset`; `complete` when it carries the last byte.
    public static func appendFields(
        offset: Int64,
        complete: Bool,
        _ version: Version
    ) -> [(name: String, value: String)] {
        var fields = baseFields(version) + [("Upload-Offset", String(offset)), completionField(complete, version)]
        if version.rawValue >= Version.v6.rawValue { fields.append(("Content-Type", "application/partial-upload")) }
        return fields
    }

    /// Whether an OPTIONS answer says the server speaks the draft.
    public static func isSupported(optionsResponse headers: Headers) -> Bool {
        headers["upload-draft-interop-version"] != nil || headers["upload-limit"] != nil
    }

    /// The `Upload-Offset` of an answer: a structured-field integer (RFC 9651) that is not negative,
    /// else nil.
    public static func offset(_ headers: Headers) -> Int64? {
        guard let value = headers["upload-offset"], case .integer(let offset)? = item(value)?.rfc9651BareItem,
            offset >= 0
        else { return nil }
        return offset
    }

    /// Whether an answer says the upload is complete (`Upload-Complete: ?1`, or `Upload-Incomplete: ?0`);
    /// nil when it does not say.
    public static func isComplete(_ headers: Headers) -> Bool? {
        if let value = headers["upload-complete"] { return Self.boolean(value) }
        if let value = headers["upload-incomplete"] { return Self.boolean(value).map { !$0 } }
        return nil
    }

    /// The upload's URL from a creation answer's `Location`, resolved against the request's URL.
    public static func location(_ headers: Headers, relativeTo url: URL) -> URL? {
        guard let value = headers["location"], let location = URL(string: value, relativeTo: url)?.absoluteURL,
            let scheme = location.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        return location
    }

    /// A structured-field boolean (`?1`, `?0`; parameters allowed, RFC 9651 §3.3.6); nil for anything else.
    private static func boolean(_ value: String) -> Bool? {
        guard case .bool(let flag)? = item(value)?.rfc9651BareItem else { return nil }
        return flag
    }

    /// `value` as a structured-field item, or nil when it is not one. Parsed by
    /// swift-http-structured-headers (RawStructuredFieldValues), not by hand.
    static func item(_ value: String) -> Item? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        return try? parser.parseItemFieldValue()
    }
}

/// The `Upload-Limit` a server announces (a structured-field dictionary of integers): what sizes it
/// accepts. Ferry fails an upload larger than ``maximumSize`` before sending it, and splits appends to
/// ``maximumAppendSize``.
public struct UploadLimit: Sendable, Hashable, Codable {
    /// `max-size`: the largest upload.
    public var maximumSize: Int64?
    /// `min-size`: the smallest upload.
    public var minimumSize: Int64?
    /// `max-append-size`: the largest append.
    public var maximumAppendSize: Int64?
    /// `min-append-size`: the smallest append (except the last).
    public var minimumAppendSize: Int64?
    /// `max-age`: seconds the server keeps an incomplete upload.
    public var maximumAge: Int64?

    /// Parses the structured-field dictionary `max-size=1000, max-append-size=100` (RFC 9651, by
    /// swift-http-structured-headers); unknown keys are ignored; nil when the value is not a dictionary,
    /// or a known key's value is not a non-negative integer.
    public init?(_ value: String) {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return nil }
        for (key, member) in dictionary {
            let known = ["max-size", "min-size", "max-append-size", "min-append-size", "max-age"]
            guard known.contains(key) else { continue }
            guard case .item(let item) = member, case .integer(let number) = item.rfc9651BareItem, number >= 0 else {
                return nil
            }
            switch key {
            case "max-size": maximumSize = number
            case "min-size": minimumSize = number
            case "max-append-size": maximumAppendSize = number
            case "min-append-size": minimumAppendSize = number
            default: maximumAge = number
            }
        }
    }

    /// The length of the next append from `offset` of a `length`-byte upload.
    public func appendLength(from offset: Int64, of length: Int64) -> Int64 {
        let remaining = max(0, length - offset)
        guard let maximumAppendSize, maximumAppendSize > 0 else { return remaining }
        return min(remaining, maximumAppendSize)
    }
}

/// Where a resumable upload stands: what ``ResumeData`` carries for an upload, and ferryd records.
public struct UploadResumption: Sendable, Hashable, Codable {
    /// The upload resource the server created (its `Location`).
    public var location: URL
    /// The interop version the upload was created with.
    public var version: ResumableUploadProtocol.Version
    /// Bytes the server has confirmed (it may have more: ask with HEAD).
    public var offset: Int64
    /// The whole upload's length.
    public var length: Int64
    /// The server's limits, if it announced any.
    public var limit: UploadLimit?

    /// An upload at `location` with `offset` of `length` bytes confirmed.
    public init(
        location: URL,
        version: ResumableUploadProtocol.Version,
        offset: Int64,
        length: Int64,
        limit: UploadLimit? = nil
    ) {
        self.location = location
        self.version = version
        self.offset = offset
        self.length = length
        self.limit = limit
    }
}
