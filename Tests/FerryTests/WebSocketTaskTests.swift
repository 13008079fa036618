import Ferry
import FerryEngine
import FerryTestServer
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension WebSocketPeer {
    static func with(
        delegate: (any SessionDelegate)? = nil,
        _ body: (WebSocketPeer, Session) async throws -> Void
    ) async throws {
        let peer = try await start()
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral, delegate: delegate)
        defer { session.invalidateAndCancel() }
        try await body(peer, session)
    }
}

/// What a WebSocket delegate heard.
final class WebSocketEvents: WebSocketDelegate, @unchecked Sendable {
    let opened = Mutex<[String?]>([])
    let closed = Mutex<[(WebSocketCloseCode, Data?)]>([])
    let completed = Mutex<[FerryError?]>([])

    func session(_ session: Session, webSocketTask: WebSocketTask, didOpenWithProtocol protocol: String?) async {
        opened.withLock { $0.append(`protocol`) }
    }

    func session(_ session: Session, webSocketTask: WebSocketTask, didCloseWith closeCode: WebSocketCloseCode, reason: Data?) async {
        closed.withLock { $0.append((closeCode, reason)) }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        completed.withLock { $0.append(error) }
    }
}

@Suite(.enabled(if: WebSocketPeer.unavailable == nil, "\(WebSocketPeer.unavailable ?? "")"))
struct WebSocketTaskTests {
    @Test func textAndBinaryMessagesEcho() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/echo"))
            socket.resume()
            try await socket.send(.string("hello, ferry"))
            let got1 = try await socket.receive()
            #expect(got1 == .string("hello, ferry"))
            let bytes = Data((0..<70_000).map { UInt8($0 % 251) })
            try await socket.send(.data(bytes))
            let got2 = try await socket.receive()
            #expect(got2 == .data(bytes))
            socket.cancel(with: .normalClosure, reason: nil)
            await socket.waitUntilFinished()
            #expect(socket.error == nil)
            #expect(socket.closeCode == .normalClosure)
        }
    }

    @Test func completionHandlersWork() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/echo"))
            socket.resume()
            let sent: FerryError? = await withCheckedContinuation { done in
                socket.send(.string("by handler")) { done.resume(returning: $0) }
            }
            #expect(sent == nil)
            let received: Result<WebSocketMessage, FerryError> = await withCheckedContinuation { done in
                socket.receive { done.resume(returning: $0) }
            }
            let got3 = try received.get()
            #expect(got3 == .string("by handler"))
            let pong: FerryError? = await withCheckedContinuation { done in
                socket.sendPing { done.resume(returning: $0) }
            }
            #expect(pong == nil)
            socket.cancel(with: .goingAway, reason: nil)
            await socket.waitUntilFinished()
        }
    }

    @Test func theSubprotocolAndTheDelegateHearOpenAndClose() async throws {
        let events = WebSocketEvents()
        try await WebSocketPeer.with(delegate: events) { peer, session in
            let socket = session.webSocketTask(with: peer.url("/protocol"), protocols: ["superchat", "other"])
            socket.resume()
            let got4 = try await socket.receive()
            #expect(got4 == .string("superchat"))
            #expect(socket.selectedProtocol == "superchat")
            socket.cancel(with: WebSocketCloseCode(rawValue: 4002), reason: Data("bye now".utf8))
            await socket.waitUntilFinished()
            #expect(socket.closeCode.rawValue == 4002)
            #expect(socket.closeReason == Data("bye now".utf8))
        }
        #expect(events.opened.withLock { $0 } == ["superchat"])
        let closed = events.closed.withLock { $0 }
        #expect(closed.count == 1 && closed.first?.0.rawValue == 4002)
        #expect(events.completed.withLock { $0.count } == 1)
        #expect(events.completed.withLock { $0.first } == .some(nil))
    }

    @Test func aServerCloseWithACustomCodeIsReported() async throws {
        let events = WebSocketEvents()
        try await WebSocketPeer.with(delegate: events) { peer, session in
            let socket = session.webSocketTask(with: peer.url("/close?code=4001&reason=server%20says%20bye"))
            socket.resume()
            let error = await #expect(throws: FerryError.self) { try await socket.receive() }
            #expect(error?.code == .notConnected)
            await socket.waitUntilFinished()
            #expect(socket.closeCode.rawValue == 4001)
            #expect(socket.closeReason == Data("server says bye".utf8))
            #expect(socket.error == nil)
        }
        #expect(events.closed.withLock { $0.first?.0.rawValue } == 4001)
    }

    @Test func messagesBeforeTheServersCloseAreStillDelivered() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/close-after"))
            socket.resume()
            try await socket.send(.string("last words"))
            // Give the close time to arrive behind the echo: the echo still comes first.
            await socket.waitUntilFinished()
            let got5 = try await socket.receive()
            #expect(got5 == .string("last words"))
            await #expect(throws: FerryError.self) { try await socket.receive() }
            #expect(socket.closeCode.rawValue == 4000)
        }
    }

    @Test func aDroppedConnectionFailsAPendingReceiveAtOnce() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/drop"))
            socket.resume()
            try await socket.send(.string("drop now"))
            let started = ContinuousClock.now
            let error = await #expect(throws: FerryError.self) { try await socket.receive() }
            #expect(error?.code == .networkConnectionLost)
            // Ended by the drop, not by a timeout: a timeout would fail it as timedOut (checked above),
            // and the request timeout is 60 s. The bound only tells that from waiting for it; it was
            // 3 s, and a full run beside two CPU hogs took 4.75 s here (the close timeout, 5 s, does not
            // apply: this side never sent a close).
            #expect(ContinuousClock.now - started < .seconds(30))
            await socket.waitUntilFinished()
            #expect(socket.error?.code == .networkConnectionLost)
            #expect(socket.closeCode == .abnormalClosure)
        }
    }

    @Test func aMessageOverTheMaximumClosesWith1009() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/big?size=2000000"))
            #expect(socket.maximumMessageSize == 1 << 20)
            socket.resume()
            let error = await #expect(throws: FerryError.self) { try await socket.receive() }
            #expect(error?.code == .dataLengthExceedsMaximum)
            #expect(error?.message.contains("maximumMessageSize") == true)
            await socket.waitUntilFinished()
            #expect(socket.closeCode == .messageTooBig)

            let larger = session.webSocketTask(with: peer.url("/big?size=2000000"))
            larger.maximumMessageSize = 4 << 20
            larger.resume()
            guard case .data(let data) = try await larger.receive() else {
                Issue.record("expected binary")
                return
            }
            #expect(data.count == 2_000_000)
            larger.cancel(with: .normalClosure, reason: nil)
            await larger.waitUntilFinished()
        }
    }

    @Test func permessageDeflateIsNegotiatedAndCarriesMessages() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/deflate"))
            socket.compression = true
            socket.resume()
            guard case .string(let report) = try await socket.receive() else {
                Issue.record("expected text")
                return
            }
            #expect(report.contains("active=permessage-deflate"))
            let text = String(repeating: "the quick brown fox jumps over the lazy dog; ", count: 4000)
            for _ in 0..<3 {
                try await socket.send(.string(text))
                let got6 = try await socket.receive()
                #expect(got6 == .string(text))
            }
            let bytes = Data((0..<100_000).map { UInt8(($0 * 7) % 256) })
            try await socket.send(.data(bytes))
            let got7 = try await socket.receive()
            #expect(got7 == .data(bytes))
            socket.cancel(with: .normalClosure, reason: nil)
            await socket.waitUntilFinished()
            #expect(socket.error == nil)

            let plain = session.webSocketTask(with: peer.url("/deflate"))
            plain.resume()
            guard case .string(let offered) = try await plain.receive() else { return }
            #expect(offered.hasSuffix("active="))
            plain.cancel(with: .normalClosure, reason: nil)
        }
    }

    @Test func cookiesAndHeadersGoWithTheHandshakeAndSetCookieIsKept() async throws {
        try await WebSocketPeer.with { peer, session in
            let http = URL(string: "http://127.0.0.1:\(peer.port)/")!
            session.cookies?.receive(Headers([("Set-Cookie", "before=1; Path=/")]), from: http)
            var request = Request(url: peer.url("/headers"))
            request.headers.add(name: "X-Test", value: "yes")
            let socket = session.webSocketTask(with: request)
            socket.resume()
            let got8 = try await socket.receive()
            #expect(got8 == .string("cookie=before=1 x-test=yes"))
            #expect(session.cookies?.cookieHeader(for: http)?.contains("ws=from-upgrade") == true)
            #expect(socket.response?.statusCode == 101)
            socket.cancel(with: .normalClosure, reason: nil)
            await socket.waitUntilFinished()
        }
    }

    @Test func aRefusedUpgradeSaysWhatTheServerAnswered() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/refuse"))
            socket.resume()
            let error = await #expect(throws: FerryError.self) { try await socket.send(.string("x")) }
            #expect(error?.code == .badServerResponse)
            #expect(error?.message.contains("403") == true)
            await socket.waitUntilFinished()
            #expect(socket.error?.code == .badServerResponse)
        }
    }

    @Test func wssUsesTheSessionsTrustSettings() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-wss-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificates = try TestCertificates.generate()
        let peer = try await WebSocketPeer.start(certificates: certificates, directory: directory)
        defer { peer.stop() }

        let untrusting = Session(configuration: .ephemeral)
        defer { untrusting.invalidateAndCancel() }
        let refused = untrusting.webSocketTask(with: URL(string: "wss://localhost:\(peer.port)/echo")!)
        refused.resume()
        let error = await #expect(throws: FerryError.self) { try await refused.receive() }
        #expect(error?.code == .serverCertificateUntrusted || error?.code == .secureConnectionFailed)

        var configuration = SessionConfiguration.ephemeral
        configuration.tls.additionalTrustRootsPEM = [certificates.trustRootPEM]
        let session = Session(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: URL(string: "wss://localhost:\(peer.port)/echo")!)
        socket.resume()
        try await socket.send(.string("over TLS"))
        let got9 = try await socket.receive()
        #expect(got9 == .string("over TLS"))
        socket.cancel(with: .normalClosure, reason: nil)
        await socket.waitUntilFinished()
        #expect(socket.error == nil)
    }

    @Test func aWrongSchemeIsRefusedClearly() async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: URL(string: "http://127.0.0.1:1/")!)
        socket.resume()
        let error = await #expect(throws: FerryError.self) { try await socket.receive() }
        #expect(error?.code == .unsupportedURL)
    }

    @Test func plainCancelEndsTheTaskAsCancelled() async throws {
        try await WebSocketPeer.with { peer, session in
            let socket = session.webSocketTask(with: peer.url("/echo"))
            socket.resume()
            try await socket.send(.string("x"))
            _ = try await socket.receive()
            let waiting = Task { try await socket.receive() }
            socket.cancel()
            await socket.waitUntilFinished()
            #expect(socket.error?.code == .cancelled)
            await #expect(throws: FerryError.self) { try await waiting.value }
        }
    }
}

