import Ferry
import FerryTestServer
import Foundation
import Testing

/// S5.4: resume data written to disk by one process is continued by another. The other process is this
/// test binary run again with a filter that selects only ``childWritesResumeData()``.
@Suite struct ResumeAcrossProcessesTests {
    private static let urlVariable = "FERRY_TEST_CHILD_URL"
    private static let outputVariable = "FERRY_TEST_CHILD_OUTPUT"

    @Test func resumeDataFromAnotherProcessContinuesHere() async throws {
        try await TestServer.withServer { server in
            let output = try temporaryDirectory().appendingPathComponent("resume.data")
            // The first response is held at 1 MB (a gate never opened), so the child cancels mid-transfer
            // however slow the machine; the continuation here runs through.
            let url = server.url("/bytes/3000000?seed=50&stall_after=1000000&gate=never&only_first=1")

            // The child's own test report goes to a file, shown only when it failed.
            let report = output.deletingLastPathComponent().appendingPathComponent("child.log")
            let child = try spawnTestChild(
                "childWritesResumeData",
                variables: [Self.urlVariable: url, Self.outputVariable: output.path],
                output: .file(report.path)
            )
            try await requireSuccess(of: child, report: report)

            let stored = try Data(contentsOf: output)
            let resumeData = try ResumeData(encoded: stored)
            #expect(resumeData.bytesReceived > 0 && resumeData.bytesReceived < 3_000_000)

            let recorder = Recorder()
            let session = try makeSession(delegate: recorder, trusting: server)
            defer { session.invalidateAndCancel() }
            let task = session.downloadTask(withResumeData: stored)
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(task.error == nil)
            #expect(task.response?.statusCode == 206)
            #expect(recorder.events(of: id).first == .resumed(task: id, offset: resumeData.bytesReceived))
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(3_000_000, seed: 50), existedDuringCallback: true)
                )
            )
        }
    }

    /// The child's part: download until some bytes are in, cancel with resume data, write it, exit.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[outputVariable] != nil))
    func childWritesResumeData() async throws {
        let environment = ProcessInfo.processInfo.environment
        let url = try #require(environment[Self.urlVariable])
        let output = try #require(environment[Self.outputVariable])
        let session = Session(configuration: .default)
        defer { session.invalidateAndCancel() }
        let task = session.downloadTask(with: request(url))
        task.resume()
        try await eventually("some bytes arrive") { task.countOfBytesReceived > 500_000 }
        let data = try #require(await task.cancelByProducingResumeData())
        try data.write(to: URL(fileURLWithPath: output))
    }
}
