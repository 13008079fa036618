import FerryCore
import NIOHTTP1
import Testing

@testable import FerryEngine

/// The exchange machine as a value: every legal order of a request and its response, and the events a
/// hostile server (or a bug of this side's) can produce, each refused with what happened.
@Suite struct ExchangeStateMachineTests {
    private func head(_ status: Int, _ fields: [(String, String)] = []) -> HTTPResponseHead {
        HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: HTTPHeaders(fields))
    }

    /// The error `body` fails with (nil: it did not fail). The machine throws only ``Failure``.
    private func failure(_ body: () throws -> Void) -> FerryError? {
        do {
            try body()
            return nil
        } catch let error as ExchangeStateMachine.Failure {
            return error.error
        } catch {
            Issue.record("the machine threw \(error), not a Failure")
            return nil
        }
    }

    // MARK: Legal sequences

    @Test func anAnswerThatEndsInTheReadOfItsHeadGoesWithItsBody() throws {
        var machine = ExchangeStateMachine()
        #expect(try machine.requestSent() == false)
        #expect(try machine.receivedHead(head(200, [("Content-Length", "5")])) == .final)
        #expect(try machine.receivedBody(count: 5) == .holdWithHead)
        let end = try machine.responseEnded()
        #expect(end.answerWithHead?.status == .ok)
        #expect(end.exchangeOver && !end.requestAbandoned)
        #expect(machine.isOver && machine.isReusable)
        // Nothing is handed over again once the read completes.
        #expect(machine.handOverHead() == nil)
    }

    @Test func aBodyThatGoesOnStreamsOnceTheReadIsDone() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200))
        #expect(try machine.receivedBody(count: 10) == .holdWithHead)
        #expect(machine.handOverHead()?.status == .ok)
        #expect(machine.isStreamingBody)
        #expect(try machine.receivedBody(count: 10) == .stream)
        let end = try machine.responseEnded()
        #expect(end.answerWithHead == nil, "the caller has the head already; its body sequence ends")
        #expect(end.exchangeOver)
        #expect(machine.receivedLength == 20)
    }

    @Test func theRequestMayFinishAfterTheHeadAndBeforeTheEnd() throws {
        var machine = ExchangeStateMachine()
        _ = try machine.receivedHead(head(200, [("Content-Length", "2")]))
        _ = machine.handOverHead()
        #expect(try machine.requestSent() == false, "the response is still coming")
        _ = try machine.receivedBody(count: 2)
        #expect(try machine.responseEnded().exchangeOver)
        #expect(machine.isReusable)
    }

    @Test func informationalHeadsComeBeforeTheFinalOne() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        #expect(try machine.receivedHead(head(100)) == .informational)
        #expect(try machine.receivedHead(head(103, [("Link", "</a.css>; rel=preload")])) == .informational)
        #expect(machine.receivedAnything)
        #expect(machine.response == .awaitingHead)
        #expect(try machine.receivedHead(head(204)) == .final)
        #expect(try machine.responseEnded().answerWithHead?.status == .noContent)
        #expect(machine.informationalResponses == 2)
    }

    @Test func anEarlyAnswerAbandonsTheRestOfTheRequestAndTheConnection() throws {
        var machine = ExchangeStateMachine()
        _ = try machine.receivedHead(head(413, [("Content-Length", "0")]))
        let end = try machine.responseEnded()
        #expect(end.requestAbandoned && end.exchangeOver)
        #expect(machine.request == .abandoned)
        #expect(!machine.isReusable)
        // The write that finishes later is news of nothing.
        #expect(try machine.requestSent() == false)
    }

    @Test func aConnectionCloseOrA101IsNotReused() throws {
        var closing = ExchangeStateMachine(requestSent: true)
        _ = try closing.receivedHead(head(200, [("Connection", "close"), ("Content-Length", "0")]))
        _ = try closing.responseEnded()
        #expect(closing.isOver && !closing.isReusable)

        var asked = ExchangeStateMachine(keepAlive: false, requestSent: true)
        _ = try asked.receivedHead(head(200, [("Content-Length", "0")]))
        _ = try asked.responseEnded()
        #expect(!asked.isReusable)

        var switched = ExchangeStateMachine(requestSent: true)
        #expect(try switched.receivedHead(head(101, [("Upgrade", "websocket"), ("Connection", "upgrade")])) == .final)
        #expect(switched.switchedProtocols)
        _ = try switched.responseEnded()
        #expect(switched.isOver && !switched.isReusable)
    }

    @Test(arguments: [(204, "HEAD"), (304, "GET"), (200, "HEAD")])
    func aResponseWithoutABodyIgnoresItsContentLength(status: Int, method: String) throws {
        var machine = ExchangeStateMachine(isHeadRequest: method == "HEAD", requestSent: true)
        _ = try machine.receivedHead(head(status, [("Content-Length", "1000")]))
        #expect(machine.expectedLength == nil)
        #expect(try machine.responseEnded().exchangeOver)
    }

    @Test func aChunkedBodyHasNoLengthToHold() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200, [("Transfer-Encoding", "chunked")]))
        #expect(machine.chunked && machine.expectedLength == nil)
        _ = machine.handOverHead()
        _ = try machine.receivedBody(count: 1 << 20)
        #expect(try machine.responseEnded().exchangeOver)
    }

    @Test func theRemainingLengthCountsDown() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200, [("Content-Length", "10")]))
        #expect(machine.remainingLength == 10)
        _ = try machine.receivedBody(count: 4)
        #expect(machine.remainingLength == 6)
    }

    // MARK: Failures

    @Test func aFailureBeforeTheHeadFailsTheAnswerAndAfterItTheBody() throws {
        var waiting = ExchangeStateMachine()
        #expect(waiting.fail() == .failAnswer)
        #expect(waiting.fail() == .nothing, "only once")

        var held = ExchangeStateMachine()
        _ = try held.receivedHead(head(200))
        #expect(held.fail() == .failAnswer, "the caller was not given the head yet")

        var streaming = ExchangeStateMachine()
        _ = try streaming.receivedHead(head(200))
        _ = streaming.handOverHead()
        #expect(streaming.fail() == .failBody)

        var done = ExchangeStateMachine(requestSent: true)
        _ = try done.receivedHead(head(200, [("Content-Length", "0")]))
        _ = try done.responseEnded()
        #expect(done.fail() == .nothing)
    }

    @Test func anAbandonedBodyEndsTheExchangeWithoutReuse() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200))
        _ = machine.handOverHead()
        let first = machine.abandon()
        let second = machine.abandon()
        #expect(first && !second)
        #expect(!machine.isReusable && !machine.isStreamingBody)
    }

    // MARK: What a hostile server can send

    @Test func aSecondFinalHeadIsRefused() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200))
        let error = failure { _ = try machine.receivedHead(head(500)) }
        #expect(error?.code == .badServerResponse)
        #expect(error?.message.contains("second response head (500)") == true)
    }

    @Test func contentBeforeTheHeadIsRefused() {
        var machine = ExchangeStateMachine(requestSent: true)
        let error = failure { _ = try machine.receivedBody(count: 1) }
        #expect(error?.message.contains("content before the response's header fields") == true)
    }

    @Test func aBodyPastItsLengthIsRefused() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200, [("Content-Length", "3")]))
        _ = try machine.receivedBody(count: 3)
        let error = failure { _ = try machine.receivedBody(count: 1) }
        #expect(error?.code == .badServerResponse)
        #expect(error?.message.contains("more than the 3 bytes its Content-Length promised") == true)
    }

    @Test func anEndShortOfTheLengthIsALostConnection() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        _ = try machine.receivedHead(head(200, [("Content-Length", "10")]))
        _ = try machine.receivedBody(count: 4)
        let error = failure { _ = try machine.responseEnded() }
        #expect(error?.code == .networkConnectionLost)
        #expect(error?.message.contains("after 4 of the 10 bytes") == true)
    }

    @Test(arguments: ["-1", "ten", "1, 2", "99999999999999999999999"])
    func anInvalidContentLengthIsRefused(length: String) {
        var machine = ExchangeStateMachine(requestSent: true)
        let error = failure { _ = try machine.receivedHead(head(200, [("Content-Length", length)])) }
        #expect(error?.message.contains("invalid Content-Length") == true)
    }

    @Test func anEndBeforeTheHeadAndASecondEndAreRefused() throws {
        var early = ExchangeStateMachine(requestSent: true)
        #expect(failure { _ = try early.responseEnded() }?.message.contains("before its header fields") == true)

        var twice = ExchangeStateMachine()
        _ = try twice.receivedHead(head(200))
        _ = machineEnd(&twice)
        // The exchange is over: any later event is refused as one that cannot happen.
        let error = failure { _ = try twice.responseEnded() }
        #expect(error?.code == .invalidOperation)
        #expect(error?.message.contains("over") == true)
    }

    private func machineEnd(_ machine: inout ExchangeStateMachine) -> ExchangeStateMachine.End? {
        try? machine.responseEnded()
    }

    @Test func informationalHeadsWithoutEndAreBounded() throws {
        var machine = ExchangeStateMachine(requestSent: true)
        for _ in 0..<ExchangeStateMachine.maximumInformationalResponses {
            #expect(try machine.receivedHead(head(103)) == .informational)
        }
        let error = failure { _ = try machine.receivedHead(head(103)) }
        #expect(error?.message.contains("more than 64 informational") == true)
    }

    @Test func trailersMustEndTheResponseAndComeAfterTheHead() throws {
        var before = ExchangeStateMachine(requestSent: true)
        #expect(failure { try before.receivedTrailers(endsResponse: true) }?.message.contains("before the response's header fields") == true)

        var open = ExchangeStateMachine(requestSent: true)
        _ = try open.receivedHead(head(200))
        #expect(failure { try open.receivedTrailers(endsResponse: false) }?.message.contains("second header block") == true)

        var fine = ExchangeStateMachine(requestSent: true)
        _ = try fine.receivedHead(head(200))
        _ = fine.handOverHead()
        try fine.receivedTrailers(endsResponse: true)
        #expect(try fine.responseEnded().exchangeOver)
    }

    // MARK: Impossible events of this side's own making

    @Test func theRequestSentTwiceIsRefused() throws {
        var machine = ExchangeStateMachine()
        _ = try machine.requestSent()
        let error = failure { _ = try machine.requestSent() }
        #expect(error?.code == .invalidOperation)
        #expect(error?.message.contains("sent twice") == true)
    }

    @Test func eventsAfterAFailureAreRefused() throws {
        var machine = ExchangeStateMachine()
        _ = machine.fail()
        #expect(failure { _ = try machine.receivedHead(head(200)) }?.code == .invalidOperation)
        #expect(failure { _ = try machine.receivedBody(count: 1) }?.code == .invalidOperation)
        #expect(failure { _ = try machine.requestSent() }?.code == .invalidOperation)
        #expect(machine.handOverHead() == nil)
    }
}
