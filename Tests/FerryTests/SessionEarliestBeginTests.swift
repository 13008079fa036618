import Ferry
import FerryTestServer
import Foundation
import Testing

/// `earliestBeginDate` on a task of this process: the transfer does not begin before the date, and a
/// cancel ends the wait. (Background tasks are held by ferryd: SchedulerTests and
/// BackgroundURLSessionTests.)
@Suite struct SessionEarliestBeginTests {
    @Test func aTaskDoesNotTouchTheServerBeforeItsDate() async throws {
        try await withSession { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/1000")))
            let begin = Date().addingTimeInterval(0.5)
            task.earliestBeginDate = begin
            task.resume()
            #expect(task.state == .running, "a task waiting for its date is running, as Apple's")
            let checkedAt = Date()
            let sentEarly = server.counters.bodyBytesSent(path: "/bytes/1000")
            if checkedAt < begin { #expect(sentEarly == 0) }
            await task.waitUntilFinished()
            #expect(task.error == nil)
            #expect(Date() >= begin)
            #expect(task.countOfBytesReceived == 1000)
        }
    }

    @Test func aCancelEndsTheWaitWithoutAConnection() async throws {
        try await withSession { server, session in
            let task = session.dataTask(with: request(server.url("/bytes/1000")))
            task.earliestBeginDate = Date().addingTimeInterval(3600)
            task.resume()
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            #expect(server.counters.connectionsAccepted == 0)
        }
    }
}
