import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The control API against a real ferryd: docs/openapi.json describes exactly the routes it serves,
/// and bad requests get a 4xx with an error body and change nothing (D6).
@Suite(.serialized) struct ControlAPITests {
    /// docs/openapi.json, found from this file's place in the repository.
    static func document() throws -> [String: Any] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("docs/openapi.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func everyDocumentedRouteIsServedWithADocumentedStatus() async throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        #expect(paths.count == 18)
        let bodies: [String: String] = [
            "post /v1/sessions/{session}/tasks":
                #"{"kind":"download","request":{"url":"http://127.0.0.1:1/x"},"start":false}"#,
            "post /v1/sessions/{session}/tasks/batch":
                #"{"tasks":[{"kind":"download","request":{"url":"http://127.0.0.1:1/y"}}]}"#,
            "post /v1/sessions/{session}/ack": #"{"through":0}"#,
            "put /v1/sessions/{session}/launch": #"{"command":"true"}"#,
            "post /v1/sessions/{session}/invalidate": #"{"cancelTasks":false}"#,
            "put /v1/network": #"{"metered":"auto"}"#,
            "put /v1/bandwidth": #"{"bytesPerSecond":0}"#,
            "patch /v1/sessions/{session}/tasks/{task}": #"{"priority":0.6,"allowsMeteredNetwork":false}"#,
        ]
        try await withDaemon { daemon in
            // The task the task routes act on.
            let creation = #"{"kind":"download","request":{"url":"http://127.0.0.1:1/x"},"start":false}"#
            let created = try RawControl(daemon).send("POST", "/v1/sessions/t.doc/tasks", creation)
            #expect(created.status == 201)
            for (template, operations) in paths.sorted(by: { $0.key < $1.key }) {
                for (method, operation) in operations {
                    let path = template.replacingOccurrences(of: "{session}", with: "t.doc")
                        .replacingOccurrences(of: "{task}", with: "1")
                    let responses = try #require((operation as? [String: Any])?["responses"] as? [String: Any])
                    let answer = try RawControl(daemon).send(
                        method.uppercased(),
                        path,
                        bodies["\(method) \(template)"]
                    )
                    #expect(
                        responses.keys.contains(String(answer.status)),
                        "\(method.uppercased()) \(path) answered \(answer.status), not one of \(responses.keys.sorted())"
                    )
                }
            }
            // And a route the document does not name is not served.
            let unknown = try RawControl(daemon).send("GET", "/v1/sessions/t.doc/secrets", nil)
            #expect(unknown.status == 404)
        }
    }

    @Test func badRequestsGetAClearErrorAndChangeNothing() async throws {
        try await withDaemon { daemon in
            let raw = RawControl(daemon)
            let valid = #"{"kind":"download","request":{"url":"http://127.0.0.1:1/x"},"start":false}"#
            let created = try raw.send("POST", "/v1/sessions/t.bad/tasks", valid)
            #expect(created.status == 201)
            let before = try await daemon.tasks("t.bad")

            let cases: [(String, String, String?, Int, String)] = [
                ("POST", "/v1/sessions/t.bad/tasks", "{not json", 400, "not a valid"),
                ("POST", "/v1/sessions/t.bad/tasks", #"{"kind":"download"}"#, 400, "request"),
                (
                    "POST", "/v1/sessions/t.bad/tasks", #"{"kind":"sideways","request":{"url":"http://h/"}}"#, 400,
                    "kind"
                ),
                (
                    "POST", "/v1/sessions/t.bad/tasks", #"{"kind":"download","request":{"url":"ftp://h/x"}}"#, 400,
                    "http"
                ),
                (
                    "POST", "/v1/sessions/t.bad/tasks",
                    #"{"kind":"download","request":{"url":"http://h/","headers":{"fields":[{"name":"A","value":"b\r\nc: d"}]}}}"#,
                    400, "CR"
                ),
                (
                    "POST", "/v1/sessions/t.bad/tasks", #"{"kind":"upload","request":{"url":"http://h/"}}"#, 400,
                    "uploadFile"
                ),
                (
                    "POST", "/v1/sessions/t.bad/tasks",
                    #"{"kind":"upload","request":{"url":"http://h/"},"uploadFile":"/no/such/file"}"#, 409,
                    "does not exist"
                ),
                ("POST", "/v1/sessions/t.bad/tasks", String(repeating: " ", count: 2 << 20), 413, "larger"),
                ("POST", "/v1/sessions/t.bad/tasks/99/cancel", nil, 404, "no task 99"),
                ("POST", "/v1/sessions/t.bad/tasks/x/resume", nil, 400, "number"),
                ("POST", "/v1/sessions/t.bad/ack", #"{"through":"soon"}"#, 400, "through"),
                ("PUT", "/v1/sessions/t.bad/launch", #"{"command":"  "}"#, 400, "visible"),
                ("POST", "/v1/sessions/t.bad/ack", #"{"through":-1}"#, 400, "through"),
                ("POST", "/v1/sessions/t.bad/tasks", #"{"kind":"download","request":{"url":"http://h/a^b"}}"#, 400, "encoded form"),
                ("POST", "/v1/sessions/t.bad/tasks", #"{"kind":"download","request":{"url":"http://%41/"}}"#, 400, "RFC 3986"),
                ("GET", "/v1/sessions/caf%C3%A9/tasks", nil, 400, "printable ASCII"),
                ("DELETE", "/v1/sessions/t.bad/tasks", nil, 405, "GET and POST"),
                ("TRACE", "/v1/daemon", nil, 405, "GET"),
                ("POST", "/v1/sessions/t.bad/tasks", #"{"kind":"download","request":{"url":"http://h/"},"destination":"rel/x"}"#, 400, "absolute file path"),
            ]
            for (method, path, body, status, words) in cases {
                let answer = try raw.send(method, path, body)
                #expect(answer.status == status, "\(method) \(path) \(body?.prefix(60) ?? "") → \(answer.status)")
                let error = try? JSONDecoder().decode(ControlAPI.ErrorBody.self, from: answer.body).error
                #expect(
                    error?.message.localizedCaseInsensitiveContains(words) == true,
                    "\(method) \(path): '\(error?.message ?? String(decoding: answer.body, as: UTF8.self))' lacks '\(words)'"
                )
            }
            let after = try await daemon.tasks("t.bad")
            #expect(after == before)
            let events = try await daemon.client.call("GET", "/v1/sessions/t.bad/events", as: [BackgroundEvent].self)
            #expect(events.isEmpty)
        }
    }

    @Test func theSocketAndStateAreTheUsersAlone() async throws {
        try await withDaemon { daemon in
            func mode(_ path: String) -> Int {
                ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue
                    ?? -1
            }
            #expect(mode(daemon.client.paths.socket) == 0o600)
            // FERRY_HOME was the test's (made before ferryd): kept as it was, never chmodded; nobody else
            // may write it (ferryd refuses one others can).
            #expect(mode(daemon.home) & 0o022 == 0)
            #expect(mode(daemon.client.paths.database) == 0o600)
            #expect(mode(daemon.client.paths.partialDirectory) == 0o700)
        }
    }

    /// Another user id cannot reach the daemon: a child process run as `nobody` (when the tests run as
    /// root) fails to connect, while the same command as this user succeeds.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func anotherUserCannotConnect() async throws {
        try await withDaemon { daemon in
            func curl(asNobody: Bool) async throws -> Int32 {
                let command = [
                    "curl", "-s", "-o", "/dev/null", "--max-time", "5", "--unix-socket", daemon.client.paths.socket,
                    "http://ferryd/v1/daemon",
                ]
                let process = try ChildProcess.spawn(
                    "/usr/bin/env",
                    arguments: asNobody
                        ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command : command,
                    output: .discarded
                )
                await process.exited()
                return process.terminationStatus
            }
            let asOwner = try await curl(asNobody: false)
            let asNobody = try await curl(asNobody: true)
            #expect(asOwner == 0)
            // curl's 7: could not connect (permission denied on the directory and the socket).
            #expect(asNobody == 7)
        }
    }

    @Test func aBatchCreatesAllItsTasksOrNone() async throws {
        try await withDaemon { daemon in
            let path = "/v1/sessions/t.batch/tasks/batch"
            func creation(_ url: String) -> ControlAPI.TaskCreation {
                ControlAPI.TaskCreation(kind: .download, request: request(url), start: nil)
            }
            let made: [BackgroundTaskInfo] = try await daemon.client.call(
                "POST",
                path,
                body: ControlAPI.TaskBatch(tasks: (1...3).map { creation("http://127.0.0.1:1/\($0)") })
            )
            let identifiers: [Int] = made.map(\.taskIdentifier)
            #expect(identifiers == [1, 2, 3])
            #expect(made.map(\.originalRequest.url.path) == ["/1", "/2", "/3"])
            // One bad task: a clear error naming it, and nothing created.
            let bad = ControlAPI.TaskBatch(tasks: [creation("http://127.0.0.1:1/4"), creation("ftp://127.0.0.1/5")])
            let error = await #expect(throws: FerryError.self) {
                let _: [BackgroundTaskInfo] = try await daemon.client.call("POST", path, body: bad)
            }
            #expect(error?.message.contains("task 1 of the batch") == true)
            let empty = await #expect(throws: FerryError.self) {
                let _: [BackgroundTaskInfo] = try await daemon.client.call(
                    "POST",
                    path,
                    body: ControlAPI.TaskBatch(tasks: [])
                )
            }
            #expect(empty?.message.contains("1 to 1000") == true)
            let stored = try await daemon.tasks("t.batch")
            #expect(stored.count == 3)
        }
    }

    @Test func aSecondDaemonForTheSameStateRefusesToStart() async throws {
        try await withDaemon { daemon in
            let second = try ChildProcess.spawn(
                URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                    .deletingLastPathComponent().appendingPathComponent("ferryd").path,
                environment: ["FERRY_HOME": daemon.home, "PATH": "/usr/bin:/bin"]
            )
            let message = String(decoding: await second.standardError!.readToEndOffPool(), as: UTF8.self)
            await second.exited()
            #expect(second.terminationStatus == 1)
            let pid = try await daemon.pid()
            #expect(message.contains("another ferryd (pid \(pid))"))
            await #expect(daemon.client.status() != nil)
        }
    }
}

/// Raw HTTP/1.1 over the daemon's socket: any method, path and body, and the status as sent.
struct RawControl {
    let socketPath: String

    init(_ daemon: DaemonFixture) { socketPath = daemon.client.paths.socket }

    func send(_ method: String, _ path: String, _ body: String?) throws -> (status: Int, body: Data) {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw DaemonFixture.FixtureError("no socket") }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw DaemonFixture.FixtureError("cannot connect to \(socketPath)") }
        // Neither end may block the test: the daemon stops reading a body it refuses, and an attach
        // answers with a stream that does not end (the head and first line are enough).
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let payload = Array((body ?? "").utf8)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: ferryd\r\nConnection: close\r\n"
        if body != nil { request += "Content-Type: application/json\r\n" }
        request += "Content-Length: \(payload.count)\r\n\r\n"
        let message = Array(request.utf8) + payload
        var sent = 0
        while sent < message.count {
            let count = message[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }  // the daemon may answer (413) and close before reading it all
            sent += count
        }
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
            if path.hasSuffix("/attach"), response.contains(0x0A) { break }
        }
        let text = String(decoding: response, as: UTF8.self)
        let statusLine = text.prefix { $0 != "\r" }
        guard let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw DaemonFixture.FixtureError("no HTTP answer to \(method) \(path): \(text.prefix(200))")
        }
        let bodyStart = response.range(of: Data("\r\n\r\n".utf8)).map { $0.upperBound } ?? response.endIndex
        var rest = Data(response[bodyStart...])
        if text.lowercased().contains("transfer-encoding: chunked") {
            // One chunk is all the daemon's error bodies need: drop its size line.
            if let line = rest.range(of: Data("\r\n".utf8)) { rest = Data(rest[line.upperBound...]) }
        }
        return (status, rest)
    }
}
