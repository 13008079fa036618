// What an HTTPURLResponse shows of the fields a server sent: the names allHeaderFields gives them, the
// values of repeated fields, the MIME type, encoding and file name. Programs of the sameness suite,
// compiled against FoundationNetworking and against FerryFoundationNetworking like the rest.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SamenessPrograms {
    static let responsePrograms: [(name: String, program: Program)] = [
        ("allHeaderFields names fields as Darwin does", fieldNames),
        ("value(forHTTPHeaderField:) finds a field in any case", fieldLookup),
        ("a response's type, encoding and length come from its fields", typeAndEncoding),
        ("a Content-Disposition filename is the suggested file name", dispositionFilename),
    ]

    /// Fields a server sent, as `header=NAME:VALUE` knobs of the test server.
    static func withFields(_ path: String, _ fields: [String]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_.~"))
        return path + "?" + fields.map { "header=" + $0.addingPercentEncoding(withAllowedCharacters: allowed)! }.joined(separator: "&")
    }

    static func fields(of response: URLResponse?) -> [String] {
        guard let http = response as? HTTPURLResponse else { return ["response not HTTP"] }
        return http.allHeaderFields.compactMap { name, value in
            guard let name = name as? String, name != "Date" else { return nil }
            return "\(name): \(value)"
        }.sorted()
    }

    static func fieldNames(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let path = withFields(
            "/bytes/10",
            ["x-lower:1", "X-Mixed-Case:2", "content-md5:3", "www-authenticate:Basic realm=\"r\"", "p3p:CP=\"x\"", "accept_patch:4", "a1b2c:5", "ALL-CAPS:6", "dnt:7"]
        )
        let (_, response, error) = await dataTask(session, URLRequest(url: URL(string: origin + path)!))
        return fields(of: response) + [describe(error)]
    }

    static func fieldLookup(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let path = withFields("/bytes/10", ["Cache-Control:no-store", "cache-control:private", "X-Twice:a", "X-Twice:b", "x-token:t"])
        let (_, response, error) = await dataTask(session, URLRequest(url: URL(string: origin + path)!))
        let http = response as? HTTPURLResponse
        return ["CACHE-CONTROL", "x-twice", "X-TOKEN", "etag", "missing"].map { "\($0) \(http?.value(forHTTPHeaderField: $0) ?? "-")" } + [describe(error)]
    }

    static func typeAndEncoding(_ origin: String) async -> [String] {
        var lines: [String] = []
        // /bytes says `application/octet-stream`, /status/200 `text/html; charset=utf-8`, then a
        // second Content-Type (the two are joined, and the first one's charset runs on).
        let paths = ["/bytes/10", "/status/200", withFields("/status/200", ["Content-Type:Text/XML; Charset=\"ISO-8859-1\""])]
        for path in paths {
            let session = ephemeralSession()
            defer { session.finishTasksAndInvalidate() }
            let (_, response, _) = await dataTask(session, URLRequest(url: URL(string: origin + path)!))
            lines.append("\(path) mime \(response?.mimeType ?? "-") encoding \(response?.textEncodingName ?? "-") expected \(response?.expectedContentLength ?? -2)")
        }
        return lines
    }

    static func dispositionFilename(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var lines: [String] = []
        for disposition in ["attachment; filename=\"report.pdf\"", "attachment; filename=\"dir/name.bin\"", "inline; filename=plain.txt; size=3", "attachment", ""] {
            let allowed = CharacterSet.alphanumerics
            // Without a disposition, the name comes from the URL (Apple's documented rule).
            let path = disposition.isEmpty ? "/bytes/10" : "/bytes/10?disposition=" + disposition.addingPercentEncoding(withAllowedCharacters: allowed)!
            let (_, response, _) = await dataTask(session, URLRequest(url: URL(string: origin + path)!))
            lines.append("\(disposition) → \(response?.suggestedFilename ?? "-")")
        }
        return lines
    }
}
