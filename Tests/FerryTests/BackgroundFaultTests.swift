import Ferry
import FerryTestServer
import Foundation
import Testing

/// Faults of the fault matrix (docs/RELIABILITY.md) that need a real ferryd.
@Suite struct BackgroundFaultTests {
    @Test func aFullDiskFailsTheTaskWithItsDataKept() async throws {
        try await TestServer.withServer { server in
            // The daemon's files fill a "disk" of 1,000,000 bytes (a debug build's FileSink).
            try await withDaemon(environment: ["FERRY_DEBUG_DISK_LIMIT": "1000000"]) { daemon in
                let recorder = Recorder()
                let session = Session(
                    configuration: .background(identifier: "t.full"),
                    delegate: recorder,
                    daemon: daemon.client
                )
                defer { session.finishTasksAndInvalidate() }
                let task = session.downloadTask(with: request(server.url("/bytes/3000000?seed=5")))
                task.resume()
                await task.waitUntilFinished()
                let error = try #require(task.error)
                #expect(error.code == .cannotWriteToFile)
                #expect(error.message.contains("No space left on device"))
                let resumeData = try #require(error.resumeData)
                #expect(resumeData.bytesReceived == 1_000_000)
                #expect(FileManager.default.fileExists(atPath: resumeData.partialFilePath))
                // Not retried: one request reached the server.
                #expect(server.counters.requests(path: "/bytes/3000000") == 1)
            }
        }
    }
}