/// Servers that end the connection right after their handshake answer (tests/Scripts/hostile_peer.py):
/// the task ends with the connection lost, after the messages that came before, and never waits for
/// ever. Until 2026-11-26 a close in the same read as the 101 left `receive()` waiting for good (it hung
/// Benchmarks/autobahn.sh at kosoku's updateReports).
@Suite(.timeLimit(.minutes(2)))
struct WebSocketAbruptServerTests {
    @Test func aServerThatClosesRightAfterItsHandshakeEndsTheTask() async throws {
        let peer = try await PythonPeer.start("hostile_peer.py")
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: URL(string: "ws://127.0.0.1:\(peer.ports[0])/ws/close-at-once")!)
        socket.compression = true
        socket.resume()
        let error = await #expect(throws: FerryError.self) { try await socket.receive() }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        await socket.waitUntilFinished()
        #expect(socket.error?.code == .networkConnectionLost)
    }

    @Test func aMessageBeforeTheCloseIsDeliveredFirst() async throws {
        let peer = try await PythonPeer.start("hostile_peer.py")
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: URL(string: "ws://127.0.0.1:\(peer.ports[0])/ws/hello-then-close-on-message")!)
        socket.compression = true
        socket.resume()
        try await socket.send(.string("go"))
        #expect(try await socket.receive() == .string("hello"))
        await #expect(throws: FerryError.self) { try await socket.receive() }
        await socket.waitUntilFinished()
        #expect(socket.error?.code == .networkConnectionLost)
    }

    /// The 101, a message and the close in one write: the task ends (it waited for ever until
    /// 2026-11-26). The message is not delivered when the connection has closed before NIO's upgrade
    /// handler has put the WebSocket handlers in place (it never forwards the bytes it held then): a
    /// known loss, docs/WEBSOCKETS.md.
    @Test func theHandshakeAMessageAndTheCloseInOneWriteEndTheTask() async throws {
        let peer = try await PythonPeer.start("hostile_peer.py")
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: URL(string: "ws://127.0.0.1:\(peer.ports[0])/ws/hello-then-close")!)
        socket.compression = true
        socket.resume()
        while true {
            do {
                #expect(try await socket.receive() == .string("hello"))
            } catch {
                #expect((error as? FerryError)?.code == .networkConnectionLost, "\(error)")
                break
            }
        }
        await socket.waitUntilFinished()
        #expect(socket.error?.code == .networkConnectionLost)
    }
}
