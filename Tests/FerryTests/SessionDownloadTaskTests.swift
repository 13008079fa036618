import FerryTestServer
import Foundation
import Testing

@testable import Ferry

@Suite struct SessionDownloadTaskTests {
    @Test func aDownloadIsHandedOverAndItsFileRemovedAfterTheCallback() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let task = session.downloadTask(with: request(server.url("/bytes/3000000?seed=9")))
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(collapsed(recorder.events(of: id)) == ["wrote", "finished", "metrics", "complete"])
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(3_000_000, seed: 9), existedDuringCallback: true)
                )
            )
            let wrote = recorder.events(of: id).compactMap { event -> Int64? in
                if case .wrote(_, let total, let expected) = event, expected == 3_000_000 { total } else { nil }
            }
            #expect(wrote.last == 3_000_000)
            #expect(wrote == wrote.sorted())
            let file = try #require(recorder.finishedFilePaths.first)
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }

    @Test func anInterruptedDownloadContinuesFromItsResumeDataToTheExactBytes() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let url = server.url("/bytes/4000000?seed=10&close_after=1500000&only_first=1&key=s1")
            let first = session.downloadTask(with: request(url))
            first.resume()
            await first.waitUntilFinished()
            let error = try #require(first.error)
            #expect(error.code == .networkConnectionLost)
            let resumeData = try #require(error.resumeData)
            #expect(resumeData.bytesReceived > 0)
            #expect(FileManager.default.fileExists(atPath: resumeData.partialFilePath))

            let second = session.downloadTask(withResumeData: resumeData.encoded())
            second.resume()
            await second.waitUntilFinished()
            let id = second.taskIdentifier
            #expect(second.error == nil)
            #expect(recorder.events(of: id).first == .resumed(task: id, offset: resumeData.bytesReceived))
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(4_000_000, seed: 10), existedDuringCallback: true)
                )
            )
            #expect(second.response?.statusCode == 206)
        }
    }

    @Test func changedValidatorsRestartFromZero() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            // Every request after the first sees a new version of the resource.
            let url = server.url("/bytes/2000000?seed=11&close_after=800000&only_first=1&key=s2&change_after=1")
            let first = session.downloadTask(with: request(url))
            first.resume()
            await first.waitUntilFinished()
            let resumeData = try #require(first.error?.resumeData)

            let second = session.downloadTask(withResumeData: resumeData.encoded())
            second.resume()
            await second.waitUntilFinished()
            let id = second.taskIdentifier
            #expect(second.error == nil)
            #expect(recorder.events(of: id).first == .resumed(task: id, offset: 0))
            #expect(
                recorder.events(of: id).contains(
                    .finished(
                        task: id,
                        sha256: expectedSHA256(2_000_000, seed: 11, version: 1),
                        existedDuringCallback: true
                    )
                )
            )
        }
    }

    @Test func aServerIgnoringRangeRestartsCleanly() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let cut = server.url("/bytes/2000000?seed=12&close_after=900000&only_first=1&key=s3&ignore_range=1")
            let first = session.downloadTask(with: request(cut))
            first.resume()
            await first.waitUntilFinished()
            var resumeData = try #require(first.error?.resumeData)
            // The cut is over; from now on the server answers every Range with the whole body.
            resumeData.currentRequest = request(server.url("/bytes/2000000?seed=12&ignore_range=1&key=s3"))

            let second = session.downloadTask(withResumeData: resumeData.encoded())
            second.resume()
            await second.waitUntilFinished()
            let id = second.taskIdentifier
            #expect(second.error == nil)
            #expect(recorder.events(of: id).first == .resumed(task: id, offset: 0))
            #expect(second.response?.statusCode == 200)
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(2_000_000, seed: 12), existedDuringCallback: true)
                )
            )
        }
    }

    @Test func cancelByProducingResumeDataThenContinue() async throws {
        try await withSession { server, session in
            // The first try stalls after 1 MB (a loaded machine must not finish it before the cancel);
            // the continuation runs clean.
            let url = server.url("/bytes/3000000?seed=13&stall_after=1000000&stall_ms=30000&only_first=1&key=c13")
            let task = session.downloadTask(with: request(url))
            task.resume()
            try await eventually("some bytes arrive") { task.countOfBytesReceived > 300_000 }
            let data = try #require(await task.cancelByProducingResumeData())
            #expect(task.error?.code == .cancelled)
            await task.waitUntilFinished()
            #expect(task.state == .completed)

            let (file, response) = try await session.download(resumeFrom: data)
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.statusCode == 206)
            #expect(try sha256(ofFile: file.path) == expectedSHA256(3_000_000, seed: 13))
        }
    }

    @Test func cancelWithoutResumeDataRemovesThePartialFile() async throws {
        try await withSession { server, session in
            // Held at 1 MB (a gate never opened): still running when cancelled, however slow the machine.
            let task = session.downloadTask(with: request(server.url("/bytes/3000000?stall_after=1000000&gate=never")))
            task.resume()
            try await eventually("some bytes arrive") { task.countOfBytesReceived > 100_000 }
            let partial = try #require(task.locked.withLock { $0.filePath })
            #expect(FileManager.default.fileExists(atPath: partial))
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            #expect(task.error?.resumeData == nil)
            #expect(!FileManager.default.fileExists(atPath: partial))
        }
    }

    @Test func suspendStopsTheTransferAndResumeContinuesIt() async throws {
        try await withSession { server, session in
            // Held at 1 MB until the task is suspended; then the server would send the rest at once.
            let task = session.downloadTask(with: request(server.url("/bytes/4000000?seed=14&stall_after=1000000&gate=suspend")))
            task.resume()
            try await eventually("some bytes arrive") { task.countOfBytesReceived > 200_000 }
            task.suspend()
            #expect(task.state == .suspended)
            server.openGate("suspend")
            try await Task.sleep(for: .milliseconds(300))  // let chunks already read drain
            let paused = task.countOfBytesReceived
            try await Task.sleep(for: .milliseconds(500))
            #expect(task.countOfBytesReceived == paused)
            #expect(paused < 4_000_000)
            task.resume()
            // The rest may all be buffered already: on a loaded machine the task can have completed
            // by the time its state is read, but it is not suspended any more.
            #expect(task.state == .running || task.state == .completed)
            await task.waitUntilFinished()
            #expect(task.error == nil)
            #expect(task.countOfBytesReceived == 4_000_000)
        }
    }

    @Test func asyncDownloadReturnsAFileTheCallerOwns() async throws {
        try await withSession { server, session in
            let (file, response) = try await session.download(from: URL(string: server.url("/bytes/100000?seed=15"))!)
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.statusCode == 200)
            #expect(try sha256(ofFile: file.path) == expectedSHA256(100_000, seed: 15))
        }
    }

    @Test func damagedResumeDataIsAClearError() async throws {
        try await withSession { _, session in
            do {
                _ = try await session.download(resumeFrom: Data("not resume data".utf8))
                Issue.record("damaged resume data was accepted")
            } catch let error as FerryError {
                #expect(error.code == .invalidResumeData)
            }
        }
    }
}
