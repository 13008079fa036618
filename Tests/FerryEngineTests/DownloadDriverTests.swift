import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization
import Testing

/// The one driver ferryd, the CLI and Session share: tries, hand-backs, delivery. Waits are recorded,
/// not slept.
@Suite struct DownloadDriverTests {
    /// The waits a run asked for, and what it said before each.
    final class Waits: Sendable {
        let delays = Mutex<[Double]>([])
        let notes = Mutex<[String]>([])
    }

    func plan(_ url: String, path: String, waits: Waits, retries: DownloadDriver.Retries) -> DownloadDriver.Plan {
        var plan = DownloadDriver.Plan(request: request(url), path: path, deadline: testDeadline)
        plan.retries = retries
        plan.sleep = { seconds in waits.delays.withLock { $0.append(seconds) } }
        plan.willRetry = { attempt, delay, reason in waits.notes.withLock { $0.append("\(attempt) \(delay) \(reason)") } }
        return plan
    }

    @Test func curlsRetriesWaitAsTheServerSaysThenDeliver() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let waits = Waits()
            var plan = plan(
                server.url("/bytes/100000?seed=4&fail=2&fail_status=503&retry_after=7&key=drv1"),
                path: path + ".part",
                waits: waits,
                retries: .curl(3)
            )
            plan.destination = try DownloadDestination(inspecting: path)
            guard case .finished(let result) = try await DownloadDriver(transport: transport).run(plan) else {
                Issue.record("expected the file")
                return
            }
            #expect(result.status == 200)
            #expect(result.path == path)
            #expect(try sha256(ofFile: path) == expectedSHA256(100_000, seed: 4))
            #expect(waits.delays.withLock { $0 } == [7, 7])
            #expect(waits.notes.withLock { $0 }.first == "2 7.0 the server answered 503")
            #expect(!FileManager.default.fileExists(atPath: path + ".part"))
        }
    }

    @Test func withoutRetryAfterTheBackoffDecidesAndTheLastAnswerIsRefused() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let waits = Waits()
            var plan = plan(
                server.url("/bytes/1000?fail=5&fail_status=502&retry_after=-1&key=drv2"),
                path: path + ".part",
                waits: waits,
                retries: .curl(2)
            )
            plan.destination = try DownloadDestination(inspecting: path)
            guard case .refused(let answer, let error) = try await DownloadDriver(transport: transport).run(plan) else {
                Issue.record("expected a refusal")
                return
            }
            #expect(answer.status == 502)
            #expect(error.message.contains("nothing was written"))
            #expect(waits.delays.withLock { $0 } == [1, 2], "curl's backoff: 1 s, then 2 s")
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(!FileManager.default.fileExists(atPath: path + ".part"))
        }
    }

    @Test func aBusyAnswerIsHandedBackToACallerThatSchedulesItsOwnTries() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let waits = Waits()
            let discarded = Mutex(0)
            var busy = plan(
                server.url("/bytes/1000?fail=1&fail_status=429&retry_after=30&key=drv3"),
                path: path,
                waits: waits,
                retries: .handedBack
            )
            busy.didDiscard = { discarded.withLock { $0 += 1 } }
            guard case .tryLater(let after, let error) = try await DownloadDriver(transport: transport).run(busy) else {
                Issue.record("expected a hand-back")
                return
            }
            #expect(after == 30)
            #expect(error.message.contains("429"))
            #expect(discarded.withLock { $0 } == 1)
            #expect(waits.delays.withLock { $0 }.isEmpty, "no wait inside the run")

            // Without Retry-After a busy answer is the response, handed over as the file.
            let plain = plan(server.url("/status/503"), path: path, waits: waits, retries: .handedBack)
            guard case .finished(let result) = try await DownloadDriver(transport: transport).run(plain) else {
                Issue.record("expected the answer as the file")
                return
            }
            #expect(result.status == 503)
        }
    }

    @Test func aNetworkErrorContinuesFromThePartialData() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let waits = Waits()
            let plan = plan(
                server.url("/bytes/3000000?seed=6&close_after=1000000&only_first=1&key=drv4"),
                path: path,
                waits: waits,
                retries: .curl(1)
            )
            let resumed = Mutex<[Int64]>([])
            var watched = plan
            watched.events.didResume = { offset, _ in resumed.withLock { $0.append(offset) } }
            guard case .finished(let result) = try await DownloadDriver(transport: transport).run(watched) else {
                Issue.record("expected the file")
                return
            }
            #expect(result.length == 3_000_000)
            #expect(try sha256(ofFile: path) == expectedSHA256(3_000_000, seed: 6))
            #expect(waits.delays.withLock { $0 } == [1])
            #expect(resumed.withLock { $0 }.last.map { $0 > 0 } == true, "continued, not started over")
        }
    }

    @Test func noTriesLeftIsTheError() async throws {
        try await withServerAndTransport { server, transport in
            let path = try temporaryPath()
            let plan = plan(
                server.url("/bytes/3000000?close_after=1000000&key=drv5"),
                path: path,
                waits: Waits(),
                retries: .none
            )
            await #expect(throws: FerryError.self) { try await DownloadDriver(transport: transport).run(plan) }
        }
    }
}
