@testable import FerryFoundationNetworking
import FerryTestServer
import Foundation
import Testing

/// This module's own `URLResponse`, `HTTPURLResponse` and `CachedURLResponse`, checked against
/// FoundationNetworking's classes on the same input (the sameness programs check responses the engine
/// made).
@Suite struct URLResponseTests {
    @Test func namesAreCapitalisedAsFoundationCapitalisesThem() {
        // Every token character (RFC 9110 §5.6.2), letters of both cases and digits weighted up.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-----!#$%&'*+.^_`|~")
        var random = SeededGenerator(seed: 7)
        for _ in 0..<5000 {
            let name = String((0..<Int.random(in: 1...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let ours = HeaderFieldName.canonical(name)
            let expected: String =
                if name.lowercased().hasPrefix("x-") { name } else if name.lowercased() == "www-authenticate" { "WWW-Authenticate" } else { name.capitalized }
            #expect(ours == expected, "\(name)")
        }
        #expect(HeaderFieldName.canonical("content-type") == "Content-Type")
        #expect(HeaderFieldName.canonical("www-AUTHENTICATE") == "WWW-Authenticate")
        #expect(HeaderFieldName.canonical("x-request-ID") == "x-request-ID")
        #expect(HeaderFieldName.canonical("ünïcode") == "ünïcode".capitalized)
    }

    static let fieldSets: [[String: String]] = [
        [:],
        ["content-type": "text/html; charset=ISO-8859-4", "content-length": "120", "etag": "\"a\"", "x-lower": "1"],
        ["Content-Type": "application/json", "Content-Length": "not a number", "WWW-authenticate": "Basic realm=\"r\""],
        ["CONTENT-TYPE": "Text/Plain;charset=\"UTF-8\"; format=flowed", "content-md5": "Q2hlY2s=", "X-Upper": "Y"],
        ["content-type": "multipart/form-data; boundary=\"a;b\"; charset=utf-8", "p3p": "CP", "a_b": "1", "dnt": "1"],
        ["Content-Type": "", "Content-Length": "-1", "Content-Disposition": "attachment; filename=\"../x/y.txt\""],
        ["content-disposition": "inline; filename=report.pdf", "content-type": "application/pdf"],
    ]

    @Test(arguments: fieldSets)
    func aResponseShowsWhatFoundationNetworkingsShows(_ fields: [String: String]) throws {
        let url = URL(string: "https://example.invalid/dir/file.bin?q=1")!
        let ours = try #require(HTTPURLResponse(url: url, statusCode: 206, httpVersion: "HTTP/1.1", headerFields: fields))
        let made = FoundationNetworking.HTTPURLResponse(url: url, statusCode: 206, httpVersion: "HTTP/1.1", headerFields: fields)
        let theirs = try #require(made)
        #expect(ours.statusCode == theirs.statusCode)
        #expect(ours.url == theirs.url)
        #expect(ours.allHeaderFields as? [String: String] == theirs.allHeaderFields as? [String: String])
        #expect(ours.mimeType == theirs.mimeType)
        #expect(ours.textEncodingName == theirs.textEncodingName)
        #expect(ours.expectedContentLength == theirs.expectedContentLength)
        for name in fields.keys + ["Content-Type", "CONTENT-LENGTH", "missing"] {
            #expect(ours.value(forHTTPHeaderField: name) == theirs.value(forHTTPHeaderField: name), "\(name)")
        }
        if fields.keys.contains(where: { $0.lowercased() == "content-disposition" }) {
            #expect(ours.suggestedFilename == theirs.suggestedFilename)
        } else {
            // Apple: the URL's last path component; FoundationNetworking says "Unknown".
            #expect(ours.suggestedFilename == "file.bin")
        }
    }

    @Test func fieldsOfOneNameInAnyCaseAreOneField() throws {
        let response = HTTPURLResponse(url: URL(string: "http://a.invalid/")!, statusCode: 200, fields: ["Vary": "Accept", "vary": "Cookie", "X-A": "1"])
        #expect(response.value(forHTTPHeaderField: "VARY") == "Accept, Cookie")
        #expect(response.allHeaderFields as? [String: String] == ["Vary": "Accept, Cookie", "X-A": "1"])
        // Apple: with no last path component, the host names the file.
        #expect(response.suggestedFilename == "a.invalid")
    }

    @Test func parameterNamesAreCaseInsensitive() throws {
        // RFC 9110 §5.6.6; FoundationNetworking looks for "charset" and "filename" in lower case only.
        let fields = ["Content-Type": "text/plain; Charset=UTF-8", "Content-Disposition": "attachment; FileName=\"a.txt\""]
        let response = try #require(HTTPURLResponse(url: URL(string: "http://a.invalid/x")!, statusCode: 200, httpVersion: nil, headerFields: fields))
        #expect(response.textEncodingName == "utf-8")
        #expect(response.suggestedFilename == "a.txt")
    }

    @Test func statusPhrasesAreFoundationNetworkings() {
        for code in [0, 99, 600, 999] + Array(100..<600) {
            let theirs = FoundationNetworking.HTTPURLResponse.localizedString(forStatusCode: code)
            #expect(HTTPURLResponse.localizedString(forStatusCode: code) == theirs, "\(code)")
        }
    }

    @Test func aPlainResponseKeepsWhatItWasGiven() {
        let response = URLResponse(url: URL(string: "file:///tmp/notes.txt")!, mimeType: "text/plain", expectedContentLength: 42, textEncodingName: "utf-8")
        #expect(response.mimeType == "text/plain")
        #expect(response.expectedContentLength == 42)
        #expect(response.textEncodingName == "utf-8")
        #expect(response.suggestedFilename == "notes.txt")
        #expect(response.copy() as AnyObject === response)
        let same = URLResponse(url: URL(string: "file:///tmp/notes.txt")!, mimeType: "text/plain", expectedContentLength: 42, textEncodingName: "utf-8")
        #expect(response.isEqual(same) && response.hash == same.hash)
        #expect(!response.isEqual(URLResponse(url: URL(string: "file:///tmp/notes.txt")!, mimeType: "text/html", expectedContentLength: 42, textEncodingName: "utf-8")))
    }

    @Test func responsesSurviveKeyedArchiving() throws {
        let url = URL(string: "https://example.invalid/a/b.json")!
        let response = try #require(HTTPURLResponse(url: url, statusCode: 404, httpVersion: nil, headerFields: ["content-type": "application/json; charset=utf-8", "X-Id": "7"]))
        let cached = CachedURLResponse(response: response, data: Data("{}".utf8), userInfo: nil, storagePolicy: .allowedInMemoryOnly)
        let archive = try NSKeyedArchiver.archivedData(withRootObject: cached, requiringSecureCoding: true)
        let back = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClasses: [CachedURLResponse.self, HTTPURLResponse.self, URLResponse.self], from: archive) as? CachedURLResponse)
        let http = try #require(back.response as? HTTPURLResponse)
        #expect(http.statusCode == 404)
        #expect(http.url == url)
        #expect(http.allHeaderFields as? [String: String] == ["Content-Type": "application/json; charset=utf-8", "X-Id": "7"])
        #expect(http.mimeType == "application/json")
        #expect(back.data == Data("{}".utf8))
        #expect(back.storagePolicy == .allowedInMemoryOnly)
        #expect(back.isEqual(cached))
    }
}
