import FerryCore
import NIOCore
import NIOHTTP1
import Testing
@testable import FerryEngine

@Suite struct AnswerPromiseTests {
    private func answer(_ status: HTTPResponseStatus) -> ExchangeAnswer {
        ExchangeAnswer(head: HTTPResponseHead(version: .http1_1, status: status), body: .complete(ByteBuffer()))
    }

    @Test func aCallbackAddedFirstRunsWhenTheAnswerComes() throws {
        let promise = AnswerPromise()
        var seen: [UInt] = []
        promise.whenComplete { seen.append(try! $0.get().head.status.code) }
        #expect(seen.isEmpty)
        promise.succeed(answer(.ok))
        #expect(seen == [200])
    }

    @Test func aCallbackAddedAfterTheAnswerRunsAtOnce() throws {
        let promise = AnswerPromise()
        promise.succeed(answer(.created))
        var seen: [UInt] = []
        promise.whenComplete { seen.append(try! $0.get().head.status.code) }
        #expect(seen == [201])
    }

    @Test func theFirstCompletionCountsAndLaterOnesAreIgnored() throws {
        let promise = AnswerPromise()
        var outcomes: [String] = []
        promise.whenComplete { outcome in
            switch outcome {
            case .success(let answer): outcomes.append("\(answer.head.status.code)")
            case .failure(let error): outcomes.append("\(error)")
            }
        }
        promise.fail(ConnectionError.closedBeforeResponse)
        promise.succeed(answer(.ok))
        promise.fail(FerryError(.cancelled, "late"))
        #expect(outcomes.count == 1)
        #expect(outcomes.first != "200")
    }
}
