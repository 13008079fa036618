import FerryTestServer
import Foundation
import SamenessOnFerry
import SamenessOnFoundation
import Testing

/// Each URLSession program (Tests/SamenessPrograms) runs against FoundationNetworking and against
/// FerryFoundationNetworking, on the same test server, and what each delivered must be the same.
///
/// Where FoundationNetworking is wrong (measured here; docs/FOUNDATION_NETWORKING.md lists each case),
/// Ferry's transcript is checked against Apple's documented behaviour instead, and FoundationNetworking's
/// is shown beside it. `SAMENESS_ONLY=words` runs the programs whose names contain them.
// One program at a time: 31 sessions made at once (each reading the system trust roots, slow in a debug
// build) took 20–35 s each beside the rest of the suite and starved its timing-sensitive tests.
@Suite(.serialized, .timeLimit(.minutes(5))) struct SamenessTests {
    /// Programs where FoundationNetworking departs from Apple's documentation: Ferry's expected transcript
    /// and why. `runsOnFoundation` is false where FoundationNetworking never finishes the program.
    struct Documented {
        let ferry: [String]
        let why: String
        var runsOnFoundation = true
    }

    static let documented: [String: Documented] = [
        "a download with a completion handler": Documented(
            ferry: [
                "data 77777 bytes fnv 816b43c2a4886abc", "status 200 path /bytes/77777 length 77777 expected 77777", "error nil",
                "the file after the handler: removed",
            ],
            why: "Apple: the file at the location given is removed once the handler returns (move it to keep it); FoundationNetworking leaves it in the temporary directory, a file per download"
        ),
        "value(forHTTPHeaderField:) finds a field in any case": Documented(
            ferry: ["CACHE-CONTROL no-store, private", "x-twice a, b", "X-TOKEN t", "etag \"bytes-10-0-v0\"", "missing -", "error nil"],
            why: "RFC 9110 §5.1: field names are case-insensitive, so Cache-Control and cache-control are one field, their values joined (as X-Twice's are); FoundationNetworking keeps one of the two, whichever its dictionary holds last"
        ),
        "a Content-Disposition filename is the suggested file name": Documented(
            ferry: [
                "attachment; filename=\"report.pdf\" → report.pdf", "attachment; filename=\"dir/name.bin\" → dir_name.bin",
                "inline; filename=plain.txt; size=3 → plain.txt", "attachment → 10", " → 10",
            ],
            why: "Apple: without a filename in Content-Disposition, suggestedFilename is the URL's last path component; FoundationNetworking says Unknown"
        ),
        "a response the delegate cancels ends with cancelled": Documented(
            ferry: [
                "didReceiveResponse status 200 path /bytes/300000 length 300000 expected 300000",
                "didComplete error NSURLErrorDomain -999", "state 3",
            ],
            why: "Apple: .cancel is the same as cancel(); FoundationNetworking ignores the disposition and delivers the body"
        ),
        "an upload from data with a completion handler": Documented(
            ferry: ["status 201 path /upload length 107 expected 107", "error nil", "length 12345", "method PUT", "sent 12345"],
            why: "Apple: countOfBytesSent counts the body sent; FoundationNetworking leaves it 0"
        ),
        "task state, identifiers and byte counts": Documented(
            ferry: ["before resume 1", "identifiers differ true", "original /bytes/2048", "after 3 received 2048 expected 2048"],
            why: "Apple: countOfBytesReceived counts the body received; FoundationNetworking leaves it 0 for completion-handler tasks"
        ),
        "a data task's delegate calls, in order": Documented(
            ferry: [
                "didReceiveResponse status 200 path /bytes/300000 length 300000 expected 300000",
                "didReceiveData total data 300000 bytes fnv 2fd031ed4a34e226", "didComplete error nil",
                "status 200 path /bytes/300000 length 300000 expected 300000", "countOfBytesReceived 300000",
            ],
            why: "Apple: countOfBytesReceived counts the body received; FoundationNetworking reports 0 after completion"
        ),
        "a Basic challenge answered by the delegate": Documented(
            ferry: [
                "didReceiveChallenge NSURLAuthenticationMethodHTTPBasic realm ferry-testserver failures 0 after 401",
                "didReceiveResponse status 200 path /basic-auth/ann/s3cret length 23 expected 23",
                "didReceiveData total data 23 bytes fnv 99a6e4857fce94f1", "didComplete error nil",
            ],
            why: "Apple: the challenge comes instead of the 401; FoundationNetworking also delivers the 401's response and body to the delegate"
        ),
        "a Basic challenge without a delegate is the 401": Documented(
            ferry: ["status 401 path /basic-auth/ann/s3cret length 27 expected 27", "error nil"],
            why: "Apple: without credentials the 401 is the response; FoundationNetworking never completes the task",
            runsOnFoundation: false
        ),
        "redirects are followed to the end": Documented(
            ferry: ["status 200 path /bytes/100 length 100 expected 100", "error nil", "data 100 bytes fnv c6dafebc37ce22c0"],
            why: "RFC 3986 §5.2: Location \"2?to=…\" from /redirect/3 is /redirect/2; FoundationNetworking resolves it to /2"
        ),
        "a download cancelled with resume data continues where it stopped": Documented(
            ferry: [
                "resume data given", "in one go: data 2000000 bytes fnv d622b592c132a7f1",
                "didResumeAtOffset 500000 expected 2000000", "didFinishDownloading data 2000000 bytes fnv d622b592c132a7f1",
                "didComplete error nil",
            ],
            why: "Apple: cancel(byProducingResumeData:) gives data that downloadTask(withResumeData:) continues from; FoundationNetworking always gives nil"
        ),
        "a failed download's error carries resume data": Documented(
            ferry: ["error NSURLErrorDomain -1005", "resume data given", "data 1000000 bytes fnv 96855029e5d7364e", "error nil"],
            why: "Apple: a dropped download fails with networkConnectionLost and NSURLSessionDownloadTaskResumeData; FoundationNetworking reports -1 (unknown) without resume data"
        ),
        "a POST with httpBodyStream sends the stream": Documented(
            ferry: [
                "status 200 path /upload length 109 expected 109", "error nil", "length 200000",
                "sha256 916e7efe53ca62a60eabe6c193989a7b71462508852dfd94218e93a048283ccd", "method POST",
            ],
            why: "Apple: the stream is the body; FoundationNetworking's request with a stream and a Content-Length gets a 400 from the server"
        ),
        "a cancelled running task ends with cancelled": Documented(
            ferry: ["didReceiveResponse status 200 path /bytes/100000 length 100000 expected 100000", "didComplete error NSURLErrorDomain -999", "state 3"],
            why: "Apple: once didCompleteWithError has been called the task is completed (3); FoundationNetworking reports 2 (canceling) or 3, by a race"
        ),
        "returnCacheDataDontLoad with nothing cached fails": Documented(
            ferry: ["data nil", "response nil", "error NSURLErrorDomain -1008"],
            why: "Apple: with nothing cached, returnCacheDataDontLoad fails (resourceUnavailable, -1008) without loading; FoundationNetworking loads from the network"
        ),
        "the resource timeout ends a slow transfer": Documented(
            ferry: ["error NSURLErrorDomain -1001"],
            why: "Apple: timeoutIntervalForResource ends the transfer with timedOut; FoundationNetworking never ends it",
            runsOnFoundation: false
        ),
        "httpShouldHandleCookies false sends no cookie": Documented(
            ferry: ["error nil", "cookie sent false"],
            why: "Apple: a request with httpShouldHandleCookies false carries no stored cookie; FoundationNetworking sends it"
        ),
        "a task's own delegate hears the events of its task": Documented(
            ferry: [
                #"task: ["didReceiveResponse status 200 path /bytes/500 length 500 expected 500", "didReceiveData total data 500 bytes fnv 391d58980e18d16d", "didComplete error nil"]"#,
                "session: []",
            ],
            why: "Apple: a task's delegate hears its task's events instead of the session's delegate; FoundationNetworking ignores URLSessionTask.delegate and the task never completes for it",
            runsOnFoundation: false
        ),
        "a URLProtocol's redirect is followed": Documented(
            ferry: [
                "willPerformHTTPRedirection 302 to /ok method GET", "didReceiveResponse status 200 path /ok length 10 expected 10",
                "didReceiveData total data 10 bytes fnv 8ad29990d699260b", "didComplete error nil",
                "status 200 path /ok length 10 expected 10", "current /ok", "start GET /redirect", "stop /redirect", "start GET /ok",
            ],
            why: "Apple: a protocol's redirect goes to willPerformHTTPRedirection, then the new request loads; FoundationNetworking stops the process (\"doesn't currently handle redirects directly\")",
            runsOnFoundation: false
        ),
        "a URLProtocol's redirect the delegate refuses": Documented(
            ferry: ["willPerformHTTPRedirection 302 to /ok method GET", "didComplete error nil", "status 302 path /redirect length - expected -1"],
            why: "Apple: a refused redirect completes with the redirect's response; FoundationNetworking stops the process (\"doesn't currently handle redirects directly\")",
            runsOnFoundation: false
        ),
        "a URLProtocol's delegate calls, in order": Documented(
            ferry: [
                "didReceiveResponse status 200 path /big length 300000 expected 300000",
                "didReceiveData total data 300000 bytes fnv 68dd3658333348c3", "didComplete error nil",
                "status 200 path /big length 300000 expected 300000", "received 300000", "start GET /big",
            ],
            why: "Apple: countOfBytesReceived counts the body received; FoundationNetworking reports 0 after completion"
        ),
        "a URLProtocol's body in pieces reaches the completion handler whole": Documented(
            ferry: ["hello stub", "status 200 path /pieces length 10 expected 10", "error nil"],
            why: "Apple: a completion handler gets the whole body; FoundationNetworking hands over only the protocol's last didLoad (\"stub\")"
        ),
        "a URLProtocol reads an upload's body": Documented(
            ferry: ["read 5000", "status 200 path /body length 9 expected 9", "error nil"],
            why: "Apple: the protocol reads an upload's body from its request's httpBodyStream; FoundationNetworking gives the protocol no body (\"read 0\")"
        ),
        "a URLProtocol answers a download": Documented(
            ferry: ["data 300000 bytes fnv 68dd3658333348c3", "status 200 path /big length 300000 expected 300000", "error nil"],
            why: "Apple: a download's completion handler gets the file of what the protocol loaded; FoundationNetworking gives no file (nil) without an error"
        ),
        "a registered URLProtocol serves the shared session": Documented(
            ferry: ["hello stub", "status 200 path /ok length 10 expected 10", "error nil"],
            why: "Apple: URLProtocol.registerClass makes a class known to URLSession.shared; FoundationNetworking's shared session did not consult it and looked the host up (-1003)"
        ),
    ]

    static var names: [String] { Sameness.names(SamenessOnFerry.SamenessPrograms.all) }

    @Test(arguments: names)
    func bothDeliverTheSame(name: String) async throws {
        try await TestServer.withServer { server in
            let origin = server.url("").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            try await Sameness.compare(
                name,
                SamenessOnFoundation.SamenessPrograms.all,
                SamenessOnFerry.SamenessPrograms.all,
                origin: origin,
                documented: Self.documented[name]
            )
        }
    }
}

