import FerryCore
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import FerryEngine

/// Ferry's HTTP/1.1 connection handler on an embedded channel: the test plays the server read by read
/// and moves the loop's clock. On the main actor: the embedded loop may be used only from one thread.
@MainActor @Suite struct HTTP1ConnectionHandlerTests {
    private final class Outcomes: @unchecked Sendable {
        var seen: [HTTP1ConnectionHandler.Outcome] = []
    }

    private struct Connection {
        let channel: EmbeddedChannel
        let handler: HTTP1ConnectionHandler
        let outcomes: Outcomes
    }

    private func connection(copiesBody: Bool = false, idle: TimeAmount = .seconds(30)) throws -> Connection {
        let channel = EmbeddedChannel()
        let handler = HTTP1ConnectionHandler(idleTimeout: idle, copiesBody: copiesBody)
        let outcomes = Outcomes()
        handler.onOutcome = { outcomes.seen.append($0) }
        try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        return Connection(channel: channel, handler: handler, outcomes: outcomes)
    }

    /// Begins exchange `id` (a GET, already written) and returns its answer.
    private func begin(
        _ connection: Connection,
        id: Int = 1,
        deadline: NIODeadline = .distantFuture,
        method: HTTPMethod = .GET
    ) throws -> EventLoopFuture<ExchangeAnswer> {
        let loop = connection.channel.embeddedEventLoop
        let answer = AnswerPromise()
        let slot = HandlerSlot(run: { _ in })
        let began = connection.handler.begin(
            id: id,
            answer: answer,
            slot: slot,
            shared: ExchangeContext(),
            keepAlive: true,
            isHeadRequest: method == .HEAD,
            deadline: deadline
        )
        #expect(began)
        try connection.channel.writeOutbound(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: "/"))
        )
        try connection.channel.writeOutbound(HTTPClientRequestPart.end(nil))
        connection.handler.requestWritten(id: id)
        return answer.future(on: loop)
    }

    private func serve(_ connection: Connection, _ text: String) throws {
        try connection.channel.writeInbound(ByteBuffer(string: text))
    }

    private func answer(_ future: EventLoopFuture<ExchangeAnswer>) throws -> ExchangeAnswer? {
        var result: Result<ExchangeAnswer, any Error>?
        future.whenComplete { result = $0 }
        return try result?.get()
    }

    private func body(_ answer: ExchangeAnswer) async throws -> String {
        var text = ""
        for try await chunk in answer.bodyStream { text += String(buffer: chunk) }
        return text
    }

    @Test(arguments: [false, true])
    func anAnswerThatEndsInTheReadOfItsHeadComesWithItsBody(copiesBody: Bool) async throws {
        let connection = try connection(copiesBody: copiesBody)
        let future = try begin(connection)
        try serve(connection, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        let answer = try #require(try answer(future))
        guard case .complete(let buffer) = answer.body else {
            Issue.record("a complete answer streamed")
            return
        }
        #expect(String(buffer: buffer) == "hello")
        #expect(answer.bodyStream.completeBody != nil)
        #expect(try await body(answer) == "hello")
        #expect(connection.outcomes.seen == [.reusable])
    }

    @Test func anAnswerWithoutContentIsCompleteAndEmpty() async throws {
        let connection = try connection()
        let future = try begin(connection, method: .HEAD)
        try serve(connection, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n")
        let answer = try #require(try answer(future))
        #expect(answer.head.status == .ok)
        #expect(try await body(answer) == "")
        #expect(connection.outcomes.seen == [.reusable])
    }

    @Test(arguments: [false, true])
    func aBodyThatGoesOnAfterTheReadStreams(copiesBody: Bool) async throws {
        let connection = try connection(copiesBody: copiesBody)
        let future = try begin(connection)
        try serve(connection, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello")
        let answer = try #require(try answer(future), "the head goes once its read is done")
        guard case .streaming = answer.body else {
            Issue.record("an unfinished body came as complete")
            return
        }
        #expect(answer.bodyStream.completeBody == nil)
        #expect(connection.outcomes.seen.isEmpty)
        try serve(connection, " world")
        #expect(try await body(answer) == "hello world")
        #expect(connection.outcomes.seen == [.reusable])
    }

    @Test func theHeadAloneStreamsItsBody() async throws {
        let connection = try connection()
        let future = try begin(connection)
        try serve(connection, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        let answer = try #require(try answer(future))
        try serve(connection, "3\r\nabc\r\n0\r\n\r\n")
        #expect(try await body(answer) == "abc")
    }

    @Test func aQuietExchangeTimesOutByTheLoopsClock() async throws {
        let connection = try connection(idle: .seconds(10))
        let future = try begin(connection)
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(try answer(future) == nil)
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(throws: FerryError.self) { try answer(future) }
        #expect(!connection.channel.isActive)
    }

    @Test func bytesArrivingKeepAnExchangeAlive() async throws {
        let connection = try connection(idle: .seconds(10))
        let future = try begin(connection)
        try serve(connection, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\na")
        let answer = try #require(try answer(future))
        for piece in ["b", "c"] {
            connection.channel.embeddedEventLoop.advanceTime(by: .seconds(8))
            try serve(connection, piece)
        }
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try serve(connection, "d")
        #expect(try await body(answer) == "abcd")
    }

    @Test func theResourceDeadlineEndsAnExchange() async throws {
        let connection = try connection(idle: .seconds(60))
        let loop = connection.channel.embeddedEventLoop
        let future = try begin(connection, deadline: loop.now + .seconds(5))
        loop.advanceTime(by: .seconds(6))
        let error = #expect(throws: FerryError.self) { try answer(future) }
        #expect(error?.code == .timedOut)
        #expect(error?.message.contains("resource timeout") == true)
    }

    @Test func anUnusedConnectionClosesAMinuteAfterItsLastExchange() async throws {
        let connection = try connection()
        let loop = connection.channel.embeddedEventLoop
        _ = try answer(try begin(connection, id: 1))
        try serve(connection, "HTTP/1.1 204 No Content\r\n\r\n")
        loop.advanceTime(by: .seconds(59))
        #expect(connection.channel.isActive)
        _ = try begin(connection, id: 2)
        try serve(connection, "HTTP/1.1 204 No Content\r\n\r\n")
        loop.advanceTime(by: .seconds(59))
        #expect(connection.channel.isActive, "the second exchange counts from its own end")
        loop.advanceTime(by: .seconds(2))
        #expect(!connection.channel.isActive)
        #expect(connection.outcomes.seen == [.reusable, .reusable, .closed])
    }
}

extension AnswerPromise {
    /// The answer as a future of `loop` (the tests' embedded loop), for tests written against futures.
    func future(on loop: any EventLoop) -> EventLoopFuture<ExchangeAnswer> {
        let promise = loop.makePromise(of: ExchangeAnswer.self)
        whenComplete { promise.completeWith($0) }
        return promise.futureResult
    }
}
