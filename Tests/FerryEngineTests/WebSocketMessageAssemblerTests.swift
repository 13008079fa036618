import FerryCore
import Foundation
import NIOCore
import NIOWebSocket
import Testing

@testable import FerryEngine

/// RFC 6455 §5 as the client reads it, frame by frame, without a network; and RFC 7692's compression.
@Suite struct WebSocketMessageAssemblerTests {
    private func frame(
        _ opcode: WebSocketOpcode,
        _ bytes: [UInt8],
        fin: Bool = true,
        rsv1: Bool = false,
        masked: Bool = false
    ) -> WebSocketFrame {
        var frame = WebSocketFrame(
            fin: fin,
            opcode: opcode,
            maskKey: masked ? WebSocketMaskingKey([1, 2, 3, 4]) : nil,
            data: ByteBuffer(bytes: bytes)
        )
        frame.rsv1 = rsv1
        return frame
    }

    private func text(_ string: String, fin: Bool = true) -> WebSocketFrame { frame(.text, Array(string.utf8), fin: fin) }

    private func isFailure(_ inbound: WebSocketInbound, _ code: WebSocketCloseCode) -> Bool {
        if case .fail(let failed, _) = inbound { return failed == code }
        return false
    }

    @Test func fragmentsJoinWithControlFramesBetween() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(assembler.receive(text("Hel", fin: false)) == .none)
        #expect(assembler.receive(frame(.ping, [9])) == .ping(ByteBuffer(bytes: [9])))
        #expect(assembler.receive(frame(.continuation, Array("lo, ".utf8), fin: false)) == .none)
        #expect(assembler.receive(frame(.pong, [])) == .pong)
        #expect(assembler.receive(frame(.continuation, Array("world".utf8))) == .message(.string("Hello, world")))
        #expect(assembler.receive(frame(.binary, [1, 2, 3])) == .message(.data(Data([1, 2, 3]))))
    }

    @Test func sequenceBreachesAreProtocolErrors() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(assembler.receive(frame(.continuation, [1])), .protocolError))
        var second = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        _ = second.receive(text("a", fin: false))
        #expect(isFailure(second.receive(text("b")), .protocolError))
        var masked = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(masked.receive(frame(.text, [0x61], masked: true)), .protocolError))
        var reserved = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(reserved.receive(frame(.text, [0x61], rsv1: true)), .protocolError))
        var opcode = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(opcode.receive(frame(WebSocketOpcode(encodedWebSocketOpcode: 3)!, [])), .protocolError))
    }

    @Test func controlFramesMustBeWholeAndShort() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(assembler.receive(frame(.ping, [1], fin: false)), .protocolError))
        #expect(isFailure(assembler.receive(frame(.ping, Array(repeating: 0, count: 126))), .protocolError))
    }

    @Test func invalidUTF8FailsInTheFirstFragmentThatHoldsIt() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        // 0xF4 0x90 is above U+10FFFF: wrong before the message ends (Autobahn 6.4).
        #expect(isFailure(assembler.receive(frame(.text, [0x61, 0xF4, 0x90], fin: false)), .invalidFramePayloadData))
        var split = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        // "€" split across fragments is fine.
        #expect(split.receive(frame(.text, [0xE2, 0x82], fin: false)) == .none)
        #expect(split.receive(frame(.continuation, [0xAC])) == .message(.string("€")))
        var truncated = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(truncated.receive(frame(.text, [0xE2, 0x82])), .invalidFramePayloadData))
        var surrogate = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(isFailure(surrogate.receive(frame(.text, [0xED, 0xA0, 0x80])), .invalidFramePayloadData))
    }

    @Test func closeFramesAreRead() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20)
        #expect(assembler.receive(frame(.connectionClose, [])) == .close(code: nil, reason: ""))
        #expect(assembler.receive(frame(.connectionClose, [0x0F, 0xA1] + Array("bye".utf8))) == .close(code: WebSocketCloseCode(rawValue: 4001), reason: "bye"))
        #expect(isFailure(assembler.receive(frame(.connectionClose, [0x03])), .protocolError))
        for invalid: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] {
            let bytes = [UInt8(invalid >> 8), UInt8(invalid & 0xFF)]
            #expect(isFailure(assembler.receive(frame(.connectionClose, bytes)), .protocolError), "code \(invalid)")
        }
        #expect(isFailure(assembler.receive(frame(.connectionClose, [0x03, 0xE8, 0xFF])), .invalidFramePayloadData))
    }

    @Test func theMaximumCountsEveryFragment() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 10)
        #expect(assembler.receive(frame(.binary, Array(repeating: 1, count: 6), fin: false)) == .none)
        #expect(isFailure(assembler.receive(frame(.continuation, Array(repeating: 1, count: 6))), .messageTooBig))
        var exact = WebSocketMessageAssembler(maximumMessageSize: 10)
        #expect(exact.receive(frame(.binary, Array(repeating: 1, count: 10))) == .message(.data(Data(repeating: 1, count: 10))))
    }

    @Test func compressedMessagesInflateAndTheLimitAppliesAfter() throws {
        let sender = PerMessageDeflate(.init())
        let text = String(repeating: "ferry carries bytes across the water. ", count: 200)
        let compressed = try sender.deflate(ByteBuffer(string: text))
        #expect(compressed.readableBytes < text.utf8.count / 10)
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20, deflate: PerMessageDeflate(.init()))
        // Split in two frames: only the first carries RSV1.
        let bytes = Array(compressed.readableBytesView)
        let half = bytes.count / 2
        #expect(assembler.receive(frame(.text, Array(bytes[..<half]), fin: false, rsv1: true)) == .none)
        #expect(assembler.receive(frame(.continuation, Array(bytes[half...]))) == .message(.string(text)))
        // The same context goes on (no context takeover was not asked for).
        let again = try sender.deflate(ByteBuffer(string: text))
        #expect(again.readableBytes < compressed.readableBytes)
        #expect(assembler.receive(frame(.text, Array(again.readableBytesView), rsv1: true)) == .message(.string(text)))

        var small = WebSocketMessageAssembler(maximumMessageSize: 1000, deflate: PerMessageDeflate(.init()))
        let bomb = try PerMessageDeflate(.init()).deflate(ByteBuffer(repeating: 0, count: 100_000))
        #expect(isFailure(small.receive(frame(.binary, Array(bomb.readableBytesView), rsv1: true)), .messageTooBig))
        var garbage = WebSocketMessageAssembler(maximumMessageSize: 1000, deflate: PerMessageDeflate(.init()))
        #expect(isFailure(garbage.receive(frame(.binary, [0xFF, 0xFF, 0xFF], rsv1: true)), .invalidFramePayloadData))
    }

    @Test func theServersAnswerToTheOfferIsChecked() throws {
        #expect(try PerMessageDeflate.Parameters.accepted([]) == nil)
        let full = try PerMessageDeflate.Parameters.accepted([
            "permessage-deflate; server_no_context_takeover; client_max_window_bits=10; server_max_window_bits=12"
        ])
        #expect(full?.serverNoContextTakeover == true)
        #expect(full?.clientMaxWindowBits == 10)
        #expect(full?.serverMaxWindowBits == 12)
        #expect(throws: PerMessageDeflate.Failure.self) { try PerMessageDeflate.Parameters.accepted(["x-webkit-deflate-frame"]) }
        #expect(throws: PerMessageDeflate.Failure.self) {
            try PerMessageDeflate.Parameters.accepted(["permessage-deflate; client_max_window_bits=7"])
        }
        #expect(throws: PerMessageDeflate.Failure.self) {
            try PerMessageDeflate.Parameters.accepted(["permessage-deflate; unknown=1"])
        }
        #expect(throws: PerMessageDeflate.Failure.self) {
            try PerMessageDeflate.Parameters.accepted(["permessage-deflate, permessage-deflate"])
        }
    }

    @Test func noContextTakeoverResetsTheCompressorEachMessage() throws {
        var parameters = PerMessageDeflate.Parameters()
        parameters.clientNoContextTakeover = true
        let sender = PerMessageDeflate(parameters)
        let text = String(repeating: "abcdefgh", count: 100)
        let first = try sender.deflate(ByteBuffer(string: text))
        let second = try sender.deflate(ByteBuffer(string: text))
        #expect(first == second)
        // A fresh receiver (no shared context) reads the second on its own.
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 1 << 20, deflate: PerMessageDeflate(.init()))
        #expect(assembler.receive(frame(.text, Array(second.readableBytesView), rsv1: true)) == .message(.string(text)))
    }
}
