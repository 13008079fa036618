@testable import FerryFoundationNetworking
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// URLProtocol beyond the sameness programs: FoundationNetworking's subclasses, refusals, challenges,
/// listings, and the load state as a value.
@Suite struct URLProtocolTests {
    /// A FoundationNetworking subclass, as a mocking library that imports FoundationNetworking only
    /// declares it.
    final class FoundationStub: FoundationNetworking.URLProtocol, @unchecked Sendable {
        override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "foundation.invalid" }
        override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
        override func startLoading() {
            let response = FoundationNetworking.HTTPURLResponse(url: request.url!, statusCode: 203, httpVersion: "HTTP/1.1", headerFields: ["X-Stub": "fn"])!
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocol(self, didLoad: Data("from a FoundationNetworking subclass".utf8))
            client?.urlProtocolDidFinishLoading(self)
        }
        override func stopLoading() {}
    }

    /// Asks for credentials, then answers with what the sender was told.
    final class ChallengingStub: URLProtocol, URLAuthenticationChallengeSender, @unchecked Sendable {
        override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "challenge.invalid" }
        override func startLoading() {
            let space = URLProtectionSpace(host: "challenge.invalid", port: 80, protocol: "http", realm: "stub", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            let challenge = URLAuthenticationChallenge(protectionSpace: space, proposedCredential: nil, previousFailureCount: 0, failureResponse: nil, error: nil, sender: self)
            client?.urlProtocol(self, didReceive: challenge)
        }
        private func answer(_ text: String) {
            let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocol(self, didLoad: Data(text.utf8))
            client?.urlProtocolDidFinishLoading(self)
        }
        func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) { answer("user \(credential.user ?? "-")") }
        func continueWithoutCredential(for challenge: URLAuthenticationChallenge) { answer("no credential") }
        func cancel(_ challenge: URLAuthenticationChallenge) { client?.urlProtocol(self, didFailWithError: URLError(.userCancelledAuthentication)) }
        func performDefaultHandling(for challenge: URLAuthenticationChallenge) { answer("default") }
        func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) { answer("rejected") }
    }

    /// Never answers: for listings.
    final class SilentStub: URLProtocol, @unchecked Sendable {
        override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "silent.invalid" }
        override func startLoading() {}
    }

    private func load(_ session: URLSession, _ url: String) async -> (String, Int, (any Error)?) {
        await withCheckedContinuation { continuation in
            session.dataTask(with: URL(string: url)!) { data, response, error in
                let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
                continuation.resume(returning: (text, (response as? HTTPURLResponse)?.statusCode ?? 0, error))
            }.resume()
        }
    }

    @Test func aFoundationNetworkingSubclassLoadsForAFerrySession() async {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [FoundationStub.self]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (text, status, error) = await load(session, "http://foundation.invalid/any")
        #expect(error == nil)
        #expect(status == 203)
        #expect(text == "from a FoundationNetworking subclass")
    }

    @Test func theDelegatesAnswerToAChallengeGoesToItsSender() async {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [ChallengingStub.self]
        let withDelegate = URLSession(configuration: configuration, delegate: CredentialDelegate(), delegateQueue: nil)
        defer { withDelegate.finishTasksAndInvalidate() }
        #expect(await load(withDelegate, "http://challenge.invalid/").0 == "user ann")
        let without = URLSession(configuration: configuration)
        defer { without.finishTasksAndInvalidate() }
        #expect(await load(without, "http://challenge.invalid/").0 == "default")
    }

    @Test func aClassThatIsNotAURLProtocolIsRefusedByName() async {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [NSString.self]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (_, _, error) = await load(session, "http://127.0.0.1:1/")
        let urlError = error as? URLError
        #expect(urlError?.code == .unsupportedURL)
        #expect(urlError?.localizedDescription.contains("is not a subclass of URLProtocol") == true)
    }

    @Test func aBackgroundSessionRefusesProtocolClasses() {
        let configuration = URLSessionConfiguration.background(withIdentifier: "protocol-classes-\(UUID().uuidString)")
        configuration.protocolClasses = [SilentStub.self]
        guard case .failure(let error) = configuration.ferryConfiguration() else {
            Issue.record("a background configuration with protocol classes was accepted")
            return
        }
        #expect(error.localizedDescription.contains("background sessions"))
    }

    @Test func aRunningProtocolTaskIsListedAndCancelsWithStopLoading() async {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [SilentStub.self]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let done = SamenessOnFerryWaiter()
        let task = session.dataTask(with: URL(string: "http://silent.invalid/")!) { _, _, error in done.finish(error as? URLError) }
        #expect(task.state == .suspended)
        task.resume()
        #expect(task.state == .running)
        let listed = await session.allTasks
        #expect(listed.contains { $0 === task })
        task.cancel()
        let error = await done.value()
        #expect(error?.code == .cancelled)
        #expect(task.state == .completed)
        #expect(await session.allTasks.isEmpty)
    }

    // MARK: The state as a value

    @Test func reportsCountOnlyFromTheLoadingObjectAndOnlyOnce() {
        var state = URLProtocolLoadState()
        #expect(state.apply(.report(generation: 1, .data)) == .ignore, "nothing counts before resume")
        #expect(state.apply(.resume) == .start(generation: 1))
        #expect(state.apply(.resume) == .ignore)
        #expect(state.apply(.report(generation: 1, .redirect)) == .handle)
        #expect(state.apply(.answered) == .handle)
        let next = state.redirected()
        #expect(next == 2)
        #expect(state.apply(.report(generation: 1, .finished)) == .ignore, "the replaced object's reports are dropped")
        #expect(state.apply(.report(generation: 2, .data)) == .handle, "data before a response is tolerated")
        #expect(state.apply(.report(generation: 2, .response)) == .handle)
        #expect(state.responded)
        #expect(state.apply(.answered) == .handle)
        #expect(state.apply(.report(generation: 2, .finished)) == .handle)
        #expect(state.taskState == 0, "running until the completion is delivered")
        #expect(state.apply(.report(generation: 2, .finished)) == .ignore, "a second finish is dropped")
        #expect(state.apply(.cancel) == .ignore, "a cancel after the finish changes nothing")
        #expect(state.apply(.delivered) == .handle)
        #expect(state.taskState == 3)
        #expect(state.apply(.delivered) == .ignore)
    }

    @Test func aCancelWhileTheDelegateIsAskedWinsOverItsAnswer() {
        var state = URLProtocolLoadState()
        _ = state.apply(.resume)
        #expect(state.apply(.report(generation: 1, .response)) == .handle)
        #expect(state.apply(.cancel) == .stopAndCancel)
        #expect(state.taskState == 2)
        #expect(state.apply(.answered) == .ignore, "the answer comes too late")
        #expect(state.apply(.report(generation: 1, .data)) == .ignore)
        #expect(state.apply(.delivered) == .handle)
        #expect(state.taskState == 3)
    }

    @Test func aTaskCancelledBeforeResumeNeverStarts() {
        var state = URLProtocolLoadState()
        #expect(state.apply(.cancel) == .stopAndCancel)
        #expect(state.apply(.resume) == .ignore)
    }
}

/// A one-shot wait for a completion handler's value.
typealias SamenessOnFerryWaiter = SamenessOnFerry.SamenessPrograms.Waiter<URLError?>

