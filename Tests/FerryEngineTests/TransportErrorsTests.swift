import FerryCore
import Testing

@testable import FerryEngine

/// The engine's own connection errors reach a user in words, never as a Swift value's dump (issue 41).
@Suite struct TransportErrorsTests {
    @Test func aRefusedStreamIsSaidInWords() {
        let error = TransportErrors.ferryError(for: ConnectionError.refused("GOAWAY (NO_ERROR) below the stream"), url: "https://a.test/f")
        #expect(error.code == .networkConnectionLost)
        #expect(error.message == "the server refused the request without processing it (GOAWAY (NO_ERROR) below the stream)")
        #expect(error.failingURL == "https://a.test/f")
        #expect(!error.message.contains("refused(\""))
    }

    @Test func aConnectionClosedBeforeTheAnswerIsSaidInWords() {
        let error = TransportErrors.ferryError(for: ConnectionError.closedBeforeResponse)
        #expect(error.code == .networkConnectionLost)
        #expect(error.message == "the server closed the connection before answering")
    }
}
