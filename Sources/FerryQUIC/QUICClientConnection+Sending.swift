/// Building the connection's packets: per packet number space, an ACK when one is owed, handshake
/// bytes, control frames and stream data within the peer's limits, each packet at most 1,200 bytes
/// and a datagram with an Initial padded to 1,200 (RFC 9000 §14.1).
extension QUICClientConnection {
    /// The datagrams that can go now.
    mutating func flush() -> [[UInt8]] {
        updateKeysIfDue()
        var datagrams: [[UInt8]] = []
        for index in 0..<3 {
            while let packet = nextPacket(index) { datagrams.append(packet) }
        }
        return datagrams
    }

    /// A 1-RTT packet whose payload comes within this many bytes of its room is padded to the full
    /// ``packetSize`` (the room a STREAM frame's header leaves unused, at most).
    public static let fullPacketSlack = 32

    /// The packet number length this side writes: two bytes, enough for 32,768 packets in flight.
    static let packetNumberLength = 2

    /// The bytes of header (up to and including the packet number) for a packet in space `index`.
    private func headerLength(_ index: Int) -> Int {
        let ids = destinationConnectionID.count + sourceConnectionID.count
        switch index {
        case 0:
            let token = retryToken?.count ?? 0
            return 1 + 4 + 1 + 1 + ids + QUICVarint.length(of: UInt64(token)) + token + 2 + Self.packetNumberLength
        case 1: return 1 + 4 + 1 + 1 + ids + 2 + Self.packetNumberLength
        default: return 1 + destinationConnectionID.count + Self.packetNumberLength
        }
    }

    /// The index of the highest space this side can write in: where control frames go.
    private var highestWritable: Int? { (0..<3).last { spaces[$0].write != nil } }

    private mutating func nextPacket(_ index: Int) -> [UInt8]? {
        guard let protection = spaces[index].write else { return nil }
        let capacity = Self.packetSize - headerLength(index) - QUICPacketProtection.tagLength
        var payload: [UInt8] = []
        // What this packet carries that must arrive: sent again if it is lost (QUICRecovery).
        var carried: [QUICFrame] = []
        if spaces[index].ackNeeded, !spaces[index].received.isEmpty {
            QUICFrame.ack(ranges: spaces[index].received, delay: 0, ecn: nil).encode(into: &payload)
            spaces[index].ackNeeded = false
        }
        // Congestion control and pacing (RFC 9002 §7) hold back 1-RTT packets that must be
        // acknowledged; an acknowledgement alone always goes.
        if index == 2, !congestionAllows() { return seal(payload, index: index, protection: protection, carried: []) }
        while var frame = spaces[index].retransmit.first {
            var bytes = frame.encoded
            if payload.count + bytes.count > capacity {
                // Data that no longer fits a packet whole (a Retry's token, a longer connection ID
                // since): what fits goes now, the rest waits at the front.
                guard let (head, rest) = frame.split(fitting: capacity - payload.count) else { break }
                spaces[index].retransmit.insert(rest, at: 1)
                frame = head
                bytes = head.encoded
            }
            payload += bytes
            carried.append(frame)
            spaces[index].retransmit.removeFirst()
        }
        if !spaces[index].cryptoOut.isEmpty, capacity - payload.count > 32 {
            let take = min(spaces[index].cryptoOut.count, capacity - payload.count - 16)
            let frame = QUICFrame.crypto(offset: spaces[index].cryptoSendOffset, data: Array(spaces[index].cryptoOut.prefix(take)))
            frame.encode(into: &payload)
            carried.append(frame)
            spaces[index].cryptoOut.removeFirst(take)
            spaces[index].cryptoSendOffset += UInt64(take)
        }
        if index == highestWritable { carried += addControlFrames(to: &payload, capacity: capacity, level: index) }
        if index == 2, isHandshakeComplete { carried += addStreamFrames(to: &payload, capacity: capacity) }
        return seal(payload, index: index, protection: protection, carried: carried)
    }

    /// Whether a full-sized packet may go now; when the pacer is what holds it back, when it may.
    private mutating func congestionAllows() -> Bool {
        let (now, rtt) = (clock(), recovery.smoothedRTT)
        if recovery.congestion.canSend(Self.packetSize, now: now, smoothedRTT: rtt) { return true }
        if probeAllowance > 0 {
            probeAllowance -= 1
            return true
        }
        if let due = recovery.congestion.pacingDelay(for: Self.packetSize, now: now, smoothedRTT: rtt) { pacingDue = due }
        return false
    }

