import Ferry
import FerryTestServer
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The becomeStream disposition against a real HTTP/1.1 peer (Tests/Scripts/become_stream_peer.py)
/// whose answers go on as line echoes, over http and https.
@Suite(.timeLimit(.minutes(3))) struct BecomeStreamTests {
    /// The peer whose answers go on as streams (Tests/Scripts/become_stream_peer.py), plain and TLS.
    private struct Peer {
        let peer: PythonPeer
        var certificates: TestCertificates { peer.certificates }

        static func start() async throws -> Peer { Peer(peer: try await PythonPeer.start("become_stream_peer.py")) }

        func url(_ path: String, secure: Bool = false) -> URL {
            URL(string: secure ? "https://localhost:\(peer.ports[1])\(path)" : "http://127.0.0.1:\(peer.ports[0])\(path)")!
        }

        var port: Int { peer.ports[0] }
        var securePort: Int { peer.ports[1] }

        func stop() { peer.stop() }
    }

    /// Answers becomeStream (after `pause`), and hands on the stream tasks and the completions it sees.
    final class Converter: DataDelegate, @unchecked Sendable {
        let pause: Duration
        let streams: AsyncStream<StreamTask>
        private let continuation: AsyncStream<StreamTask>.Continuation
        let completions = Mutex<[Int: FerryError?]>([:])
        let bodies = Mutex(0)

        init(pause: Duration = .zero) {
            self.pause = pause
            (streams, continuation) = AsyncStream.makeStream()
        }

        func session(_ session: Session, dataTask: DataTask, didReceive response: Response) async -> ResponseDisposition {
            if pause > .zero { try? await Task.sleep(for: pause) }
            return .becomeStream
        }

        func session(_ session: Session, dataTask: DataTask, didBecome streamTask: StreamTask) async {
            continuation.yield(streamTask)
        }

        func session(_ session: Session, dataTask: DataTask, didReceive data: Data) async {
            bodies.withLock { $0 += data.count }
        }

        func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
            completions.withLock { $0[task.taskIdentifier] = error }
            // A data task that completes did not become a stream (one that does ends silently): no stream
            // will come, and a test waiting for one fails instead of hanging (a run under heavy load did).
            if !(task is StreamTask) { continuation.finish() }
        }

        /// The next stream task; nil when none will come (its data task completed instead).
        func nextStream() async -> StreamTask? {
            var iterator = streams.makeAsyncIterator()
            return await iterator.next()
        }
    }

    private func session(_ peer: Peer, delegate: Converter) -> Session {
        var configuration = SessionConfiguration.ephemeral
        configuration.tls.additionalTrustRootsPEM = [peer.certificates.trustRootPEM]
        return Session(configuration: configuration, delegate: delegate)
    }

    /// Echoes one line, ends writing, and reads the goodbye (over TLS, Python's peer answers close_notify
    /// by closing at once) and the end of the stream.
    private func converse(_ stream: StreamTask, secure: Bool) async throws {
        try await stream.write(Data("ping\n".utf8), timeout: 10)
        #expect(try await stream.readText(10) == "echo ping\n")
        await stream.closeWrite()
        let goodbye = try await stream.readText(100)
        #expect(goodbye == "BYE\n" || (secure && goodbye.isEmpty))
        await stream.waitUntilFinished()
        #expect(stream.error == nil)
    }

    @Test(arguments: [false, true])
    func aSwitchOfProtocolsBecomesAStreamStartingWithWhatCameWithTheHead(secure: Bool) async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let delegate = Converter()
        let session = session(peer, delegate: delegate)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: peer.url("/upgrade", secure: secure))
        task.resume()
        let stream = try #require(await delegate.nextStream(), "no stream: \(delegate.completions.withLock { $0 })")
        #expect(stream.port == (secure ? peer.securePort : peer.port))
        // "hello" came in the same write as the 101's head: the HTTP decoder held it and hands it on.
        #expect(try await stream.readText(6) == "hello\n")
        try await converse(stream, secure: secure)
        // The data task ended silently: only the stream task completed.
        await task.waitUntilFinished()
        #expect(delegate.completions.withLock { $0.keys.sorted() } == [stream.taskIdentifier])
    }

    @Test(arguments: [false, true])
    func aBodyStillStreamingInBecomesAStreamWithItsUnreadBytesFirst(secure: Bool) async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        // While the delegate decides, "more" arrives and waits in the body's buffers: it comes before what
        // the connection reads later, after "start".
        let delegate = Converter(pause: .milliseconds(400))
        let session = session(peer, delegate: delegate)
        defer { session.invalidateAndCancel() }
        session.dataTask(with: peer.url("/body", secure: secure)).resume()
        let stream = try #require(await delegate.nextStream(), "no stream: \(delegate.completions.withLock { $0 })")
        #expect(try await stream.readText(11) == "start\nmore\n")
        try await converse(stream, secure: secure)
        #expect(delegate.bodies.withLock { $0 } == 0)
    }

    @Test(arguments: ["/chunked", "/small"])
    func aChunkedOrCompleteBodyCannotBecomeAStream(path: String) async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let delegate = Converter()
        let session = session(peer, delegate: delegate)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: peer.url(path))
        task.resume()
        await task.waitUntilFinished()
        let error = try #require(task.error)
        #expect(error.code == .invalidOperation)
        #expect(error.message.contains(path == "/chunked" ? "chunked" : "complete"))
        #expect(delegate.completions.withLock { $0.count } == 1)
    }

    @Test func aConnectionThatSwitchedProtocolsIsNeverReused() async throws {
        let peer = try await Peer.start()
        defer { peer.stop() }
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let (body, response) = try await session.data(from: peer.url("/upgrade"))
        #expect(response.statusCode == 101 && body.isEmpty)
        // On the switched connection the peer would echo this request's lines back as its answer.
        let (small, answer) = try await session.data(from: peer.url("/small"))
        #expect(answer.statusCode == 200 && String(decoding: small, as: UTF8.self) == "hello")
    }

    @Test func aProtocolHandlersAnswerCannotBecomeAStream() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolHandlers = [MemoryHandler.self]
        let delegate = Converter()
        let session = Session(configuration: configuration, delegate: delegate)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: URL(string: "memory://store/text")!)
        task.resume()
        await task.waitUntilFinished()
        let error = try #require(task.error)
        #expect(error.code == .invalidOperation)
        #expect(error.message.contains("only an HTTP/1.1 connection"))
    }
}
