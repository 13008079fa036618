import FerryCore
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1

/// What arrives: each frame the reader parsed, acted on (HEADERS and DATA reach the stream's
/// ``ExchangeStateMachine``; SETTINGS, WINDOW_UPDATE, RST_STREAM and GOAWAY change the connection).
extension HTTP2ClientHandler {
    func handle(_ header: HTTP2Frame.Header, _ payload: ByteBuffer, context: ChannelHandlerContext) throws {
        if let continuing, header.kind != .continuation || header.stream != continuing.stream {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a header block was interrupted by another frame")
        }
        var payload = payload
        if header.kind != .ping, header.kind != .settings { answersInARow = 0 }
        switch header.kind {
        case .headers:
            try checkServerStream(header.stream, "HEADERS")
            if header.has(HTTP2Frame.Flag.padded) { payload = try Self.unpadded(payload, "HEADERS") }
            if header.has(HTTP2Frame.Flag.priority) {
                guard payload.readableBytes >= 5 else {
                    throw HTTP2Frame.Violation(code: .frameSizeError, message: "a HEADERS frame too short for its priority")
                }
                payload.moveReaderIndex(forwardBy: 5)
            }
            let endStream = header.has(HTTP2Frame.Flag.endStream)
            if header.has(HTTP2Frame.Flag.endHeaders) {
                try headers(on: header.stream, block: payload, endStream: endStream, context: context)
            } else {
                continuationFrames = 0
                continuing = (header.stream, payload, endStream)
            }
        case .continuation:
            guard let (stream, gathered, endStream) = continuing else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "a CONTINUATION frame without a header block")
            }
            // Taken out first, so appending does not copy the block on every frame.
            continuing = nil
            continuationFrames += 1
            var block = gathered
            guard block.readableBytes + payload.readableBytes <= Self.maximumHeaderBlock,
                continuationFrames <= Self.maximumContinuationFrames
            else {
                // Limited as it arrives (a block without END_HEADERS once grew for 60 s at full CPU).
                throw HTTP2Frame.Violation(
                    code: .enhanceYourCalm,
                    message: "a header block of more than \(Self.maximumHeaderBlock / 1024) KiB or \(Self.maximumContinuationFrames) CONTINUATION frames"
                )
            }
            block.writeBuffer(&payload)
            if header.has(HTTP2Frame.Flag.endHeaders) {
                try headers(on: stream, block: block, endStream: endStream, context: context)
            } else {
                continuing = (stream, block, endStream)
            }
        case .settings:
            guard header.stream == 0 else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "SETTINGS on a stream")
            }
            if header.has(HTTP2Frame.Flag.ack) { return }
            guard header.length % 6 == 0 else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a SETTINGS frame of \(header.length) bytes")
            }
            try applySettings(payload, context: context)
        case .ping:
            guard header.length == 8, header.stream == 0, let data = payload.readInteger(as: UInt64.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a PING frame of \(header.length) bytes")
            }
            if header.has(HTTP2Frame.Flag.ack) {
                if data == unansweredPing { unansweredPing = nil }
            } else {
                try countAnswer(context: context, "PING")
                queue(context: context) { $0.writeHTTP2Ping(data, ack: true) }
            }
        case .goAway:
            guard header.stream == 0, let last = payload.readInteger(as: UInt32.self),
                let code = payload.readInteger(as: UInt32.self)
            else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a GOAWAY frame of \(header.length) bytes")
            }
            goAway(lastProcessed: last & 0x7FFF_FFFF, code: HTTP2Frame.ErrorCode(rawValue: code), context: context)
        case .windowUpdate:
            guard header.length == 4, let raw = payload.readInteger(as: UInt32.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "a WINDOW_UPDATE frame of \(header.length) bytes")
            }
            try windowUpdate(stream: header.stream, increment: Int(raw & 0x7FFF_FFFF), context: context)
        case .resetStream:
            guard header.length == 4, header.stream != 0, let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2Frame.Violation(code: .frameSizeError, message: "an RST_STREAM frame of \(header.length) bytes")
            }
            reset(header.stream, by: HTTP2Frame.ErrorCode(rawValue: code))
        case .pushPromise:
            throw HTTP2Frame.Violation(code: .protocolError, message: "PUSH_PROMISE, though this client switched push off")
        case .priority, .data, nil:
            // PRIORITY is advice this client does not need; unknown frame types are ignored (RFC 9113 §4.1).
            break
        }
    }

    func handleData(
        stream id: UInt32,
        _ content: ByteBuffer,
        window: Int,
        endStream: Bool,
        context: ChannelHandlerContext
    ) throws {
        if continuing != nil {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a header block was interrupted by DATA")
        }
        answersInARow = 0
        try checkServerStream(id, "DATA")
        // The connection's window is given back as bytes arrive; each stream's as its reader takes them.
        connectionReceiveWindow -= window
        guard connectionReceiveWindow >= 0 else {
            throw HTTP2Frame.Violation(code: .flowControlError, message: "the server sent more than the connection's window")
        }
        connectionUnacknowledged += window
        if connectionUnacknowledged >= settings.connectionWindow / 4 {
            let increment = connectionUnacknowledged
            connectionUnacknowledged = 0
            connectionReceiveWindow += increment
            queue(context: context) { $0.writeHTTP2WindowUpdate(stream: 0, increment: increment) }
        }
        // A stream this side has reset or finished: its bytes are dropped.
        guard let stream = streams[id] else { return }
        let count = content.readableBytes
        do {
            try stream.machine.receivedBody(count: count)
        } catch {
            fail(id, error.error, reset: .protocolError)
            return
        }
        stream.lastActivity = context.eventLoop.now
        stream.unacknowledged += window
        stream.receiveWindow -= window
        guard stream.receiveWindow >= 0 else {
            fail(id, FerryError(.badServerResponse, "the server sent more than the stream's window"), reset: .flowControlError)
            return
        }
        if count > 0 {
            if !stream.hasContent, !endStream { batched.append(id) }
            stream.keep(content, allocator: context.channel.allocator)
        }
        if endStream { responseEnded(id, context: context) }
    }

    /// A whole header block for stream `id`: the response head, an informational response, or trailers.
    func headers(on id: UInt32, block: ByteBuffer, endStream: Bool, context: ChannelHandlerContext) throws {
        var block = block
        // Decoded even for a stream that is gone: the decoder's table must stay in step with the server's.
        let fields = try decoder.decodeHeaders(from: &block)
        guard let stream = streams[id] else { return }
        stream.lastActivity = context.eventLoop.now
        let isTrailers: Bool
        if case .awaitingHead = stream.machine.response { isTrailers = false } else { isTrailers = true }
        // Malformed (RFC 9113 §8.1.1): a stream error, and nothing of the block is used.
        if let problem = HTTP2ResponseFields.problem(fields.lazy.map { (name: $0.name, value: $0.value) }, trailers: isTrailers) {
            fail(id, FerryError(.badServerResponse, "the server sent a malformed HTTP/2 response: \(problem)"), reset: .protocolError)
            return
        }
        do {
            if isTrailers {
                // Trailers: the response's end.
                try stream.machine.receivedTrailers(endsResponse: endStream)
            } else if try !responseHead(fields, on: stream, endStream: endStream) {
                return
            }
        } catch {
            fail(id, error.error, reset: .protocolError)
            return
        }
        if endStream { responseEnded(id, context: context) }
    }

    /// A head for `stream`: informational (handed to the listener; returns false, the stream goes on
    /// without ending) or final (held until the read is done).
    func responseHead(_ fields: HPACKHeaders, on stream: HTTP2Stream, endStream: Bool) throws(ExchangeStateMachine.Failure) -> Bool {
        var status: Int?
        var headers = HTTPHeaders()
        for field in fields {
            if field.name == ":status" {
                status = Int(field.value)
            } else if !field.name.hasPrefix(":") {
                headers.add(name: field.name, value: field.value)
            }
        }
        guard let status, (100...999).contains(status) else {
            throw ExchangeStateMachine.Failure("the server's HTTP/2 response has no valid :status")
        }
        guard status != 101 else {
            throw ExchangeStateMachine.Failure("the server answered 101 over HTTP/2, which has no protocol switch (RFC 9113 §8.6)")
        }
        let head = HTTPResponseHead(version: .http2, status: .init(statusCode: status), headers: headers)
        switch try stream.machine.receivedHead(head) {
        case .informational:
            // 103 Early Hints, say: the real head follows.
            if endStream {
                throw ExchangeStateMachine.Failure("the server ended the stream after an informational response")
            }
            stream.shared.informational(status: status, headers: headers)
            return false
        case .final:
            stream.shared.timing.withLockedValue { $0.responseStart = Date() }
            // Handed over once this read is done, with the whole content if the stream ends in it.
            headsPending.append(stream.id)
            return true
        }
    }

    func applySettings(_ payload: ByteBuffer, context: ChannelHandlerContext) throws {
        var payload = payload
        while let raw = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch HTTP2Frame.Setting(rawValue: raw) {
            case .headerTableSize:
                try? encoder.setDynamicTableSize(min(Int(value), HPACKEncoder.defaultDynamicTableSize))
            case .maximumConcurrentStreams:
                events.maximumStreams(Int(value))
            case .initialWindowSize:
                guard Int(value) <= HTTP2Frame.maximumWindow else {
                    throw HTTP2Frame.Violation(code: .flowControlError, message: "an initial window of \(value)")
                }
                let delta = Int(value) - peerInitialWindow
                peerInitialWindow = Int(value)
                for stream in streams.values { stream.sendWindow += delta }
            case .maximumFrameSize:
                guard (HTTP2Frame.defaultMaximumFrameSize...0xFF_FFFF).contains(Int(value)) else {
                    throw HTTP2Frame.Violation(code: .protocolError, message: "a maximum frame size of \(value)")
                }
                peerMaximumFrameSize = Int(value)
            case .enablePush, .maximumHeaderListSize, nil:
                break
            }
        }
        try countAnswer(context: context, "SETTINGS")
        queue(context: context) { $0.writeHTTP2SettingsAck() }
        sendAllOutbound(context: context)
    }

    func windowUpdate(stream id: UInt32, increment: Int, context: ChannelHandlerContext) throws {
        if id == 0 {
            guard increment > 0 else {
                throw HTTP2Frame.Violation(code: .protocolError, message: "a WINDOW_UPDATE of 0 for the connection")
            }
            connectionSendWindow += increment
            guard connectionSendWindow <= HTTP2Frame.maximumWindow else {
                throw HTTP2Frame.Violation(code: .flowControlError, message: "the connection's window grew past 2^31-1")
            }
            sendAllOutbound(context: context)
            return
        }
        guard let stream = streams[id] else { return }
        stream.sendWindow += increment
        if increment == 0 || stream.sendWindow > HTTP2Frame.maximumWindow {
            fail(id, FerryError(.badServerResponse, "the server sent an invalid WINDOW_UPDATE for the stream"), reset: .flowControlError)
            return
        }
        sendOutbound(id, context: context)
    }

    func reset(_ id: UInt32, by code: HTTP2Frame.ErrorCode) {
        guard let stream = streams[id] else { return }
        if code == .refusedStream, !stream.machine.receivedAnything {
            fail(id, ConnectionError.refused("it reset the stream with REFUSED_STREAM"), reset: nil)
        } else if code == .noError, stream.machine.response == .complete {
            // The server took the answer as the end (it need not read the rest of the request).
            return
        } else {
            fail(
                id,
                FerryError(.networkConnectionLost, "the server reset the HTTP/2 stream (\(code)) before the response was complete"),
                reset: nil
            )
        }
    }

    func goAway(lastProcessed: UInt32, code: HTTP2Frame.ErrorCode, context: ChannelHandlerContext) {
        announceGoAway()
        // Streams above the last one the server processed were not: safe to send again elsewhere.
        for id in Array(streams.keys) where id > lastProcessed {
            fail(id, ConnectionError.refused("it is closing the connection (GOAWAY, \(code)) and took no stream from this one on"), reset: nil)
        }
        closeIfDrained(context: context)
    }

    /// Tells the owner, once, that no new stream may go here.
    func announceGoAway() {
        goingAway = true
        guard !announcedGoAway else { return }
        announcedGoAway = true
        events.goAway()
    }
}