    /// `payload` as a protected packet of space `index`, recorded as sent; nil when it is empty.
    private mutating func seal(_ payload: [UInt8], index: Int, protection: QUICPacketProtection, carried: [QUICFrame]) -> [UInt8]? {
        var payload = payload
        guard !payload.isEmpty else { return nil }
        let capacity = Self.packetSize - headerLength(index) - QUICPacketProtection.tagLength
        let probesPath = carried.contains {
            switch $0 {
            case .pathChallenge, .pathResponse: true
            default: false
            }
        }
        if index == 0 || probesPath {
            // (A datagram that probes a path is at least 1,200 bytes too, RFC 9000 §8.2.1.)
            // A datagram with an Initial is at least 1,200 bytes: this one travels alone, padded.
            payload += [UInt8](repeating: 0, count: max(0, capacity - payload.count))
        } else if index == 2, payload.count < capacity, payload.count >= capacity - Self.fullPacketSlack {
            // A packet of stream data that nearly fills its room is made exactly full (PADDING): runs of
            // equal 1,200-byte datagrams go to the kernel as one write (GSO, UDP_SEGMENT).
            payload += [UInt8](repeating: 0, count: capacity - payload.count)
        } else if payload.count < 4 {
            // Enough ciphertext after the packet number to sample for header protection.
            payload += [UInt8](repeating: 0, count: 4 - payload.count)
        }
        let packetNumber = spaces[index].nextPacketNumber
        spaces[index].nextPacketNumber += 1
        let header: [UInt8] =
            switch index {
            case 0, 1:
                QUICPacketHeader.long(
                    index == 0 ? .initial : .handshake, destination: destinationConnectionID, source: sourceConnectionID,
                    token: index == 0 ? retryToken ?? [] : [],
                    packetNumber: packetNumber, packetNumberLength: Self.packetNumberLength,
                    payloadLength: payload.count + QUICPacketProtection.tagLength
                )
            default:
                QUICPacketHeader.short(
                    destination: destinationConnectionID, packetNumber: packetNumber, packetNumberLength: Self.packetNumberLength, keyPhase: keyPhase
                )
            }
        guard let packet = try? protection.protect(header: header, payload: payload, packetNumber: packetNumber, packetNumberLength: Self.packetNumberLength)
        else { return nil }
        recovery.sent(
            QUICRecovery.SentPacket(
                number: packetNumber, time: clock(), ackEliciting: carried.contains { $0.isAckEliciting }, size: packet.count, frames: carried
            ),
            in: index
        )
        if index == 1, !sentHandshake {
            // A client drops its Initial keys when it first sends a Handshake packet (RFC 9001 §4.9.1).
            sentHandshake = true
            spaces[0].read = nil
            spaces[0].write = nil
            spaces[0].retransmit = []
            spaces[0].cryptoOut = []
            recovery.discard(space: 0)
        }
        return packet
    }

    /// Control frames that fit; an application's CONNECTION_CLOSE before 1-RTT becomes the transport's
    /// APPLICATION_ERROR (RFC 9000 §10.2.3: the reason may not leak before the handshake).
    private mutating func addControlFrames(to payload: inout [UInt8], capacity: Int, level index: Int) -> [QUICFrame] {
        var added: [QUICFrame] = []
        while let frame = pendingControlFrames.first {
            var frame = frame
            if index < 2, case .connectionClose(_, nil, _) = frame {
                frame = .connectionClose(errorCode: 0x0c, frameType: 0, reason: "")
            }
            let bytes = frame.encoded
            guard payload.count + bytes.count <= capacity else { break }
            payload += bytes
            added.append(frame)
            pendingControlFrames.removeFirst()
        }
        return added
    }

    /// Stream data within the stream's and the connection's limits, streams in the order they were
    /// opened.
    private mutating func addStreamFrames(to payload: inout [UInt8], capacity: Int) -> [QUICFrame] {
        var added: [QUICFrame] = []
        var index = 0
        while index < sendQueue.count {
            let id = sendQueue[index]
            // Taken out of the dictionary while it changes: a copy left there would make removing the
            // bytes sent copy the whole queue (an allocation of up to 256 KiB a packet, measured: 58,000
            // mmap/munmap pairs and 8 s of page faults for a 64 MB upload).
            guard var stream = streams.removeValue(forKey: id) else {
                sendQueue.remove(at: index)
                continue
            }
            guard !stream.finSent, !stream.outgoing.isEmpty || stream.finPending else {
                streams[id] = stream
                sendQueue.remove(at: index)
                continue
            }
            index += 1
            let room = capacity - payload.count - 24
            guard room > 0 else {
                streams[id] = stream
                return added
            }
            let allowed = min(
                UInt64(room), stream.sendLimit - min(stream.sendLimit, stream.sendOffset), peerMaxData - min(peerMaxData, dataSent)
            )
            let take = min(stream.outgoing.count, Int(allowed))
            let fin = stream.finPending && take == stream.outgoing.count
            guard take > 0 || fin else {
                streams[id] = stream
                continue
            }
            let frame = QUICFrame.stream(streamID: id, offset: stream.sendOffset, data: Array(stream.outgoing.prefix(take)), fin: fin)
            frame.encode(into: &payload)
            added.append(frame)
            stream.outgoing.removeFirst(take)
            stream.sendOffset += UInt64(take)
            dataSent += UInt64(take)
            stream.finSent = fin
            // A request stream whose answer is in as well is done.
            if !(id & 0x03 == 0x00 && fin && stream.finDelivered) { streams[id] = stream }
        }
        return added
    }
}
