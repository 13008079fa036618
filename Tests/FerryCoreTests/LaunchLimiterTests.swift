import FerryCore
import Foundation
import Testing

@Suite struct LaunchLimiterTests {
    @Test func eachLaunchDoublesTheDelayUpToTheMaximum() {
        var limiter = LaunchLimiter(baseDelay: 1, maximumDelay: 5)
        #expect(limiter.earliestLaunch(now: 100) == 100)
        limiter.launched(at: 100)
        #expect(limiter.delay == 1)
        #expect(limiter.earliestLaunch(now: 100.2) == 101)
        limiter.launched(at: 101)
        #expect(limiter.delay == 2)
        #expect(limiter.earliestLaunch(now: 101) == 103)
        limiter.launched(at: 103)
        limiter.launched(at: 107)
        #expect(limiter.delay == 5)
    }

    @Test func theDelayResetsWhenTheClientAttachesByItselfOrAWholeDelayPasses() {
        var limiter = LaunchLimiter(baseDelay: 1, maximumDelay: 60)
        limiter.launched(at: 0)
        limiter.launched(at: 1)
        #expect(limiter.delay == 2)
        limiter.clientAttachedByItself()
        #expect(limiter.earliestLaunch(now: 1.5) == 1.5)
        limiter.launched(at: 2)
        limiter.launched(at: 3)
        #expect(limiter.delay == 2)
        // Next allowed at 5; nothing happened until 7 (a whole delay later): start over.
        limiter.launched(at: 7.5)
        #expect(limiter.delay == 1)
    }
}

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
}