/// Running one program on both sides and comparing what each delivered (both suites).
enum Sameness {
    typealias Programs = [(name: String, program: SamenessOnFerry.SamenessPrograms.Program)]

    /// Every program's name, or those containing `SAMENESS_ONLY`.
    static func names(_ programs: Programs) -> [String] {
        let only = ProcessInfo.processInfo.environment["SAMENESS_ONLY"]
        return programs.map(\.name).filter { only == nil || $0.contains(only!) }
    }

    /// Runs `name` from `onFoundation` and `onFerry` against `origin` (each side bounded by 60 s), and
    /// expects the same transcript, or Ferry's to be the documented one.
    static func compare(_ name: String, _ onFoundation: Programs, _ onFerry: Programs, origin: String, documented: SamenessTests.Documented?) async throws {
        let foundationProgram = try #require(onFoundation.first { $0.name == name }).program
        let ferryProgram = try #require(onFerry.first { $0.name == name }).program
        let clock = ContinuousClock()
        let started = clock.now
        var foundation = ["not run: FoundationNetworking never finishes this program"]
        if documented?.runsOnFoundation ?? true {
            foundation = await Bounded.run(.seconds(60)) { await foundationProgram(origin) } ?? ["FoundationNetworking did not finish within 60 s"]
        }
        let between = clock.now
        let ferry = await Bounded.run(.seconds(60)) { await ferryProgram(origin) } ?? ["Ferry did not finish within 60 s"]
        print("sameness: \(name): FoundationNetworking \(between - started), Ferry \(clock.now - between)")
        if let documented {
            #expect(ferry == documented.ferry, "\(name): \(documented.why)\nFoundationNetworking: \(foundation)\nFerry: \(ferry)")
        } else {
            #expect(ferry == foundation, "\(name)\nFoundationNetworking: \(foundation)\nFerry: \(ferry)")
        }
    }
}

