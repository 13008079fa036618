/// The receiving half of ``QUICClientConnection``: datagrams opened (a stateless reset recognised
/// first), packets of each encryption level acted on frame by frame, stream data within flow control,
/// the TLS handshake's events, and the server's transport parameters checked.
// MARK: Receiving

extension QUICClientConnection {
    /// A datagram from the server: its packets opened and acted on; the datagrams to send in answer.
    public mutating func receive(_ datagram: [UInt8]) -> [[UInt8]] {
        absorb(datagram)
        return pendingDatagrams()
    }

    /// The datagrams to send now: what ``absorb(_:)`` owes the peer (its acknowledgements, a
    /// CONNECTION_CLOSE), with whatever else is ready.
    public mutating func pendingDatagrams() -> [[UInt8]] {
        defer { outbox = [] }
        return isClosed ? outbox : outbox + flush()
    }

    /// A datagram from the server, its packets opened and acted on, without answering yet: an owner
    /// that reads datagrams in batches calls ``pendingDatagrams()`` once after each, so one
    /// acknowledgement covers the batch (RFC 9000 §13.2.2 asks for one every two packets at least).
    public mutating func absorb(_ datagram: [UInt8]) {
        guard !isClosed else { return }
        if isStatelessReset(datagram) {
            // Draining at once: nothing more is sent (RFC 9000 §10.3.1).
            isClosed = true
            events.append(.statelessReset)
            return
        }
        var offset = 0
        while offset < datagram.count {
            guard let header = try? QUICPacketHeader.parse(datagram, at: offset, shortConnectionIDLength: sourceConnectionID.count),
                header.packetLength > 0, offset + header.packetLength <= datagram.count
            else { break }
            defer { offset += header.packetLength }
            if header.kind == .retry {
                receivedRetry(Array(datagram[offset..<(offset + header.packetLength)]), header: header)
                return
            }
            if header.kind == .versionNegotiation {
                receivedVersionNegotiation(header)
                return
            }
            guard let level = header.level, level != .earlyData else { continue }
            do {
                try receivePacket(Array(datagram[offset..<(offset + header.packetLength)]), header: header, level: level)
            } catch {
                outbox += fail(errorCode: 0x0a, reason: "\(error)")
                return
            }
            if isClosed { return }
        }
    }

