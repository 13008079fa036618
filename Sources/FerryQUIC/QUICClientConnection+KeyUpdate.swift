/// Key updates this side starts (RFC 9001 §6): after ``QUICClientConnection/keyUpdateInterval``
/// packets in one phase, the 1-RTT keys move to the next phase both ways; the peer follows when it
/// sees the flipped Key Phase bit. (The peer's own updates are followed in the receive path.)
extension QUICClientConnection {
    /// Moves to the next key phase when it is due and allowed: the handshake is confirmed, and a packet
    /// of the current phase has been acknowledged (§6.1: never two updates in flight).
    mutating func updateKeysIfDue() {
        guard keyUpdateInterval > 0, recovery.handshakeConfirmed,
            spaces[2].nextPacketNumber >= keyPhaseFirstPacket + keyUpdateInterval,
            let acknowledged = recovery.largestAcknowledged(in: 2), acknowledged >= keyPhaseFirstPacket,
            let read = spaces[2].read, let write = spaces[2].write
        else { return }
        // Packets of the old phase still on their way in are opened with its keys.
        previousReadKeys = read
        spaces[2].read = QUICPacketProtection(keys: read.keys.updated())
        spaces[2].write = QUICPacketProtection(keys: write.keys.updated())
        keyPhase.toggle()
        keyPhaseFirstPacket = spaces[2].nextPacketNumber
        keyUpdatesStarted += 1
    }
}
