import Ferry
import FerryEngine
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// Resumable uploads through a session (SPEC S4.6): the IETF draft against apple/swift-nio-extras'
/// NIOResumableUpload server (the test server's resumable listener).
@Suite struct SessionResumableUploadTests {
    private struct UploadReport: Decodable {
        var length: Int64
        var sha256: String
    }

    private func resumablePost(_ url: String) -> Request {
        var request = request(url)
        request.method = "POST"
        request.resumableUpload = true
        return request
    }

    @Test func aResumableUploadLooksLikeAnUploadToTheDelegate() async throws {
        let recorder = Recorder()
        let bytes = DeterministicBytes(seed: 91).bytes(offset: 0, count: 2_000_000)
        let file = try temporaryDirectory().appendingPathComponent("upload.bin")
        try Data(bytes).write(to: file)
        try await withSession(delegate: recorder) { server, session in
            let task = session.uploadTask(
                with: resumablePost(server.url("/upload?keep=sess1", on: .resumable)),
                fromFile: file
            )
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(task.error == nil)
            #expect(task.response?.statusCode == 200)
            let report = try JSONDecoder().decode(UploadReport.self, from: Data(recorder.body(of: id)))
            #expect(report.sha256 == sha256(bytes))
            #expect(server.storedUpload(key: "sess1")?.body == bytes)
            #expect(task.countOfBytesSent == 2_000_000)
            // The server's 104 (Upload Resumption Supported) reaches the delegate as an informational
            // answer, as 1xx answers do; otherwise the delegate sees an upload.
            let events = recorder.events(of: id)
            #expect(events.contains { if case .informational(_, 104, _) = $0 { true } else { false } }, "\(events)")
            #expect(collapsed(events.filter { $0.kind != "informational" }).prefix(2) == ["sent", "response"])

            // A server without the protocol gets a plain upload.
            let plain = session.uploadTask(with: resumablePost(server.url("/upload?keep=sess2")), fromFile: file)
            plain.resume()
            await plain.waitUntilFinished()
            #expect(plain.error == nil)
            #expect(server.storedUpload(key: "sess2")?.body == bytes)
        }
    }

    /// Suspends the first task once a quarter of its body is sent (so a test can cancel it mid-upload).
    private final class SuspendAtQuarter: TaskDelegate, @unchecked Sendable {
        let first = Mutex<Int?>(nil)

        func session(
            _ session: Session,
            task: SessionTask,
            didSendBodyData bytesSent: Int64,
            totalBytesSent: Int64,
            totalBytesExpectedToSend: Int64
        ) async {
            let isFirst = first.withLock { first in
                if first == nil { first = task.taskIdentifier }
                return first == task.taskIdentifier
            }
            if isFirst, totalBytesSent >= totalBytesExpectedToSend / 4 { task.suspend() }
        }
    }

    /// The server reads these uploads at 20 MB/s, so a cancel lands mid-upload on a loaded machine too.
    @Test func aCancelledUploadContinuesFromResumeData() async throws {
        let recorder = SuspendAtQuarter()
        let size = 64 << 20
        let bytes = DeterministicBytes(seed: 92).bytes(offset: 0, count: size)
        let file = try temporaryDirectory().appendingPathComponent("upload.bin")
        try Data(bytes).write(to: file)
        try await withSession(delegate: recorder) { server, session in
            let first = session.uploadTask(
                with: resumablePost(server.url("/upload?keep=sess3&read_throttle=20000000", on: .resumable)),
                fromFile: file
            )
            first.resume()
            // Alone on a loaded machine this takes about 6 s; inside a loaded full suite (dozens of ferry
            // processes at once) it has taken over 60 s twice. The bound only tells a hang from a wait.
            try await eventually("a quarter is sent", within: 180) { first.countOfBytesSent >= Int64(size / 4) }
            let data = try #require(await first.cancelByProducingResumeData())
            let resumeData = try ResumeData(encoded: data)
            #expect(resumeData.partialFilePath == file.path)
            #expect(resumeData.upload?.length == Int64(size))

            let second = session.uploadTask(withResumeData: data)
            second.resume()
            await second.waitUntilFinished()
            #expect(second.error == nil)
            #expect(second.response?.statusCode == 200)
            #expect(server.storedUpload(key: "sess3")?.body == bytes)

            // A plain cancel lets the server free the upload: DELETE.
            let third = session.uploadTask(
                with: resumablePost(server.url("/upload?keep=sess4&read_throttle=20000000", on: .resumable)),
                fromFile: file
            )
            third.resume()
            try await eventually("a quarter is sent", within: 180) { third.countOfBytesSent >= Int64(size / 4) }
            #expect(server.counters.wireRequestsByMethod["DELETE"] == nil)
            third.cancel()
            await third.waitUntilFinished()
            #expect(third.error?.code == .cancelled)
            #expect(third.error?.resumeData == nil)
            #expect(server.counters.wireRequestsByMethod["DELETE"] == 1)
            #expect(server.storedUpload(key: "sess4") == nil)

            // Resume data of something else is refused with a clear error.
            let wrong = session.uploadTask(withResumeData: Data("{}".utf8))
            wrong.resume()
            await wrong.waitUntilFinished()
            #expect(wrong.error?.code == .invalidResumeData)
        }
    }
}
