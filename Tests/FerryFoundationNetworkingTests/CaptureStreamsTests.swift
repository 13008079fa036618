import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// `URLSessionStreamTask.captureStreams()` against the line echo peer (Tests/Scripts/tcp_peer.py): the
/// reads and writes asked for before go first, the delegate gets the connection as Foundation streams,
/// and the task reports nothing more. FoundationNetworking has no stream tasks, so this is checked
/// against Apple's documentation. The streams are used from a thread of their own, as a program that
/// uses Foundation streams does: their `read` and `write` wait.
@Suite struct CaptureStreamsTests {
    final class Listener: NSObject, URLSessionStreamDelegate, @unchecked Sendable {
        let seen = Mutex<[String]>([])
        let streams = SamenessPrograms.Waiter<Carried>()
        let invalid = SamenessPrograms.Waiter<Void>()
        func urlSession(_ session: URLSession, streamTask: URLSessionStreamTask, didBecome inputStream: InputStream, outputStream: OutputStream) {
            seen.withLock { $0.append("didBecome") }
            streams.finish(Carried(input: inputStream, output: outputStream))
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            seen.withLock { $0.append("didComplete") }
        }
        func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
            seen.withLock { $0.append("metrics") }
        }
        func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) { invalid.finish(()) }
    }

    struct Carried: @unchecked Sendable {
        let input: InputStream
        let output: OutputStream
    }

    /// Runs `body` on a thread of its own and returns what it returns.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    /// A stream task to the echo peer that wrote `first` and then captured its streams.
    static func captured(_ first: String, peer: PythonPeer, listener: Listener) async throws -> (URLSession, URLSessionStreamTask, Carried) {
        let session = URLSession(configuration: .ephemeral, delegate: listener, delegateQueue: nil)
        let task = session.streamTask(withHostName: "127.0.0.1", port: peer.ports[0])
        task.resume()
        task.write(Data(first.utf8), timeout: 10) { _ in }
        task.captureStreams()
        return (session, task, await listener.streams.value())
    }

    @Test func theStreamsCarryTheConnectionAfterWhatWasAskedBefore() async throws {
        let peer = try await PythonPeer.start("tcp_peer.py")
        defer { peer.stop() }
        let listener = Listener()
        let (session, task, streams) = try await Self.captured("first\n", peer: peer, listener: listener)

        // The task itself no longer reads or writes.
        do {
            _ = try await task.readData(ofMinLength: 1, maxLength: 10, timeout: 5)
            Issue.record("a read after captureStreams succeeded")
        } catch {
            #expect((error as? URLError)?.code == .cancelled, "\(error)")
        }

        let (text, status) = await Self.onThread { () -> (String, Stream.Status) in
            let input = streams.input, output = streams.output
            #expect(input.streamStatus == .notOpen && output.streamStatus == .notOpen)
            input.open()
            output.open()
            let line = Array("ping\n".utf8)
            #expect(output.write(line, maxLength: line.count) == line.count)
            output.close()  // the write side closes once "ping" is sent: the peer answers "BYE" and closes
            var received = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 3)  // small reads: a line comes in pieces
            while true {
                let count = input.read(&buffer, maxLength: buffer.count)
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            let status = input.streamStatus
            input.close()
            return (String(decoding: received, as: UTF8.self), status)
        }
        #expect(text == "first\nping\nBYE\n")
        #expect(status == .atEnd)

        session.finishTasksAndInvalidate()
        await listener.invalid.value()
        #expect(listener.seen.withLock { $0 } == ["didBecome"], "the task reports nothing after its streams")
    }

    /// A stream delegate on a run loop: writes on `hasSpaceAvailable`, reads on `hasBytesAvailable`,
    /// stops at `endEncountered`.
    final class RunLoopClient: NSObject, StreamDelegate, @unchecked Sendable {
        let input: InputStream
        let output: OutputStream
        var events: [String] = []
        var received = [UInt8]()
        var wrote = false
        var done = false

        init(_ streams: Carried) {
            input = streams.input
            output = streams.output
        }

        func stream(_ stream: Stream, handle event: Stream.Event) {
            let side = stream === input ? "in" : "out"
            switch event {
            case .openCompleted: events.append("\(side).open")
            case .hasSpaceAvailable:
                guard !wrote else { return }
                wrote = true
                events.append("out.space")
                let line = Array("hello\n".utf8)
                _ = output.write(line, maxLength: line.count)
                output.close()
            case .hasBytesAvailable:
                var buffer = [UInt8](repeating: 0, count: 1024)
                while input.hasBytesAvailable {
                    let count = input.read(&buffer, maxLength: buffer.count)
                    if count <= 0 { break }
                    received += buffer[0..<count]
                }
                if events.last != "in.bytes" { events.append("in.bytes") }
            case .endEncountered:
                events.append("in.end")
                input.close()
                done = true
            case .errorOccurred:
                events.append("\(side).error \(String(describing: stream.streamError))")
                done = true
            default:
                events.append("\(side).other")
            }
        }

        /// Schedules both streams in this thread's run loop, opens them and runs the loop until the end
        /// (at most 60 s, which tells waiting from hanging).
        func run() {
            for stream in [input, output] as [Stream] {
                stream.delegate = self
                stream.schedule(in: .current, forMode: .default)
                stream.open()
            }
            let end = Date().addingTimeInterval(60)
            while !done && Date() < end {
                _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.5))
            }
        }
    }

    @Test func scheduledStreamsTellTheirDelegateInTheirRunLoop() async throws {
        let peer = try await PythonPeer.start("tcp_peer.py")
        defer { peer.stop() }
        let listener = Listener()
        let (session, _, streams) = try await Self.captured("first\n", peer: peer, listener: listener)
        let client = RunLoopClient(streams)
        let (events, text) = await Self.onThread { () -> ([String], String) in
            client.run()
            return (client.events, String(decoding: client.received, as: UTF8.self))
        }
        #expect(text == "first\nhello\nBYE\n", "\(events)")
        // Each stream's open comes before its other events; between the two streams the run loop may
        // deliver the input's bytes (already there) before the output's open (a loaded run did).
        #expect(events.first { $0.hasPrefix("in.") } == "in.open", "\(events)")
        #expect(events.first { $0.hasPrefix("out.") } == "out.open", "\(events)")
        #expect(events.contains("out.space") && events.contains("in.bytes"), "\(events)")
        #expect(events.last == "in.end", "\(events)")
        session.finishTasksAndInvalidate()
        await listener.invalid.value()
        #expect(listener.seen.withLock { $0 } == ["didBecome"])
    }
}
