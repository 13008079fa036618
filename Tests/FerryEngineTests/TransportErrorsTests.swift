import FerryCore
import NIOHTTP1
import Testing

@testable import FerryEngine

/// The engine's own connection errors reach a user in words, never as a Swift value's dump (issue 41).
@Suite struct TransportErrorsTests {
    @Test func aRefusedStreamIsSaidInWords() {
        let error = TransportErrors.ferryError(for: ConnectionError.refused("it is closing the connection (GOAWAY, NO_ERROR) and took no stream from this one on"), url: "https://a.test/f")
        #expect(error.code == .networkConnectionLost)
        #expect(error.message == "the server refused the request without processing it: it is closing the connection (GOAWAY, NO_ERROR) and took no stream from this one on")
        #expect(error.failingURL == "https://a.test/f")
        #expect(!error.message.contains("refused(\""))
    }

    @Test func aConnectionClosedBeforeTheAnswerIsSaidInWords() {
        let error = TransportErrors.ferryError(for: ConnectionError.closedBeforeResponse)
        #expect(error.code == .networkConnectionLost)
        #expect(error.message == "the server closed the connection before answering")
    }
}

/// An answer that is not HTTP/1.1 is said in words, not in the parser's names (issue 41).
@Suite struct HTTPParserErrorWordsTests {
    @Test(arguments: [
        (HTTPParserError.invalidConstant, "its status line or a header line is malformed"),
        (HTTPParserError.unknown, "it could not be parsed"),
        (HTTPParserError.invalidChunkSize, "a chunk's size in its chunked body is not valid"),
    ])
    func aParserErrorIsSaidInWords(error: HTTPParserError, words: String) throws {
        let said = try #require(HTTP1ConnectionHandler.ferryError(for: error) as? FerryError)
        #expect(said.code == .badServerResponse)
        #expect(said.message.hasPrefix("the server's response is not valid HTTP/1.1: \(words)"), "\(said.message)")
        #expect(!said.message.contains("invalid constant string"))
    }
}
