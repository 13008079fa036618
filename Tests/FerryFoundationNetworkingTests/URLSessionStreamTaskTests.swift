import FerryFoundationNetworking
import FerryTestServer
import Foundation
import SamenessOnFerry
import Synchronization
import Testing

/// URLSessionStreamTask against the line echo peer (Tests/Scripts/tcp_peer.py): writes and reads in the
/// order asked for, closeWrite after them, and the stream delegate's calls. FoundationNetworking has no
/// stream tasks, so there is nothing to compare with.
@Suite struct URLSessionStreamTaskTests {
    final class Recorder: NSObject, URLSessionStreamDelegate, @unchecked Sendable {
        let seen = Mutex<[String]>([])
        let done = SamenessPrograms.Waiter<(any Error)?>()
        let readClosed = SamenessPrograms.Waiter<Void>()
        func urlSession(_ session: URLSession, readClosedFor streamTask: URLSessionStreamTask) {
            seen.withLock { $0.append("readClosed") }
            readClosed.finish(())
        }
        func urlSession(_ session: URLSession, writeClosedFor streamTask: URLSessionStreamTask) { seen.withLock { $0.append("writeClosed") } }
        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            seen.withLock { $0.append("didComplete") }
            done.finish(error)
        }
    }

    /// Reads until `count` bytes came (or the stream ended).
    private func read(_ task: URLSessionStreamTask, _ count: Int) async throws -> String {
        var text = ""
        while text.utf8.count < count {
            let (data, atEOF) = try await task.readData(ofMinLength: 1, maxLength: count - text.utf8.count, timeout: 30)
            text += data.map { String(decoding: $0, as: UTF8.self) } ?? ""
            if atEOF { break }
        }
        return text
    }

    @Test func writesGoInOrderAndClosingTheWriteSideEndsTheStream() async throws {
        let peer = try await PythonPeer.start("tcp_peer.py")
        defer { peer.stop() }
        let recorder = Recorder()
        let session = URLSession(configuration: .ephemeral, delegate: recorder, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.streamTask(withHostName: "127.0.0.1", port: peer.ports[0])
        task.resume()
        // Three writes asked for at once go in that order, and closeWrite after them.
        let written = SamenessPrograms.Waiter<Void>()
        let errors = Mutex<[String]>([])
        for (index, line) in ["one\n", "two\n", "three\n"].enumerated() {
            task.write(Data(line.utf8), timeout: 10) { error in
                if let error { errors.withLock { $0.append("\(error)") } }
                if index == 2 { written.finish(()) }
            }
        }
        await written.value()
        #expect(errors.withLock { $0 }.isEmpty)
        #expect(try await read(task, 14) == "one\ntwo\nthree\n")
        task.closeWrite()
        #expect(try await read(task, 100) == "BYE\n")
        let (rest, atEOF) = try await task.readData(ofMinLength: 1, maxLength: 10, timeout: 10)
        #expect(rest == nil && atEOF)
        #expect(await recorder.done.value() == nil)
        await recorder.readClosed.value()
        // The end of the stream and the task's completion both follow the server's close: their order
        // between them is not fixed, the write side's close comes first.
        let seen = recorder.seen.withLock { $0 }
        #expect(seen.first == "writeClosed")
        #expect(Set(seen) == ["writeClosed", "readClosed", "didComplete"] && seen.count == 3)
    }

    /// Answers `.becomeStream` and hands on the stream task.
    final class Converter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let stream = SamenessPrograms.Waiter<URLSessionStreamTask>()
        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            completionHandler(.becomeStream)
        }
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didBecome streamTask: URLSessionStreamTask) {
            stream.finish(streamTask)
        }
    }

    @Test func aSwitchOfProtocolsBecomesAStreamTask() async throws {
        let peer = try await PythonPeer.start("become_stream_peer.py")
        defer { peer.stop() }
        let delegate = Converter()
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "http://127.0.0.1:\(peer.ports[0])/upgrade")!)
        task.resume()
        let stream = await delegate.stream.value()
        // "hello" came in the same write as the 101's head.
        #expect(try await read(stream, 6) == "hello\n")
        try await stream.write(Data("ping\n".utf8), timeout: 10)
        #expect(try await read(stream, 10) == "echo ping\n")
        #expect(task.state == .completed, "the data task ended when it became a stream")
        stream.cancel()
    }
}