    private mutating func receivePacket(_ packet: [UInt8], header: QUICPacketHeader, level: QUICEncryptionLevel) throws(QUICError) {
        let index = Self.spaceIndex(level)
        guard let protection = spaces[index].read else { return }  // keys not yet (or no longer) here
        let largest = spaces[index].largestReceived
        // A packet these keys do not open is dropped, as RFC 9001 §5.5 says: it may be forged, or
        // (1-RTT) sealed with the next key phase or the one before.
        var opened = try? protection.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest)
        if opened == nil, level == .application {
            opened = keyPhaseChange(packet, header: header, largest: largest)
        }
        guard let opened else { return }
        if level == .initial, !sawServerInitial {
            // The server's connection ID is the destination from now on (RFC 9000 §7.2).
            sawServerInitial = true
            destinationConnectionID = header.sourceConnectionID
        }
        record(opened.packetNumber, in: index)
        for frame in try QUICFrame.decodeAll(opened.payload) {
            if frame.isAckEliciting { spaces[index].ackNeeded = true }
            try handle(frame, at: level)
            if isClosed { return }
        }
    }

    /// A 1-RTT packet the current keys did not open: sealed with the next key phase (the peer updated
    /// its keys, RFC 9001 §6: this side follows, reading and writing with the next keys from now on), or
    /// with the previous phase (a packet that was on its way during the update). Nil: neither.
    private mutating func keyPhaseChange(_ packet: [UInt8], header: QUICPacketHeader, largest: UInt64?) -> QUICPacketProtection.Opened? {
        if let previous = previousReadKeys,
            let opened = try? previous.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest)
        {
            return opened
        }
        guard let current = spaces[2].read, let write = spaces[2].write else { return nil }
        let next = QUICPacketProtection(keys: current.keys.updated())
        guard let opened = try? next.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest),
            opened.header[0] & 0x04 != 0 ? !keyPhase : keyPhase
        else { return nil }
        previousReadKeys = current
        spaces[2].read = next
        spaces[2].write = QUICPacketProtection(keys: write.keys.updated())
        keyPhase.toggle()
        keyPhaseFirstPacket = spaces[2].nextPacketNumber
        return opened
    }

    private mutating func record(_ packetNumber: UInt64, in index: Int) {
        spaces[index].largestReceived = max(spaces[index].largestReceived ?? 0, packetNumber)
        var ranges = spaces[index].received
        ranges.append(packetNumber...packetNumber)
        ranges.sort { $0.lowerBound > $1.lowerBound }
        var merged: [ClosedRange<UInt64>] = []
        for range in ranges {
            if let last = merged.last, range.upperBound + 1 >= last.lowerBound {
                merged[merged.count - 1] = min(range.lowerBound, last.lowerBound)...max(range.upperBound, last.upperBound)
            } else {
                merged.append(range)
            }
        }
        // Only the newest ranges are kept: an ACK frame need not name old ones again.
        spaces[index].received = Array(merged.prefix(32))
    }

    private mutating func handle(_ frame: QUICFrame, at level: QUICEncryptionLevel) throws(QUICError) {
        switch frame {
        case .crypto(let offset, let data):
            let index = Self.spaceIndex(level)
            let ready = try spaces[index].cryptoIn.add(data, at: offset)
            if !ready.isEmpty { try apply(tls.receive(ready, at: level)) }
        case .stream(let id, let offset, let data, let fin):
            try receive(stream: id, offset: offset, data: data, fin: fin)
        case .ack(let ranges, let delay, _):
            let index = Self.spaceIndex(level)
            requeue(recovery.acknowledged(ranges, ackDelay: delay, in: index, now: clock()), space: index)
        case .maxData(let maximum):
            peerMaxData = max(peerMaxData, maximum)
        case .maxStreamData(let id, let maximum):
            if var stream = streams[id] {
                stream.sendLimit = max(stream.sendLimit, maximum)
                streams[id] = stream
            }
        case .resetStream(let id, let code, let finalSize):
            if absorbCancelled(id, upTo: finalSize, final: true) { break }
            if let stream = streams[id] {
                // What it sent and what it will not send count as received and read (RFC 9000 §4.5).
                let final = max(finalSize, stream.highestReceived)
                dataReceived += final - stream.highestReceived
                dataConsumed += final - min(stream.consumed, final)
            }
            events.append(.streamReset(streamID: id, errorCode: code))
            streams[id] = nil
        case .pathChallenge(let data):
            pendingControlFrames.append(.pathResponse(data))
        case .connectionClose(let code, _, let reason):
            isClosed = true
            events.append(.closed(errorCode: code, reason: reason, byPeer: true))
        case .handshakeDone:
            // Handshake confirmed (RFC 9001 §4.1.2): the Handshake keys go.
            spaces[1].read = nil
            spaces[1].write = nil
            spaces[1].retransmit = []
            recovery.discard(space: 1)
            recovery.handshakeConfirmed = true
        case .maxStreams(let bidirectional, let maximum):
            if bidirectional { peerMaxBidirectionalStreams = max(peerMaxBidirectionalStreams, maximum) }
            else { peerMaxUnidirectionalStreams = max(peerMaxUnidirectionalStreams, maximum) }
        case .newConnectionID(let sequence, let retirePriorTo, let connectionID, let token):
            try received(connectionID: connectionID, sequence: sequence, retirePriorTo: retirePriorTo, resetToken: token)
        case .pathResponse(let data):
            receivedPathResponse(data)
        case .padding, .ping, .newToken, .retireConnectionID, .dataBlocked, .streamDataBlocked, .streamsBlocked, .stopSending:
            break
        }
    }

    private mutating func receive(stream id: UInt64, offset: UInt64, data: [UInt8], fin: Bool) throws(QUICError) {
        // Server-initiated bidirectional streams are not allowed (initial_max_streams_bidi 0).
        guard id & 0x03 != 0x01 else { throw .malformed("a server-initiated bidirectional stream") }
        if id & 0x03 == 0x00, streams[id] == nil {
            guard id < nextBidirectionalStream else { throw .malformed("data on stream \(id), which this side has not opened") }
            // A stream this side cancelled: its bytes still count for the connection; else a late copy.
            _ = absorbCancelled(id, upTo: offset + UInt64(data.count), final: fin)
            guard dataReceived <= receiveLimit else { throw .malformed("more data than the connection's flow-control limit") }
            return
        }
        // A server's unidirectional stream past the limit this side announced (RFC 9000 §4.6): a
        // STREAM_LIMIT_ERROR, before anything is kept for it.
        guard id & 0x03 != 0x03 || id / 4 < Self.peerUnidirectionalStreams else {
            throw .malformed("the server opened more unidirectional streams than the \(Self.peerUnidirectionalStreams) allowed")
        }
        // Taken out while it changes, so its reassembly buffer is not copied (a throw below closes the
        // connection anyway).
        var stream = streams.removeValue(forKey: id) ?? Stream()
        let end = offset + UInt64(data.count)
        // Flow control (RFC 9000 §4): no byte past what this side allowed, on the stream or in all.
        guard end <= stream.receiveLimit else { throw .malformed("stream \(id) data past its flow-control limit") }
        if end > stream.highestReceived {
            dataReceived += end - stream.highestReceived
            stream.highestReceived = end
        }
        guard dataReceived <= receiveLimit else { throw .malformed("more data than the connection's flow-control limit") }
        if fin { stream.finalSize = end }
        let ready = try stream.incoming.add(data, at: offset)
        let ends = stream.finalSize.map { stream.incoming.delivered == $0 } ?? false
        if !ready.isEmpty || (ends && !stream.finDelivered) {
            events.append(.streamData(streamID: id, data: ready, fin: ends))
            stream.finDelivered = ends
        }
        streams[id] = id & 0x03 == 0x00 && stream.finDelivered && stream.finSent ? nil : stream
    }

    /// What the TLS handshake asks for.
    mutating func apply(_ tlsEvents: [QUICTLS.Event]) throws(QUICError) {
        for event in tlsEvents {
            switch event {
            case .send(let level, let bytes):
                spaces[Self.spaceIndex(level)].cryptoOut += bytes
            case .readKeys(let level, let keys):
                spaces[Self.spaceIndex(level)].read = QUICPacketProtection(keys: keys)
            case .writeKeys(let level, let keys):
                spaces[Self.spaceIndex(level)].write = QUICPacketProtection(keys: keys)
            case .verifyPeer(let chain):
                events.append(.certificateChain(chain))
            case .handshakeComplete:
                try adoptPeerParameters()
                isHandshakeComplete = true
                issueConnectionID()
                events.append(.handshakeComplete(applicationProtocol: tls.applicationProtocol))
            }
        }
    }

    /// The server's transport parameters, checked against the connection IDs actually used (RFC 9000
    /// §7.3: otherwise an attacker could have changed them).
    private mutating func adoptPeerParameters() throws(QUICError) {
        guard let encoded = tls.peerTransportParameters else { throw .malformed("the server sent no transport parameters") }
        let parameters = try QUICTransportParameters.decode(encoded)
        guard parameters.originalDestinationConnectionID == originalDestinationConnectionID else {
            throw .malformed("original_destination_connection_id does not match the first Initial")
        }
        guard parameters.initialSourceConnectionID == destinationConnectionID else {
            throw .malformed("initial_source_connection_id does not match the server's")
        }
        guard parameters.retrySourceConnectionID == retrySourceConnectionID else {
            throw .malformed("retry_source_connection_id does not match the Retry (RFC 9000 §7.3)")
        }
        peerParameters = parameters
        if let token = parameters.statelessResetToken { peerResetTokens[0] = token }
        peerMaxData = parameters.initialMaxData
        peerMaxBidirectionalStreams = max(peerMaxBidirectionalStreams, parameters.initialMaxStreamsBidi)
        peerMaxUnidirectionalStreams = max(peerMaxUnidirectionalStreams, parameters.initialMaxStreamsUni)
        recovery.maximumAckDelay = parameters.maxAckDelay * QUICRecovery.millisecond
        recovery.ackDelayExponent = parameters.ackDelayExponent
        for (id, var stream) in streams where stream.sendLimit == 0 {
            stream.sendLimit = id & 0x02 == 0 ? parameters.initialMaxStreamDataBidiRemote : parameters.initialMaxStreamDataUni
            streams[id] = stream
        }
    }

    mutating func fail(errorCode: UInt64, reason: String) -> [[UInt8]] {
        pendingControlFrames = [.connectionClose(errorCode: errorCode, frameType: 0, reason: reason)]
        let datagrams = flush()
        isClosed = true
        events.append(.closed(errorCode: errorCode, reason: reason, byPeer: false))
        return datagrams
    }

    static func spaceIndex(_ level: QUICEncryptionLevel) -> Int {
        switch level {
        case .initial: 0
        case .handshake: 1
        case .earlyData, .application: 2
        }
    }
}
