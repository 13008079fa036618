import FerryCore
import FerryEngine
import Foundation
import Testing

/// The persistent store: one file, shared by processes (here: separate stores, each with its own lock
/// descriptor, which flock treats as it treats processes).
@Suite struct CookieStoreTests {
    func file() throws -> String {
        try temporaryPath("cookies.json")
    }

    func headers(_ lines: String...) -> Headers {
        var headers = Headers()
        for line in lines { headers.add(name: "Set-Cookie", value: line) }
        return headers
    }

    let site = URL(string: "http://example.test/")!

    @Test func persistentCookiesOutliveTheStoreSessionCookiesDoNot() throws {
        let path = try file()
        let first = CookieStore(file: path)
        first.receive(headers("kept=1; Max-Age=3600", "session=1"), from: site)
        #expect(first.cookieHeader(for: site) == "kept=1; session=1")
        let later = CookieStore(file: path)
        #expect(later.cookieHeader(for: site) == "kept=1", "a new process sees the persistent cookie only")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // A deletion in one is seen by the other when the file changes.
        later.receive(headers("kept=; Max-Age=0"), from: site)
        #expect(first.cookieHeader(for: site) == "session=1")
    }

    @Test func writersAtTheSameTimeLoseNothing() async throws {
        let path = try file()
        let stores = (0..<4).map { _ in CookieStore(file: path) }
        await withTaskGroup(of: Void.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    for cookie in 0..<25 {
                        store.receive(headers("w\(index)c\(cookie)=v; Max-Age=3600"), from: site)
                    }
                }
            }
        }
        let reader = CookieStore(file: path)
        #expect(reader.cookies.count == 100)
        for store in stores { #expect(store.cookies.count == 100) }
    }

    @Test func aMemoryStoreWritesNothing() throws {
        let directory = (try file() as NSString).deletingLastPathComponent
        let store = CookieStore()
        store.receive(headers("a=1; Max-Age=60"), from: site)
        #expect(store.path == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(CookieStore.defaultFile(["XDG_DATA_HOME": "/x"]) == "/x/ferry/cookies.json")
        #expect(CookieStore.defaultFile(["HOME": "/home/u"]) == "/home/u/.local/share/ferry/cookies.json")
        #expect(CookieStore.defaultFile([:]) == nil)
    }
}
