import Ferry
import FerryEngine
import FerryTestServer
import Foundation
import Testing

/// What `/upload` reports.
private struct UploadReport: Decodable {
    var method: String
    var length: Int64
    var sha256: String
}

@Suite struct SessionUploadTaskTests {
    private func post(_ url: String) -> Request {
        var request = request(url)
        request.method = "POST"
        return request
    }

    @Test func uploadFromAFileStreamsItAndReportsProgress() async throws {
        let recorder = Recorder()
        let bytes = DeterministicBytes(seed: 21).bytes(offset: 0, count: 3_000_000)
        let file = try temporaryDirectory().appendingPathComponent("upload.bin")
        try Data(bytes).write(to: file)
        try await withSession(delegate: recorder) { server, session in
            let task = session.uploadTask(with: post(server.url("/upload")), fromFile: file)
            #expect(task.countOfBytesExpectedToSend == 3_000_000)
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(task.error == nil)
            let report = try JSONDecoder().decode(UploadReport.self, from: Data(recorder.body(of: id)))
            #expect(report.length == 3_000_000)
            #expect(report.sha256 == sha256(bytes))
            let sent = recorder.events(of: id).compactMap { event -> Int64? in
                if case .sent(_, let total, 3_000_000) = event { total } else { nil }
            }
            #expect(sent.last == 3_000_000)
            #expect(sent == sent.sorted())
            #expect(task.countOfBytesSent == 3_000_000)
            #expect(collapsed(recorder.events(of: id)).prefix(2) == ["sent", "response"])
        }
    }

    @Test func uploadFromDataAndAsync() async throws {
        try await withSession { server, session in
            let payload = Data(DeterministicBytes(seed: 22).bytes(offset: 0, count: 600_000))
            let (data, response) = try await session.upload(for: post(server.url("/upload")), from: payload)
            #expect(response.statusCode == 200)
            let report = try JSONDecoder().decode(UploadReport.self, from: data)
            #expect(report.length == 600_000)
            #expect(report.sha256 == sha256(payload))
        }
    }

    @Test func uploadFromAStreamAsksTheDelegateForTheBody() async throws {
        let pieces = (0..<10).map { DeterministicBytes(seed: UInt64(30 + $0)).bytes(offset: 0, count: 50_000) }
        let recorder = Recorder(bodyStream: {
            RequestBodyStream(
                AsyncStream { continuation in
                    for piece in pieces { continuation.yield(piece) }
                    continuation.finish()
                }
            )
        })
        try await withSession(delegate: recorder) { server, session in
            let task = session.uploadTask(withStreamedRequest: post(server.url("/upload")))
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error == nil)
            let report = try JSONDecoder().decode(UploadReport.self, from: Data(recorder.body(of: task.taskIdentifier)))
            #expect(report.length == 500_000)
            #expect(report.sha256 == sha256(pieces.flatMap { $0 }))
        }
    }

    @Test func aStreamedUploadWithoutABodyIsAClearError() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let task = session.uploadTask(withStreamedRequest: post(server.url("/upload")))
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error?.code == .invalidOperation)
            #expect(task.error?.message.contains("needNewBodyStreamFor") == true)
        }
    }

    @Test func aMissingFileIsAClearError() async throws {
        try await withSession { server, session in
            do {
                _ = try await session.upload(
                    for: post(server.url("/upload")),
                    fromFile: URL(fileURLWithPath: "/nonexistent/file")
                )
                Issue.record("a missing file was uploaded")
            } catch let error as FerryError {
                #expect(error.code == .fileDoesNotExist)
            }
            #expect(server.counters.requests(path: "/upload") == 0)
        }
    }
}
