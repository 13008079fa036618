import FerryCore
import Foundation
import Testing

/// Listings show credentials and query tokens as `<redacted>`, and nothing else changes.
@Suite struct RedactionTests {
    @Test func queryTokensAreHiddenAndTheRestStays() throws {
        let redaction = Redaction()
        let url = try #require(URL(string: "https://h/f.iso?X-Amz-Signature=abc&part=2&token=t0k#frag"))
        #expect(redaction.url(url).absoluteString == "https://h/f.iso?X-Amz-Signature=REDACTED&part=2&token=REDACTED#frag")
        let plain = try #require(URL(string: "https://h/f.iso?part=2"))
        #expect(redaction.url(plain) == plain)
        // Configured: only the names given, any case.
        let custom = Redaction.fromEnvironment(["FERRY_REDACT_QUERY": "Part"])
        #expect(custom.url(url).absoluteString == "https://h/f.iso?X-Amz-Signature=abc&part=REDACTED&token=t0k#frag")
        #expect(Redaction.fromEnvironment(["FERRY_REDACT_QUERY": ""]).url(url) == url)
    }

    @Test func credentialsInATaskAreHidden() throws {
        var request = Request(url: try #require(URL(string: "https://h/a?access_token=xyz")))
        request.headers.add(name: "Authorization", value: "Basic YWxpY2U6czNjcmV0")
        request.headers.add(name: "cookie", value: "session=1")
        request.headers.add(name: "Accept", value: "*/*")
        let resume = ResumeData(
            originalRequest: request, currentRequest: request, bytesReceived: 1, expectedLength: nil,
            entityTag: "\"e\"", lastModified: nil, partialFilePath: "/p"
        )
        let task = BackgroundTaskInfo(
            session: "s", taskIdentifier: 1, kind: .download, state: .completed, originalRequest: request,
            statusCode: 200, responseHeaders: ["Set-Cookie": "id=42", "Content-Type": "text/plain"],
            error: FerryError(.timedOut, "late", failingURL: "https://h/a?access_token=xyz", resumeData: resume),
            destination: "/d"
        )
        let shown = Redaction().task(task)
        let text = String(decoding: try JSONEncoder().encode(shown), as: UTF8.self)
        for secret in ["YWxpY2U6czNjcmV0", "session=1", "xyz", "id=42"] {
            #expect(!text.contains(secret), "\(secret) is shown")
        }
        #expect(shown.originalRequest.headers["authorization"] == "<redacted>")
        #expect(shown.originalRequest.headers["accept"] == "*/*")
        #expect(shown.responseHeaders?["content-type"] == "text/plain")
        #expect(shown.error?.resumeData == nil)
    }
}
