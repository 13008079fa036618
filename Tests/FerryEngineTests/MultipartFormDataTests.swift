import FerryCore
import FerryTestServer
import Foundation
import NIOCore
import Testing

@testable import FerryEngine

@Suite struct MultipartFormDataTests {
    @Test func fileNamesLoseTheirPaths() {
        #expect(MultipartFormData.sanitizedFilename("/etc/passwd") == "passwd")
        #expect(MultipartFormData.sanitizedFilename("..\\..\\secret.txt") == "secret.txt")
        #expect(MultipartFormData.sanitizedFilename("a/b/") == "b")
        #expect(MultipartFormData.sanitizedFilename("plain.bin") == "plain.bin")
        #expect(MultipartFormData.sanitizedFilename("") == "file")
    }

    @Test func namesCannotBreakTheHeader() {
        #expect(MultipartFormData.quoted("a\"b\r\nc") == "\"a%22b%0D%0Ac\"")
    }

    @Test func aContentTypeCannotBreakThePartsHead() async throws {
        var form = MultipartFormData(boundary: "b")
        form.append(data: [1], name: "n", filename: nil, contentType: "text/plain\r\nX-Injected: 1")
        guard case .stream(_, let stream) = form.makeBody() else { throw FerryError(.unknown, "a form streams") }
        var text = ""
        for try await chunk in stream { text += String(decoding: chunk.readableBytesView, as: UTF8.self) }
        #expect(text.contains("Content-Type: text/plainX-Injected: 1\r\n"), "\(text.debugDescription)")
        #expect(!text.contains("\r\nX-Injected"))
    }

    @Test func aFormReachesTheServerPartByPart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-form-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileBytes = DeterministicBytes(seed: 42).bytes(offset: 0, count: 3_000_000)
        let filePath = directory.appendingPathComponent("holiday photo.jpg").path
        try Data(fileBytes).write(to: URL(fileURLWithPath: filePath))

        var form = MultipartFormData()
        form.append(field: "title", value: "Holiday")
        try form.append(fileAt: filePath, name: "photo", contentType: "image/jpeg")
        form.append(data: [1, 2, 3], name: "blob", filename: "../../x.bin", contentType: nil)

        try await withServerAndTransport { server, transport in
            var headers = Headers()
            headers["Content-Type"] = form.contentType
            let response = try await transport.send(
                TransportRequest(
                    method: "POST",
                    url: URL(string: server.url("/multipart"))!,
                    headers: headers,
                    body: form.makeBody()
                ),
                deadline: testDeadline
            )
            var body: [UInt8] = []
            for try await chunk in response.body { body += chunk.readableBytesView }
            #expect(response.status == 200)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            #expect((report["length"] as? NSNumber)?.int64Value == form.contentLength)
            let parts = try #require(report["parts"] as? [[String: Any]])
            #expect(parts.count == 3)
            #expect(parts[0]["name"] as? String == "title")
            #expect(parts[0]["text"] as? String == "Holiday")
            #expect(parts[1]["filename"] as? String == "holiday photo.jpg")
            #expect(parts[1]["contentType"] as? String == "image/jpeg")
            #expect(parts[1]["length"] as? Int == 3_000_000)
            #expect(parts[1]["sha256"] as? String == sha256(fileBytes))
            #expect(parts[2]["filename"] as? String == "x.bin")
            #expect(parts[2]["length"] as? Int == 3)
        }
    }

    @Test func filesAreReadInChunks() async throws {
        let path = try temporaryPath("chunks.bin")
        try Data(count: 1_000_000).write(to: URL(fileURLWithPath: path))
        var form = MultipartFormData()
        try form.append(fileAt: path, name: "f")
        guard case .stream(let length, let stream) = form.makeBody(chunkSize: 64 * 1024) else {
            Issue.record("a form is streamed")
            return
        }
        var total: Int64 = 0
        var largest = 0
        for try await chunk in stream {
            total += Int64(chunk.readableBytes)
            largest = max(largest, chunk.readableBytes)
        }
        #expect(total == length)
        #expect(largest <= 64 * 1024)
        // Sent twice (a retry, a 307): the same bytes again.
        var again: Int64 = 0
        for try await chunk in stream { again += Int64(chunk.readableBytes) }
        #expect(again == length)
    }

    @Test func badFilesAreRefusedClearly() throws {
        var form = MultipartFormData()
        #expect { try form.append(fileAt: "/no/such/file", name: "f") } throws: {
            ($0 as? FerryError)?.code == .fileDoesNotExist
        }
        #expect { try form.append(fileAt: FileManager.default.temporaryDirectory.path, name: "f") } throws: {
            ($0 as? FerryError)?.code == .fileIsDirectory
        }
    }

    @Test func aFileThatShrinksFailsTheUpload() async throws {
        let path = try temporaryPath("shrinks.bin")
        try Data(count: 100_000).write(to: URL(fileURLWithPath: path))
        var form = MultipartFormData()
        try form.append(fileAt: path, name: "f")
        try Data(count: 10).write(to: URL(fileURLWithPath: path))
        guard case .stream(_, let stream) = form.makeBody() else { return }
        await #expect(throws: FerryError.self) {
            for try await _ in stream {}
        }
    }
}
