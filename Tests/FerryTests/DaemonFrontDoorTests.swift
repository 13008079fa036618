import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ferryd's front door (docs/RELIABILITY.md, "The daemon's front door"): it never chmods a directory it
/// did not make, keeps its socket only in a directory of the user's own, and answers its own user only;
/// a client talks only to a socket of its own user's.
@Suite struct DaemonFrontDoorTests {
    private func mode(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_mode & 0o7777) : -1
    }

    /// Runs ferryd to its end (it refuses to start in these cases), at most 60 s.
    private func runDaemon(_ environment: [String: String]) async throws -> (Int32, String) {
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        let process = try ChildProcess.spawn(ChildProcess.builtProduct("ferryd"), arguments: [], environment: merged)
        async let errors = process.standardError!.readToEndOffPool()
        async let output = process.standardOutput!.readToEndOffPool()
        try await eventually("ferryd exits", within: 60) { !process.isRunning }
        let text = String(decoding: await errors, as: UTF8.self) + String(decoding: await output, as: UTF8.self)
        return (process.terminationStatus, text)
    }

    @Test func aSharedSocketDirectoryIsRefusedAndLeftAsItWas() async throws {
        let home = "/tmp/ferry-fd-\(UUID().uuidString.prefix(8))"
        let shared = home + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        chmod(shared, 0o1777)
        let (status, text) = try await runDaemon(["FERRY_HOME": home + "/state", "FERRY_SOCKET": shared + "/ferryd.sock"])
        #expect(status != 0)
        #expect(text.contains("can be written by other users"), "\(text)")
        // The old ferryd chmodded it to 0700, locking every other user out of it.
        #expect(mode(shared) == 0o1777)
        #expect(!FileManager.default.fileExists(atPath: shared + "/ferryd.sock"))
    }

    @Test func anExistingDirectoryKeepsItsMode() async throws {
        let daemon = try DaemonFixture()
        chmod(daemon.home, 0o750)
        do {
            try await daemon.start()
            // The old ferryd chmodded FERRY_HOME to 0700; the directories it makes itself are 0700.
            #expect(mode(daemon.home) == 0o750)
            #expect(mode(daemon.client.paths.partialDirectory) == 0o700)
        } catch {
            Issue.record("\(error)\n\(daemon.log)")
        }
        await daemon.cleanUp()
    }

    @Test(.enabled(if: getuid() == 0, "a socket of another user needs root to make"))
    func aClientTalksOnlyToItsOwnUsersSocket() async throws {
        let home = "/tmp/ferry-fd-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        // Someone else's listener at the socket's name.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((home + "/ferryd.sock").utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
            raw[path.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        listen(listener, 8)
        chown(home + "/ferryd.sock", 65534, 65534)
        let client = DaemonClient(paths: try DaemonPaths(environment: ["FERRY_HOME": home]))
        let error = await #expect(throws: FerryError.self) {
            let _: ControlAPI.DaemonStatus = try await client.call("GET", "/v1/daemon", timeout: 5)
        }
        #expect(error?.message.contains("belongs to another user") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: getuid() == 0, "a process of another user needs root to start"))
    func ferrydAnswersItsOwnUserOnly() async throws {
        try await withDaemon { daemon in
            let socketPath = daemon.client.paths.socket
            // Even with the socket open to everyone, another user's request gets no answer.
            chmod(socketPath, 0o666)
            let probe = """
                import os, socket, sys
                if sys.argv[2] == "other":
                    os.setgid(65534); os.setuid(65534)
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(30)
                try:
                    s.connect(sys.argv[1])
                    s.sendall(b"GET /v1/daemon HTTP/1.1\\r\\nHost: ferryd\\r\\n\\r\\n")
                except Exception as error:
                    print("closed:", type(error).__name__)
                    sys.exit(0)
                try:
                    print(repr(s.recv(64)))
                except Exception as error:
                    print("closed:", type(error).__name__)
                """
            func ask(_ who: String) async throws -> String {
                let process = try ChildProcess.spawn("/usr/bin/env", arguments: ["python3", "-c", probe, socketPath, who])
                async let output = process.standardOutput!.readToEndOffPool()
                try await eventually("the probe ends", within: 60) { !process.isRunning }
                return String(decoding: await output, as: UTF8.self)
            }
            #expect(try await ask("self").contains("HTTP/1.1 200"))
            let other = try await ask("other")
            // Closed unanswered: an empty read or a reset (the request was never read), never an answer.
            #expect(!other.isEmpty && !other.contains("HTTP/1.1"), "\(other)")
        }
    }

    @Test func aSessionHoldsAtMostItsLimitOfTasks() async throws {
        try await withDaemon(environment: ["FERRY_MAX_TASKS_PER_SESSION": "3", "FERRY_MAX_TRANSFERS": "0"]) { daemon in
            for _ in 0..<3 { _ = try await daemon.download("http://127.0.0.1:9/x", session: "t.limit") }
            let error = await #expect(throws: FerryError.self) {
                _ = try await daemon.download("http://127.0.0.1:9/x", session: "t.limit")
            }
            #expect(error?.message.contains("holds at most 3") == true, "\(String(describing: error))")
            #expect(try await daemon.tasks("t.limit").count == 3)
            // Another session has its own count.
            _ = try await daemon.download("http://127.0.0.1:9/x", session: "t.other")
        }
    }

    @Test func pathsReachNoFileOutsideTheirPlace() async throws {
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_LAUNCH_BASE_DELAY": "1"]) { daemon in
                // A relative partial file in resume data is refused before anything is stored.
                var request = Request(url: URL(string: server.url("/bytes/10"))!)
                request.headers.add(name: "Accept", value: "*/*")
                let resume = ResumeData(
                    originalRequest: request, currentRequest: request, bytesReceived: 5, expectedLength: 10,
                    entityTag: "\"x\"", lastModified: nil, partialFilePath: "garbage-\(UUID().uuidString.prefix(6))"
                )
                let error = await #expect(throws: FerryError.self) {
                    let _: BackgroundTaskInfo = try await daemon.client.call(
                        "POST",
                        "/v1/sessions/t.paths/tasks",
                        body: ControlAPI.TaskCreation(kind: .download, request: request, resumeData: resume)
                    )
                }
                #expect(error?.message.contains("partialFilePath must be an absolute file path") == true, "\(String(describing: error))")
                #expect(try await daemon.tasks("t.paths").isEmpty)
                // A launch command runs in ferryd's own directory: a file it makes by a relative name lands
                // there, never in the working directory of whoever started ferryd.
                let name = "made-by-launch-\(UUID().uuidString.prefix(6))"
                try await daemon.client.perform(
                    "PUT",
                    "/v1/sessions/t.paths/launch",
                    body: ControlAPI.LaunchRegistration(command: "touch \(name)")
                )
                _ = try await daemon.download(server.url("/bytes/10"), session: "t.paths")
                try await eventually("the launch command ran") { FileManager.default.fileExists(atPath: daemon.home + "/" + name) }
                #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/" + name))
            }
        }
    }
}
