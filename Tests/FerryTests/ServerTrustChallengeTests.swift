import FerryTestServer
import Foundation
import Synchronization
import Testing

@testable import Ferry

/// The session delegate's server-trust challenge: it sees the chain and Ferry's verdict, and may trust,
/// reject or leave the decision to the evaluation.
@Suite struct ServerTrustChallengeTests {
    final class TrustDelegate: SessionDelegate {
        let answer: ServerTrustDisposition
        let seen = Mutex<[ServerTrustChallenge]>([])

        init(_ answer: ServerTrustDisposition) { self.answer = answer }

        func session(_ session: Session, didReceive challenge: ServerTrustChallenge) async -> ServerTrustDisposition {
            seen.withLock { $0.append(challenge) }
            return answer
        }
    }

    @Test func theDelegateTrustsRejectsOrDefers() async throws {
        try await TestServer.withServer { server in
            let url = URL(string: server.url("/bytes/1000", on: .tls))!
            // Not trusted by the configuration; the delegate vouches for it.
            let trusting = TrustDelegate(.trust)
            let first = Session(configuration: .ephemeral, delegate: trusting)
            defer { first.invalidateAndCancel() }
            let (data, response) = try await first.data(from: url)
            #expect(response.statusCode == 200 && data.count == 1000)
            let challenge = try #require(trusting.seen.withLock { $0.first })
            #expect(challenge.host == "127.0.0.1" && challenge.port == server.ports[.tls])
            #expect(challenge.certificateChain.count == 2)
            #expect(challenge.defaultEvaluationFailure?.contains("not trusted") == true)

            // Trusted by the configuration; the delegate refuses it.
            var configuration = SessionConfiguration.ephemeral
            configuration.tls.additionalTrustRootsPEM = [server.certificates.trustRootPEM]
            let rejecting = TrustDelegate(.reject)
            let second = Session(configuration: configuration, delegate: rejecting)
            defer { second.invalidateAndCancel() }
            let refused = await #expect(throws: FerryError.self) { _ = try await second.data(from: url) }
            #expect(refused?.code == .serverCertificateUntrusted)
            #expect(refused?.message.contains("delegate refused") == true)
            #expect(rejecting.seen.withLock { $0.first?.defaultEvaluationFailure } == nil)

            // Deferring: the evaluation decides, both ways.
            let deferring = TrustDelegate(.performDefaultHandling)
            let third = Session(configuration: configuration, delegate: deferring)
            defer { third.invalidateAndCancel() }
            #expect(try await third.data(from: url).1.statusCode == 200)
            let fourth = Session(configuration: .ephemeral, delegate: TrustDelegate(.performDefaultHandling))
            defer { fourth.invalidateAndCancel() }
            await #expect(throws: FerryError.self) { _ = try await fourth.data(from: url) }
        }
    }
}
