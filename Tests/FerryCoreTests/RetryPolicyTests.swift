import FerryCore
import Foundation
import Testing

@Suite struct RetryPolicyTests {
    @Test func backoffDoublesAndStops() {
        let policy = RetryPolicy(baseDelay: 0.5, maximumDelay: 3, maximumAttempts: 5)
        let delays = (1...5).map { policy.delay(afterFailedAttempts: $0) }
        #expect(delays == [0.5, 1, 2, 3, nil])
        #expect(policy.delay(afterFailedAttempts: 0) == nil)
    }

    @Test func onlyNetworkFaultsAreRetried() {
        #expect(RetryPolicy.isRetryable(.networkConnectionLost))
        #expect(RetryPolicy.isRetryable(.timedOut))
        #expect(!RetryPolicy.isRetryable(.badServerResponse))
        #expect(!RetryPolicy.isRetryable(.cannotWriteToFile))
        #expect(!RetryPolicy.isRetryable(.cancelled))
    }
}

@Suite struct ControlAPITests {
    @Test func aRequestNeedsOnlyItsURL() throws {
        let creation = try JSONDecoder().decode(
            ControlAPI.TaskCreation.self,
            from: Data(#"{"kind":"download","request":{"url":"http://127.0.0.1/x"}}"#.utf8)
        )
        #expect(creation.request.method == "GET")
        #expect(creation.request.timeoutInterval == 60)
    }

    @Test func errorsRoundTripWithTheirCodeAndResumeData() throws {
        let resume = ResumeData(
            originalRequest: Request(url: URL(string: "http://h/a")!),
            currentRequest: Request(url: URL(string: "http://h/b")!),
            bytesReceived: 10,
            expectedLength: 20,
            entityTag: "\"e\"",
            lastModified: nil,
            partialFilePath: "/tmp/p"
        )
        let error = FerryError(.cancelled, "force quit", failingURL: "http://h/b", resumeData: resume)
        let decoded = try JSONDecoder().decode(FerryError.self, from: try JSONEncoder().encode(error))
        #expect(decoded == error)
        #expect(decoded.code == .cancelled)
    }

    @Test func identifiersFollowTheConfigurationRule() {
        #expect(throws: FerryError.self) { try ControlAPI.validateIdentifier("") }
        #expect(throws: FerryError.self) { try ControlAPI.validateIdentifier("a/b") }
        #expect(throws: Never.self) { try ControlAPI.validateIdentifier("com.example.sync") }
    }

    @Test func retryAfterIsSecondsOrAnHTTPDate() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(RetryPolicy.retryAfter("120", now: now) == 120)
        #expect(RetryPolicy.retryAfter(" 0 ", now: now) == 0)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryPolicy.retryAfter(formatter.string(from: now.addingTimeInterval(90)), now: now) == 90)
        // A date in the past: now.
        #expect(RetryPolicy.retryAfter(formatter.string(from: now.addingTimeInterval(-90)), now: now) == 0)
        // Not a delay, or too far away to wait for.
        #expect(RetryPolicy.retryAfter("soon", now: now) == nil)
        #expect(RetryPolicy.retryAfter("-5", now: now) == nil)
        #expect(RetryPolicy.retryAfter("1.5", now: now) == nil)
        #expect(RetryPolicy.retryAfter("86400", now: now) == nil)
    }
}
