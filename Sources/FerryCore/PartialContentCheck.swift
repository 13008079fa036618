import Foundation

/// A `206 Partial Content` is part of a resource, and only the answer to a request for that part
/// (RFC 9110 §15.3.7): a server that sends one to a request without `Range`, or from another offset
/// than asked, must not have its bytes saved as the file (a hostile or broken server made downloads
/// "succeed" with a fragment).
public enum PartialContentCheck {
    /// Why a 206 answer cannot be taken for what `requestedRange` (the request's `Range`, nil for none)
    /// asked for, in words, or nil when it can.
    public static func problem(requestedRange: String?, headers: Headers) -> String? {
        guard let requestedRange else {
            return "the server answered 206 Partial Content to a request for the whole file, so its bytes are only part of it"
        }
        // One range with a first byte ("bytes=100-" or "bytes=100-199"): the answer must start there.
        guard let first = firstByte(of: requestedRange) else { return nil }
        guard let value = headers["content-range"], let range = ContentRange(value) else {
            if let type = headers["content-type"], type.lowercased().hasPrefix("multipart/byteranges") {
                return "the server sent several ranges (multipart/byteranges) for one range asked for"
            }
            return "the server answered 206 Partial Content without a usable Content-Range"
        }
        if range.first != first {
            return "the server sent bytes from \(range.first), but the request asked for them from \(first)"
        }
        if let length = headers.contentLength, length != range.last - range.first + 1 {
            return "Content-Length \(length) does not match the Content-Range \(value)"
        }
        return nil
    }

    /// The first byte of a single `bytes=FIRST-[LAST]` range, or nil for anything else (a suffix range,
    /// several ranges, another unit).
    static func firstByte(of range: String) -> Int64? {
        let value = range.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        return Int64(spec[..<dash].trimmingCharacters(in: .whitespaces))
    }
}
