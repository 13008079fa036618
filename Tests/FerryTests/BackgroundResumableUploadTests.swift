import Ferry
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Resumable uploads in ferryd (SPEC S4.6): the upload resource and confirmed offset are recorded, so a
/// daemon killed mid-upload continues from the server's offset after its restart.
@Suite struct BackgroundResumableUploadTests {
    @Test func anUploadKilledAtHalfContinuesFromTheServersOffset() async throws {
        let size = 96 << 20
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("big-upload.bin")
        let bytes = DeterministicBytes(seed: 95).bytes(offset: 0, count: size)
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await TestServer.withServer { server in
            try await withDaemon(environment: ["FERRY_RETRY_BASE_DELAY": "0.1"]) { daemon in
                let session = "t.resumableupload"
                // Read at 4 MB/s and killed at a quarter, so the kill lands mid-upload even when this test's
                // task waits seconds for a thread (at 40 and 16 MB/s, killed at half, loaded full-suite runs
                // reached the end first; at 8 MB/s the kill came at 30–62 %).
                var upload = request(server.url("/upload?keep=bgru&read_throttle=4000000", on: .resumable))
                upload.method = "POST"
                upload.resumableUpload = true
                let _: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: ControlAPI.TaskCreation(kind: .upload, request: upload, uploadFile: file.path)
                )
                try await eventually("a quarter of the upload reached the server", within: 60) {
                    server.counters.requestBodyBytes(pathPrefix: "/resumable/") >= Int64(size / 4)
                }
                try await daemon.stop(signal: SIGKILL)
                let atKill = server.counters.requestBodyBytes(pathPrefix: "/resumable/")
                try await daemon.start()
                try await eventually("the upload completes", within: 60) {
                    await (try? daemon.tasks(session))?.first?.state == .completed
                }
                let task = try await #require(try daemon.tasks(session).first)
                #expect(task.error == nil)
                #expect(task.statusCode == 200)
                #expect(task.bytesSent == Int64(size))
                #expect(server.storedUpload(key: "bgru")?.body == bytes)
                let received = server.counters.requestBodyBytes(pathPrefix: "/resumable/")
                let again = received - Int64(size)
                print(
                    "resumable upload, ferryd SIGKILLed at \(atKill * 100 / Int64(size)) %: \(again) bytes sent again"
                )
                #expect(atKill < Int64(size))
                // Everything the server had received was kept: at most one chunk (256 KiB) went twice.
                #expect(again <= 256 * 1024)

                // Cancelled for good, a resumable upload is deleted on the server. Read at 10 MB/s, so the
                // cancel cannot arrive after the last byte on a loaded machine.
                var slower = upload
                slower.url = URL(string: server.url("/upload?keep=bgru2&read_throttle=10000000", on: .resumable))!
                let second: BackgroundTaskInfo = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks",
                    body: ControlAPI.TaskCreation(kind: .upload, request: slower, uploadFile: file.path)
                )
                try await eventually("the second upload is under way", within: 30) {
                    server.counters.requestBodyBytes(pathPrefix: "/resumable/") > received
                }
                let _: ControlAPI.CancelResult = try await daemon.client.call(
                    "POST",
                    "/v1/sessions/\(session)/tasks/\(second.taskIdentifier)/cancel",
                    body: ControlAPI.Cancellation(produceResumeData: false)
                )
                try await eventually("the server is told", within: 30) {
                    server.counters.wireRequestsByMethod["DELETE"] == 1
                }
            }
        }
    }
}
