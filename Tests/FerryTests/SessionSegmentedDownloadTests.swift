import FerryTestServer
import Foundation
import Testing

@testable import Ferry

/// Segmented downloads through a session's download task (SPEC S10.2): the delegate sees one download.
@Suite struct SessionSegmentedDownloadTests {
    @Test func aSegmentedDownloadLooksLikeOneToTheDelegate() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            var segmented = request(server.url("/bytes/3000000?seed=71"))
            segmented.connections = 4
            segmented.minimumSegmentSize = 256 * 1024
            let task = session.downloadTask(with: segmented)
            task.resume()
            await task.waitUntilFinished()
            let id = task.taskIdentifier
            #expect(task.error == nil)
            #expect(collapsed(recorder.events(of: id)) == ["wrote", "finished", "metrics", "complete"])
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(3_000_000, seed: 71), existedDuringCallback: true)
                )
            )
            let wrote = recorder.events(of: id).compactMap { event -> Int64? in
                if case .wrote(_, let total, _) = event { total } else { nil }
            }
            #expect(wrote == wrote.sorted())
            #expect(wrote.last == 3_000_000)
            #expect(task.response?.statusCode == 200)
            #expect(task.response?.expectedContentLength == 3_000_000)
            #expect(server.counters.requests(path: "/bytes/3000000") >= 4)
        }
    }

    @Test func cancellingWithResumeDataContinuesEverySegment() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            // The first four requests run at 100 kB/s (ten seconds for their segments): the cancel lands
            // mid-download on a loaded machine; the continuation is served at full speed.
            var segmented = request(server.url("/bytes/4000000?seed=72&throttle=100000&only_first=4&key=seg72"))
            segmented.connections = 4
            segmented.minimumSegmentSize = 256 * 1024
            let first = session.downloadTask(with: segmented)
            first.resume()
            try await eventually("bytes arrive") { first.countOfBytesReceived > 400_000 }
            let data = try #require(await first.cancelByProducingResumeData())
            let resumeData = try ResumeData(encoded: data)
            #expect(resumeData.segments != nil)

            let second = session.downloadTask(withResumeData: data)
            second.resume()
            await second.waitUntilFinished()
            let id = second.taskIdentifier
            #expect(second.error == nil)
            #expect(recorder.events(of: id).first == .resumed(task: id, offset: resumeData.bytesReceived))
            #expect(
                recorder.events(of: id).contains(
                    .finished(task: id, sha256: expectedSHA256(4_000_000, seed: 72), existedDuringCallback: true)
                )
            )
        }
    }
}
