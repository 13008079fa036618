import Ferry
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// A delegate that answers challenges from a list, recording what it was asked.
private final class Answerer: TaskDelegate, Sendable {
    private let answers: Mutex<[ChallengeDisposition]>
    private let asked = Mutex<[AuthenticationChallenge]>([])

    init(_ answers: [ChallengeDisposition]) { self.answers = Mutex(answers) }

    var challenges: [AuthenticationChallenge] { asked.withLock { $0 } }

    func session(
        _ session: Session,
        task: SessionTask,
        didReceive challenge: AuthenticationChallenge
    ) async
        -> ChallengeDisposition
    {
        asked.withLock { $0.append(challenge) }
        return answers.withLock { $0.isEmpty ? .performDefaultHandling : $0.removeFirst() }
    }
}

@Suite struct AuthenticationChallengeTests {
    private let good = Credential(user: "ann", password: "s3cret")
    private let bad = Credential(user: "ann", password: "wrong")

    @Test func basicCredentialsFromTheDelegateAreSentAgain() async throws {
        let answerer = Answerer([.useCredential(good)])
        try await withSession { server, session in
            let (_, response) = try await session.data(
                for: request(server.url("/basic-auth/ann/s3cret")),
                delegate: answerer
            )
            #expect(response.statusCode == 200)
            let challenge = try #require(answerer.challenges.first)
            #expect(challenge.scheme == "basic")
            #expect(challenge.realm == "ferry-testserver")
            #expect(challenge.previousFailureCount == 0)
            #expect(challenge.failureResponse?.statusCode == 401)
        }
    }

    @Test func refusedCredentialsAreAskedAgainThenTheResponseIsThe401() async throws {
        let answerer = Answerer([.useCredential(bad), .useCredential(bad)])
        try await withSession { server, session in
            let (_, response) = try await session.data(
                for: request(server.url("/basic-auth/ann/s3cret")),
                delegate: answerer
            )
            #expect(response.statusCode == 401)
            #expect(answerer.challenges.map(\.previousFailureCount) == [0, 1, 2])
        }
    }

    @Test(arguments: ["MD5", "SHA-256"])
    func digestCredentialsWork(algorithm: String) async throws {
        let answerer = Answerer([.useCredential(good)])
        try await withSession { server, session in
            let (_, response) = try await session.data(
                for: request(server.url("/digest-auth/auth/ann/s3cret?algorithm=\(algorithm)")),
                delegate: answerer
            )
            #expect(response.statusCode == 200)
            #expect(answerer.challenges.first?.scheme == "digest")
        }
    }

    @Test func withoutADelegateThe401IsTheResponse() async throws {
        try await withSession { server, session in
            let (_, response) = try await session.data(for: request(server.url("/basic-auth/ann/s3cret")))
            #expect(response.statusCode == 401)
        }
    }

    @Test func cancellingTheChallengeFailsTheTask() async throws {
        let answerer = Answerer([.cancelAuthenticationChallenge])
        try await withSession { server, session in
            do {
                _ = try await session.data(for: request(server.url("/basic-auth/ann/s3cret")), delegate: answerer)
                Issue.record("a cancelled challenge did not fail the task")
            } catch let error as FerryError {
                #expect(error.code == .userCancelledAuthentication)
            }
        }
    }

    @Test func aDownloadAnswersChallengesToo() async throws {
        let answerer = Answerer([.useCredential(good)])
        try await withSession { server, session in
            let (file, response) = try await session.download(
                for: request(server.url("/digest-auth/auth/ann/s3cret")),
                delegate: answerer
            )
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.statusCode == 200)
        }
    }
}
