@testable import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Testing

/// HTTPCookieStorage as a view of Ferry's stores: what the session keeps is what the object shows.
@Suite struct HTTPCookieStorageTests {
    @Test func anEphemeralSessionsStorageShowsSendsAndForgets() async throws {
        try await TestServer.withServer { server in
            let origin = server.url("").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let transcript = await SamenessPrograms.cookieStorageOfASession(origin)
            #expect(transcript == [#"stored ["flavour=oat path /"]"#, "error nil", "sent flavour true added true", #"after delete ["flavour"]"#])
            let shared = await SamenessPrograms.cookieStorageShared(origin)
            #expect(shared == ["second sends it true", "another ephemeral configuration's session sends it false"])
        }
    }

    @Test func cookiesSortAndConvertBothWays() throws {
        let storage = try #require(URLSessionConfiguration.ephemeral.httpCookieStorage)
        #expect(storage !== HTTPCookieStorage.shared)
        for name in ["b", "c", "a"] {
            storage.setCookie(HTTPCookie(properties: [.name: name, .value: "v", .domain: ".example.com", .path: "/", .secure: "TRUE"])!)
        }
        let sorted = storage.sortedCookies(using: [NSSortDescriptor(keyPath: \HTTPCookie.name, ascending: true)])
        #expect(sorted.map(\.name) == ["a", "b", "c"])
        let first = try #require(sorted.first)
        #expect(first.domain == ".example.com", "a domain cookie keeps its leading dot")
        #expect(first.isSecure)
        #expect(storage.cookies(for: URL(string: "http://www.example.com/")!)?.isEmpty == true, "secure cookies go over https only")
        #expect(storage.cookies(for: URL(string: "https://www.example.com/")!)?.count == 3)
        storage.removeCookies(since: .distantPast)
        #expect(storage.cookies?.isEmpty == true)
    }

    @Test func aBackgroundSessionRefusesAStoreOfItsOwn() {
        let configuration = URLSessionConfiguration.background(withIdentifier: "cookies-\(UUID().uuidString)")
        configuration.httpCookieStorage = URLSessionConfiguration.ephemeral.httpCookieStorage
        guard case .failure(let error) = configuration.ferryConfiguration() else {
            Issue.record("a background configuration with a private cookie store was accepted")
            return
        }
        #expect(error.localizedDescription.contains("background"))
    }
}
