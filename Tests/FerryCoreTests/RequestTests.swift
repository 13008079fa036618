import FerryCore
import Foundation
import Testing

/// A request keeps its fields in one copy-on-write box (a copy is one retain, not one per field that
/// holds a reference): it must still behave as a value.
@Suite struct RequestTests {
    @Test func aCopyChangesApart() throws {
        var original = Request(url: try #require(URL(string: "http://example.com/a")))
        original.headers["X-A"] = "1"
        var copy = original
        #expect(copy == original)
        copy.url = try #require(URL(string: "http://example.com/b"))
        copy.method = "POST"
        copy.headers["X-A"] = "2"
        copy.headers.add(name: "X-B", value: "3")
        copy.connections = 4
        #expect(original.url.absoluteString == "http://example.com/a")
        #expect(original.method == "GET")
        #expect(original.headers.fields.count == 1)
        #expect(original.headers["x-a"] == "1")
        #expect(original.connections == 1)
        #expect(copy.headers["x-a"] == "2" && copy.headers["x-b"] == "3")
        #expect(copy != original)
    }

    @Test func printsItsFields() throws {
        var request = Request(url: try #require(URL(string: "http://example.com/a")))
        request.method = "DELETE"
        let printed = String(describing: request)
        #expect(printed.hasPrefix("Request(url: http://example.com/a, method: \"DELETE\""))
        #expect(!printed.contains("box"))
    }

    @Test func equalFieldsAreEqualInAnyBox() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        var one = Request(url: url)
        var other = Request(url: url)
        one.headers["Accept"] = "*/*"
        other.headers["Accept"] = "*/*"
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(Set([one, other]).count == 1)
        other.timeoutInterval = 5
        #expect(one != other)
    }

    @Test func survivesEncodingWithEveryField() throws {
        var request = Request(url: try #require(URL(string: "https://example.com/file.iso")))
        request.method = "PUT"
        request.headers["X-A"] = "1"
        request.timeoutInterval = 9
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.allowsCellularAccess = false
        request.connections = 3
        request.minimumSegmentSize = 4096
        request.resumableUpload = true
        request.assumesHTTP3Capable = true
        let decoded = try JSONDecoder().decode(Request.self, from: try JSONEncoder().encode(request))
        #expect(decoded == request)
    }

    @Test func refusesBadURLsAndHeaders() {
        func code(_ request: Request) -> FerryError.Code? {
            do {
                try request.validate()
                return nil
            } catch let error as FerryError {
                return error.code
            } catch {
                return nil
            }
        }
        #expect(code(Request(url: URL(string: "http://127.0.0.1/ok")!)) == nil)
        #expect(code(Request(url: URL(string: "ftp://127.0.0.1/x")!)) == .unsupportedURL)
        #expect(code(Request(url: URL(string: "relative/path")!)) == .badURL)
        var injected = Request(url: URL(string: "https://example.invalid/")!)
        injected.headers["X-Evil"] = "1\r\nHost: other"
        #expect(code(injected) == .invalidHeader)
        var method = Request(url: URL(string: "https://example.invalid/")!)
        method.method = "GET /x HTTP/1.1\r\n"
        #expect(code(method) == .invalidOperation)
    }

    @Test func hasAppleDefaults() {
        let request = Request(url: URL(string: "http://127.0.0.1/")!)
        #expect(request.method == "GET")
        #expect(request.timeoutInterval == 60)
        #expect(request.cachePolicy == .useProtocolCachePolicy)
        #expect(request.httpShouldHandleCookies)
        #expect(request.allowsCellularAccess)
    }
}