/// The WebSocket programs, against the Python `websockets` peer (skipped with the reason when it is
/// missing). FoundationNetworking's WebSocket client is libcurl's.
@Suite(.serialized, .timeLimit(.minutes(5)), .enabled(if: WebSocketPeer.unavailable == nil, "\(WebSocketPeer.unavailable ?? "")"))
struct WebSocketSamenessTests {
    /// Every WebSocket program departs: this toolchain's FoundationNetworking has libcurl without
    /// WebSocket support, so its tasks fail with unsupportedURL (-1002). Ferry's transcripts are checked
    /// against Apple's documentation.
    static let lacks = "FoundationNetworking's libcurl has no WebSocket support here: -1002 unsupportedURL"
    static let documented: [String: SamenessTests.Documented] = [
        "a WebSocket echoes text and binary": SamenessTests.Documented(
            ferry: ["send text error nil", "string hello error nil", "send data error nil", "data 3000 bytes error nil"],
            why: "Apple: text comes back as text, binary as binary; \(lacks)"
        ),
        "a WebSocket's delegate hears it open and complete": SamenessTests.Documented(
            ferry: ["didOpen protocol none", "didClose 1001", "didComplete error nil", "closeCode 1001"],
            why: "Apple: didOpenWithProtocol, didCloseWith the code sent, didComplete without an error; FoundationNetworking never opens it and never completes",
            runsOnFoundation: false
        ),
        "a WebSocket the server closes gives its code and reason": SamenessTests.Documented(
            ferry: ["no message", "failed true", "closeCode 1008", "reason policy"],
            why: "Apple: closeCode and closeReason are the server's; \(lacks)"
        ),
        "a WebSocket ping gets its pong": SamenessTests.Documented(
            ferry: ["pong error nil"],
            why: "Apple: the pong handler gets nil; FoundationNetworking reports -1005"
        ),
        "a WebSocket's subprotocol is the one the server chose": SamenessTests.Documented(
            ferry: ["string chat", "error nil"],
            why: "Apple: the offered protocol is sent and the server chooses it; \(lacks)"
        ),
        "a WebSocket the server refuses fails the task": SamenessTests.Documented(
            ferry: ["no message", "failed true", "didComplete error NSURLErrorDomain -1011"],
            why: "Apple: a refused handshake is badServerResponse (-1011); \(lacks)"
        ),
    ]

    static var names: [String] { Sameness.names(SamenessOnFerry.SamenessPrograms.webSocketPrograms) }

    @Test(arguments: names)
    func bothDeliverTheSame(name: String) async throws {
        let peer = try await WebSocketPeer.start()
        defer { peer.stop() }
        try await Sameness.compare(
            name,
            SamenessOnFoundation.SamenessPrograms.webSocketPrograms,
            SamenessOnFerry.SamenessPrograms.webSocketPrograms,
            origin: "ws://127.0.0.1:\(peer.port)",
            documented: Self.documented[name]
        )
    }
}

/// A program's transcript, or nil when it has not finished within a limit: a program that hangs is left
/// behind (the bound only tells a hang from a wait).
enum Bounded {
    static func run(_ limit: Duration, _ body: @escaping @Sendable () async -> [String]) async -> [String]? {
        let first = SamenessOnFerry.SamenessPrograms.Waiter<[String]?>()
        Task { first.finish(await body()) }
        let timer = Task {
            try? await Task.sleep(for: limit)
            first.finish(nil)
        }
        defer { timer.cancel() }
        return await first.value()
    }
}
