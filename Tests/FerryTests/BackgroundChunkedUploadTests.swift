import Ferry
import FerryStore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Uploads ferryd makes itself besides a whole file: tus chunks sent in parallel, each recorded as the
/// server stores it (a restart sends only the unfinished ones), and multipart forms whose files ferryd
/// reads when it sends them.
@Suite struct BackgroundChunkedUploadTests {
    /// Killed with SIGKILL mid-upload and restarted: with the file as it was, only the chunks not
    /// recorded go again; with the file rewritten meanwhile (same length, other bytes), none of the
    /// stored chunks is used and the server gets the new bytes.
    @Test(arguments: [false, true])
    func aChunkedUploadKilledMidwaySendsOnlyItsUnfinishedChunksAgain(fileChanges: Bool) async throws {
        let size = 24 << 20
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("chunked.bin")
        var bytes = DeterministicBytes(seed: 96).bytes(offset: 0, count: size)
        try Data(bytes).write(to: file)
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_RETRY_BASE_DELAY": "0.1"]) { daemon in
                let session = "t.chunkedupload"
                // Each connection is read at 1 MB/s: chunks of about 2 MB (2 s each at the measured rate),
                // two at a time, about 12 s in all, so the kill lands after the first chunks are stored and
                // long before the last even on a loaded machine (at 4 MB/s a full CI run stored them all
                // before the kill came).
                var upload = request(server.url("/tus/?keep=bgchunks\(fileChanges)&read_throttle=1000000"))
                upload.method = "POST"
                var creation = ControlAPI.TaskCreation(kind: .upload, request: upload, uploadFile: file.path)
                creation.chunks = 2
                let _: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: creation
                )
                let store = try FerryStore(path: daemon.client.paths.database)
                try await eventually("the probe and a chunk are stored and recorded", within: 60) {
                    ((try? store.tasks(session: session).first?.chunkedUpload?.stored.count) ?? 0) >= 2
                }
                try await daemon.stop(signal: SIGKILL)
                // What the killed connections had in flight may still reach the server: wait for quiet.
                var atKill = server.counters.requestBodyBytes(pathPrefix: "/tus/")
                while true {
                    try await Task.sleep(for: .milliseconds(700))
                    let now = server.counters.requestBodyBytes(pathPrefix: "/tus/")
                    if now == atKill { break }
                    atKill = now
                }
                let recorded = try #require(try store.tasks(session: session).first?.chunkedUpload)
                let storedBytes = recorded.storedBytes
                #expect(storedBytes > 0 && storedBytes < Int64(size), "\(recorded)")
                #expect(recorded.fileLength == Int64(size))
                if fileChanges {
                    bytes = DeterministicBytes(seed: 196).bytes(offset: 0, count: size)
                    try Data(bytes).write(to: file)
                    // A later modification time even on a coarse clock.
                    try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(5)], ofItemAtPath: file.path)
                }

                try await daemon.start()
                try await eventually("the upload completes", within: 90) {
                    await (try? daemon.tasks(session))?.first?.state == .completed
                }
                let task = try #require(try await daemon.tasks(session).first)
                #expect(task.error == nil)
                #expect(task.statusCode == 201)
                #expect(task.bytesSent == Int64(size))
                #expect(server.storedUpload(key: "bgchunks\(fileChanges)")?.body == bytes)
                // After the restart exactly the bytes of the chunks not recorded went: none recorded twice.
                let afterRestart = server.counters.requestBodyBytes(pathPrefix: "/tus/") - atKill
                print(
                    "tus chunks, ferryd SIGKILLed with \(recorded.stored.count) chunks (\(storedBytes * 100 / Int64(size)) %) stored\(fileChanges ? ", the file rewritten" : ""): \(afterRestart) bytes sent after the restart"
                )
                #expect(afterRestart == (fileChanges ? Int64(size) : Int64(size) - storedBytes))
                // The old file's chunks were let go on the server (tus termination); none otherwise.
                #expect(server.counters.wireRequestsByMethod["DELETE", default: 0] == (fileChanges ? recorded.stored.count : 0))
            }
        }
    }

    @Test func aCancelledChunkedUploadEndsItsStoredChunksOnTheServer() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cancelled.bin")
        try Data(DeterministicBytes(seed: 98).bytes(offset: 0, count: 16 << 20)).write(to: file)
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let session = "t.chunkcancel"
                // 1 MB/s a connection: the cancel comes long before the last chunk.
                var upload = request(server.url("/tus/?read_throttle=1000000"))
                upload.method = "POST"
                var creation = ControlAPI.TaskCreation(kind: .upload, request: upload, uploadFile: file.path)
                creation.chunks = 2
                let task: BackgroundTaskInfo = try await daemon.client.call("POST", "/v1/sessions/\(session)/tasks", body: creation)
                let store = try FerryStore(path: daemon.client.paths.database)
                try await eventually("a chunk is stored and recorded", within: 60) {
                    ((try? store.tasks(session: session).first?.chunkedUpload?.stored.count) ?? 0) >= 1
                }
                let _: ControlAPI.CancelResult = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks/\(task.taskIdentifier)/cancel",
                    body: ControlAPI.Cancellation(produceResumeData: false)
                )
                let stored = try #require(try store.tasks(session: session).first?.chunkedUpload?.stored)
                // Each stored chunk's partial upload is ended (tus termination), none other.
                try await eventually("the server is told", within: 30) {
                    server.counters.wireRequestsByMethod["DELETE"] == stored.count
                }
                try await Task.sleep(for: .milliseconds(300))
                #expect(server.counters.wireRequestsByMethod["DELETE"] == stored.count)
            }
        }
    }

    @Test func aFormIsSentByFerrydWithItsFilesReadAtSendTime() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let photo = directory.appendingPathComponent("holiday.jpg")
        let photoBytes = DeterministicBytes(seed: 97).bytes(offset: 0, count: 1_500_000)
        try Data(photoBytes).write(to: photo)
        try await TestServer.withServer { server in
            try await withDaemon { daemon in
                let session = "t.formupload"
                var form = request(server.url("/multipart?keep=bgform"))
                form.method = "POST"
                var creation = ControlAPI.TaskCreation(kind: .upload, request: form)
                creation.form = [
                    FormField(name: "title", value: "Holiday"),
                    FormField(name: "photo", file: photo.path, contentType: "image/jpeg"),
                    FormField(name: "note", value: "a;b", filename: "note.txt", contentType: "text/plain"),
                ]
                let created: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: creation
                )
                #expect(created.kind == .upload)
                try await eventually("the form is sent", within: 60) {
                    await (try? daemon.tasks(session))?.first?.state == .completed
                }
                let task = try #require(try await daemon.tasks(session).first)
                #expect(task.statusCode == 200, "\(String(describing: task.error))")
                let kept = try #require(server.storedUpload(key: "bgform"))
                let report = try #require(try JSONSerialization.jsonObject(with: Data(kept.body)) as? [String: Any])
                let parts = try #require(report["parts"] as? [[String: Any]])
                #expect(parts.count == 3)
                #expect(parts[0]["name"] as? String == "title")
                #expect(parts[0]["text"] as? String == "Holiday")
                #expect(parts[1]["filename"] as? String == "holiday.jpg")
                #expect(parts[1]["contentType"] as? String == "image/jpeg")
                #expect(parts[1]["length"] as? Int == photoBytes.count)
                #expect(parts[1]["sha256"] as? String == sha256(photoBytes))
                #expect(parts[2]["filename"] as? String == "note.txt")
                #expect(parts[2]["length"] as? Int == 3)
                #expect(task.bytesSent == (report["length"] as? NSNumber)?.int64Value)

                // Refused, with nothing created: a relative path, a missing file, a field with both a
                // value and a file, a form and a file, too many chunks, chunks of a form.
                var relative = creation
                relative.form = [FormField(name: "f", file: "holiday.jpg")]
                var missing = creation
                missing.form = [FormField(name: "f", file: directory.path + "/nothing.bin")]
                var both = creation
                both.form = [FormField(name: "f", file: photo.path)]
                both.form![0].value = "x"
                var formAndFile = creation
                formAndFile.uploadFile = photo.path
                var tooMany = ControlAPI.TaskCreation(kind: .upload, request: form, uploadFile: photo.path)
                tooMany.chunks = 33
                var chunkedForm = creation
                chunkedForm.chunks = 2
                let refusals: [(ControlAPI.TaskCreation, FerryError.Code, String)] = [
                    (relative, .invalidOperation, "absolute path"), (missing, .fileDoesNotExist, "does not exist"),
                    (both, .invalidOperation, "not both"), (formAndFile, .invalidOperation, "not both"),
                    (tooMany, .invalidOperation, "1 to 32"), (chunkedForm, .invalidOperation, "not a form"),
                ]
                for (bad, code, words) in refusals {
                    do {
                        let _: BackgroundTaskInfo = try await daemon.client.call(
                            "POST",
                            "/v1/sessions/\(session)/tasks",
                            body: bad
                        )
                        Issue.record("created: \(bad)")
                    } catch let error as FerryError {
                        #expect(error.code == code, "\(error)")
                        #expect(error.message.contains(words), "\(error)")
                    }
                }
                #expect(try await daemon.tasks(session).count == 1)
            }
        }
    }
}
