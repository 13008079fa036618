import Ferry
import FerryStore
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// Background sessions keep cookies (issue 17): ferryd applies the session's store, the shared file, on
/// every hop, and the program sees cookies set by background responses.
@Suite struct BackgroundCookieTests {
    /// Keeps the JSON of each delivered file.
    final class Files: DownloadDelegate, Sendable {
        let delivered = Mutex<[Int: Data]>([:])

        func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
            let data = (try? Data(contentsOf: location)) ?? Data()
            delivered.withLock { $0[downloadTask.taskIdentifier] = data }
        }
    }

    struct Echo: Decodable {
        var cookies: [String: String]
    }

    @Test func aLoginFlowRunsInTheBackgroundAndItsCookiesReachTheProgram() async throws {
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let files = Files()
                let session = Session(
                    configuration: .background(identifier: "t.cookies"),
                    delegate: files,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                let store = try #require(session.cookies)
                #expect(store.path == CookieStore.shared.path && store.path != nil)
                let token = UUID().uuidString.prefix(8)
                let name = "bg\(token)"
                // The login answer sets a session cookie and a persistent one, then redirects to the page
                // that echoes what it was sent.
                let setSession = "\(name)=abc; Path=/".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let setKept = "\(name)kept=1; Path=/; Max-Age=600".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let login = server.url("/redirect/1?to=/cookies&set_cookie=\(setSession)&set_cookie=\(setKept)")
                let task = session.downloadTask(with: request(login))
                task.resume()
                await task.waitUntilFinished()
                #expect(task.error == nil)
                let data = try #require(files.delivered.withLock { $0[task.taskIdentifier] })
                let echoed = try JSONDecoder().decode(Echo.self, from: data).cookies
                #expect(echoed[name] == "abc")
                #expect(echoed[name + "kept"] == "1")
                // The persistent cookie is in the shared file, where this process's store reads it.
                #expect(store.cookies.contains { $0.name == name + "kept" })
                for cookie in store.cookies where cookie.name.hasPrefix(name) { store.deleteCookie(cookie) }

                // httpShouldHandleCookies = false: the daemon sends and keeps none for that task.
                var plain = request(server.url("/cookies"))
                plain.httpShouldHandleCookies = false
                let bare = session.downloadTask(with: plain)
                bare.resume()
                await bare.waitUntilFinished()
                let bareData = try #require(files.delivered.withLock { $0[bare.taskIdentifier] })
                #expect(try JSONDecoder().decode(Echo.self, from: bareData).cookies.isEmpty)
            }
        }
    }
}

/// sessionSendsLaunchEvents false: the session tells ferryd, when it attaches, to run no launch command
/// for its events.
@Suite struct BackgroundLaunchSettingTests {
    @Test func aSessionThatWantsNoLaunchesRemovesTheCommand() async throws {
        try await withDaemon { daemon in
            let store = try FerryStore(path: daemon.client.paths.database)
            for identifier in ["t.keep", "t.nolaunch"] {
                let path = "\(ControlAPI.prefix)/sessions/\(identifier)/launch"
                try await daemon.client.perform("PUT", path, body: ControlAPI.LaunchRegistration(command: "true"))
                #expect(try store.launchCommand(session: identifier) == "true")
            }
            // The default keeps it.
            let keeping = Session(configuration: .background(identifier: "t.keep"), delegate: BackgroundCookieTests.Files(), daemon: daemon.client)
            defer { keeping.finishTasksAndInvalidate() }
            _ = await keeping.allTasks
            #expect(try store.launchCommand(session: "t.keep") == "true")

            var configuration = SessionConfiguration.background(identifier: "t.nolaunch")
            configuration.sessionSendsLaunchEvents = false
            let session = Session(configuration: configuration, delegate: BackgroundCookieTests.Files(), daemon: daemon.client)
            defer { session.finishTasksAndInvalidate() }
            _ = await session.allTasks
            #expect(try store.launchCommand(session: "t.nolaunch") == nil)
        }
    }
}
