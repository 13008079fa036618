import FerryCore
import Foundation
import Testing

/// The control API's syntax rules are the ones docs/openapi.json states, and they say what they should.
@Suite struct ControlAPISyntaxTests {
    /// docs/openapi.json, found from this file's place in the repository.
    private func document() throws -> [String: Any] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("docs/openapi.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theDocumentStatesTheDaemonsURLRule() throws {
        let components = try #require(try document()["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        let request = try #require(schemas["Request"] as? [String: Any])
        let properties = try #require(request["properties"] as? [String: Any])
        let url = try #require(properties["url"] as? [String: Any])
        #expect(url["pattern"] as? String == ControlAPI.urlPattern)
    }

    /// A creation's JSON keys, its own and its options', are the properties docs/openapi.json gives
    /// TaskCreation: a new option that the document does not describe (or one it describes that the
    /// type lacks) fails here. The creation sets every field, which reflection checks.
    @Test func aCreationsKeysAreTheDocumentsProperties() throws {
        let url = URL(string: "https://files.test/a")!
        var creation = ControlAPI.TaskCreation(
            kind: .download,
            request: Request(url: url),
            uploadFile: "/tmp/up",
            taskDescription: "d",
            priority: 0.5,
            resumeData: ResumeData(
                originalRequest: Request(url: url),
                currentRequest: Request(url: url),
                bytesReceived: 1,
                expectedLength: 2,
                entityTag: "\"e\"",
                lastModified: nil,
                partialFilePath: "/tmp/p"
            ),
            start: true,
            discretionary: false,
            resourceTimeout: 60
        )
        creation.chunks = 2
        creation.bandwidthLimit = 1000
        creation.taskIdentifier = 7
        creation.earliestBeginTime = 0
        creation.form = [FormField(name: "a", value: "1")]
        creation.requestBody = Data("q".utf8)
        creation.decodesContent = true
        creation.limits = TaskLimits(maximumRedirects: 1)
        creation.destination = "/tmp/d"
        creation.destinationMode = 0o600
        creation.connection = ConnectionSettings()
        for value in [creation as Any, creation.options] {
            let unset = Mirror(reflecting: value).children.filter { child in
                let inner = Mirror(reflecting: child.value)
                return inner.displayStyle == .optional && inner.children.isEmpty
            }
            #expect(unset.isEmpty, "set \(unset.compactMap(\.label)) in this test's creation")
        }
        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(creation)) as? [String: Any])
        let components = try #require(try document()["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        let schema = try #require(schemas["TaskCreation"] as? [String: Any])
        let documented = try #require(schema["properties"] as? [String: Any])
        #expect(Set(encoded.keys) == Set(documented.keys))
        // And back: the same creation, options included.
        #expect(try JSONDecoder().decode(ControlAPI.TaskCreation.self, from: JSONEncoder().encode(creation)) == creation)
    }

    @Test(arguments: [
        "http://example.com", "HTTPS://example.com:8443/a/b?c=d&e#f", "http://127.0.0.1:65535/",
        "http://[::1]:8080/x", "http://h/%20space", "https://a.b/p?q=%7Bx%7D",
    ])
    func urlsTheAPIAccepts(_ text: String) {
        #expect(ControlAPI.isHTTPURL(text))
    }

    @Test(arguments: [
        "", "ftp://example.com", "http://", "http://host:0/", "http://host:65536/", "http://a b/", "http://%41/",
        "http://h/%zz", "http://h/a^b", "http://h/#a#b", "example.com/x", "http://h/\r\n",
    ])
    func urlsTheAPIRefuses(_ text: String) {
        #expect(!ControlAPI.isHTTPURL(text))
    }

    /// The byte scanner says what the pattern says, on strings built to come near its edges: every
    /// prefix followed by every pair of pieces, and by one triple in five.
    @Test func theURLCheckAgreesWithThePatternAsARegex() throws {
        let regex = try Regex(ControlAPI.urlPattern)
        let prefixes = ["http://", "https://", "HTTP://", "", "http:/"]
        let pieces = [
            "http", "HTTPS", "hTtP", "://", ":", "/", "//", "?", "#", "[", "]", "::1", "%", "%4", "%41", "%zz", "@", "a",
            "Z", "0", "00", "8080", "65535", "65536", "99999", "123456", "~", "-", ".", "!", "$", "&", "'", "(", "*",
            "+", ",", ";", "=", " ", "^", "é", "\n", "\u{301}", "fe80::1", "127.0.0.1", "example.com",
        ]
        var checked = 0
        var accepted = 0
        for prefix in prefixes {
            for (i, first) in pieces.enumerated() {
                for (j, second) in pieces.enumerated() {
                    var texts = [prefix + first + second]
                    if (i + j) % 5 == 0 { texts.append(prefix + first + second + pieces[(i * 7 + j) % pieces.count]) }
                    for text in texts {
                        let expected = text.wholeMatch(of: regex) != nil
                        #expect(ControlAPI.isHTTPURL(text) == expected, "\(text.debugDescription)")
                        checked += 1
                        if expected { accepted += 1 }
                    }
                }
            }
        }
        #expect(checked > 10_000)
        #expect(accepted > 1_000, "enough of the strings are URLs to test acceptance too")
    }

    @Test func backgroundIdentifiersArePrintableASCIIWithoutSlashOrPercent() {
        #expect(SessionConfiguration.isValidBackgroundIdentifier("com.example.sync"))
        #expect(SessionConfiguration.isValidBackgroundIdentifier(String(repeating: "a", count: 255)))
        for bad in ["", String(repeating: "a", count: 256), "a/b", "a%41", "é", "a\nb", "a\u{0}"] {
            #expect(!SessionConfiguration.isValidBackgroundIdentifier(bad), "\(bad.debugDescription)")
        }
    }
}
