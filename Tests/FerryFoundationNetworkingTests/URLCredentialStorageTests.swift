@testable import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// URLCredentialStorage as a view of Ferry's credential stores: a credential set through the object
/// answers the session's challenges, and one the session kept shows in it.
@Suite struct URLCredentialStorageTests {
    private func get(_ session: URLSession, _ url: URL) async -> Int {
        let waiter = SamenessPrograms.Waiter<Int>()
        session.dataTask(with: url) { _, response, _ in waiter.finish((response as? HTTPURLResponse)?.statusCode ?? 0) }.resume()
        return await waiter.value()
    }

    @Test func aCredentialSetThroughTheStorageAnswersTheChallenge() async throws {
        try await TestServer.withServer { server in
            let configuration = URLSessionConfiguration.ephemeral
            let storage = try #require(configuration.urlCredentialStorage)
            #expect(storage !== URLCredentialStorage.shared)
            let url = URL(string: server.url("/basic-auth/ann/s3cret"))!
            let session = URLSession(configuration: configuration)
            defer { session.finishTasksAndInvalidate() }
            // Nothing stored, no delegate: the 401 is the answer.
            #expect(await get(session, url) == 401)
            let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: "ferry-testserver", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            storage.set(URLCredential(user: "ann", password: "s3cret", persistence: .forSession), for: space)
            #expect(storage.defaultCredential(for: space)?.user == "ann")
            #expect(storage.allCredentials.count == 1)
            #expect(await get(session, url) == 200, "the stored credential answered the challenge")
            storage.remove(URLCredential(user: "ann", password: "s3cret", persistence: .forSession), for: space)
            #expect(storage.credentials(for: space) == nil)
        }
    }

    @Test func aStorageMadeByTheApplicationAnswersTheChallengesOfItsSessions() async throws {
        try await TestServer.withServer { server in
            let storage = URLCredentialStorage()
            #expect(storage !== URLCredentialStorage.shared)
            #expect(storage.allCredentials.isEmpty)
            let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: "ferry-testserver", authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
            storage.set(URLCredential(user: "ann", password: "s3cret", persistence: .forSession), for: space)
            let configuration = URLSessionConfiguration.default
            configuration.urlCredentialStorage = storage
            let session = URLSession(configuration: configuration)
            defer { session.finishTasksAndInvalidate() }
            #expect(await get(session, URL(string: server.url("/basic-auth/ann/s3cret"))!) == 200)
            // Its own: the shared store did not get the credential.
            #expect(URLCredentialStorage.shared.credentials(for: space) == nil)
        }
    }

    @Test func aBackgroundConfigurationRefusesAStoreOfItsOwn() {
        let configuration = URLSessionConfiguration.background(withIdentifier: "credentials-\(UUID().uuidString)")
        configuration.urlCredentialStorage = URLSessionConfiguration.ephemeral.urlCredentialStorage
        guard case .failure(let error) = configuration.ferryConfiguration() else {
            Issue.record("a background configuration with a private credential store was accepted")
            return
        }
        #expect(error.localizedDescription.contains("background"))
    }
}
