import FerryCore
import Foundation
import HTTPTypes
import Testing

@Suite struct HeadersTests {
    @Test func namesCompareIgnoringOnlyASCIICase() {
        #expect(Headers.sameName("Content-Length", "content-length"))
        #expect(Headers.sameName("X-A_B.1", "x-a_b.1"))
        #expect(!Headers.sameName("Content-Length", "content-lengt"))
        // '-' | 0x20 is itself and CR | 0x20 is '-': only letters may differ by case.
        #expect(!Headers.sameName("a-b", "a\rb"))
        #expect(!Headers.sameName("a@b", "a`b"))
        #expect(!Headers.sameName("ß", "SS"))
    }

    @Test func asciiLowercasingLeavesOtherCharactersAlone() {
        #expect("HTTPS".asciiLowercased == "https")
        #expect("Example.COM".asciiLowercased == "example.com")
        #expect("already-lower".asciiLowercased == "already-lower")
        #expect("ÄBC".asciiLowercased == "Äbc")
    }

    @Test func namesAreCaseInsensitiveAndOrderIsKept() {
        var headers: Headers = ["Accept": "a", "X-One": "1"]
        headers.add(name: "x-one", value: "2")
        #expect(headers["ACCEPT"] == "a")
        #expect(headers.values("X-ONE") == ["1", "2"])
        headers["x-one"] = "3"
        #expect(headers.values("X-One") == ["3"])
        headers["accept"] = nil
        #expect(!headers.contains("Accept"))
        #expect(headers.fields.map(\.name) == ["X-One"])
    }

    /// Ferry's token rule is swift-http-types' (`HTTPField.Name`): on every byte alone, after a letter,
    /// and on random names over all of ASCII and some bytes beyond.
    @Test func tokensAreTheTokensOfHTTPTypes() {
        for byte in UInt8(0)...UInt8(255) {
            for text in [String(decoding: [byte], as: UTF8.self), String(decoding: [UInt8(ascii: "a"), byte], as: UTF8.self)] {
                #expect(Headers.isToken(text) == (HTTPField.Name(text) != nil), "\(Array(text.utf8))")
            }
        }
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(UInt8(0)...UInt8(127)) + [0xc3, 0xa9, 0xff]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...12, using: &generator)
            // Mostly token bytes, so that long valid names come up as well as invalid ones.
            let bytes = (0..<length).map { _ in
                Bool.random(using: &generator) ? Array("aZ09-_.~!|`^".utf8).randomElement(using: &generator)! : alphabet.randomElement(using: &generator)!
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(Headers.isToken(text) == (HTTPField.Name(text) != nil), "\(Array(text.utf8))")
        }
        #expect(Headers.isToken("User-Agent") && Headers.isToken("GET") && !Headers.isToken("") && !Headers.isToken("a b"))
    }

    @Test(arguments: [
        ("X-Bad", "a\r\nInjected: yes"), ("X-Bad", "line\nbreak"), ("X-Bad", "nul\u{0}"), ("Bad Name", "v"), ("", "v"),
        ("Bad:Name", "v"),
    ])
    func refusesWhatCouldInjectHeaders(name: String, value: String) {
        #expect(throws: FerryError.self) { try Headers.validate(name: name, value: value) }
        do {
            try Headers([(name, value)]).validate()
            Issue.record("accepted \(String(reflecting: name)): \(String(reflecting: value))")
        } catch let error as FerryError {
            #expect(error.code == .invalidHeader)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func readsContentLength() {
        #expect(Headers([("Content-Length", "42")]).contentLength == 42)
        #expect(Headers([("content-length", "-1")]).contentLength == nil)
        #expect(Headers([("Content-Length", "many")]).contentLength == nil)
        #expect(Headers().contentLength == nil)
    }

    @Test func acceptsOrdinaryFields() throws {
        try Headers([("Accept", "*/*"), ("X-Custom_Name.1", "value with spaces; and=symbols")]).validate()
    }
}

@Suite struct ResumeDataTests {
    @Test func roundTripsThroughItsEncoding() throws {
        var request = Request(url: URL(string: "http://127.0.0.1:8080/bytes/100?seed=1")!)
        request.headers["X-Test"] = "1"
        let resumeData = ResumeData(
            originalRequest: request,
            currentRequest: request,
            bytesReceived: 40,
            expectedLength: 100,
            entityTag: "\"e\"",
            lastModified: "Mon, 01 Jan 2024 00:00:00 GMT",
            partialFilePath: "/tmp/p"
        )
        let decoded = try ResumeData(encoded: resumeData.encoded())
        #expect(decoded == resumeData)
        // Without segments, version 1: readable by a Ferry that predates segmented downloads.
        #expect(decoded.version == 1)
        #expect(decoded.url == request.url)
        let json = String(decoding: resumeData.encoded(), as: UTF8.self)
        #expect(json.contains("\"bytesReceived\":40"))
    }

    @Test func refusesGarbageAndFutureVersions() throws {
        for bytes in [Data("not json".utf8), Data("{\"version\":99}".utf8), Data("{\"version\":1}".utf8)] {
            #expect {
                try ResumeData(encoded: bytes)
            } throws: { error in
                (error as? FerryError)?.code == .invalidResumeData
            }
        }
    }
}

@Suite struct FerryErrorTests {
    @Test func codesMirrorURLError() {
        #expect(FerryError.Code.cancelled.rawValue == -999)
        #expect(FerryError.Code.timedOut.rawValue == -1001)
        #expect(FerryError.Code.cannotConnectToHost.rawValue == -1004)
        #expect(FerryError.Code.networkConnectionLost.rawValue == -1005)
        #expect(FerryError.Code.badServerResponse.rawValue == -1011)
        #expect(FerryError.Code.invalidHeader.rawValue > 0)
    }

    @Test func describesItself() {
        let error = FerryError(.timedOut, "no data for 60 s", failingURL: "http://x/")
        #expect(error.description == "FerryError.timedOut: no data for 60 s (http://x/)")
        #expect(error.shortDescription == "timedOut")
    }
}
