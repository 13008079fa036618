/// Connection IDs and migration (RFC 9000 §5.1, §9): the server's spare connection IDs kept (within
/// the limit this side announced), one of this side's issued, and a move to a new local address
/// probed with PATH_CHALLENGE on a connection ID not used on the old path.
extension QUICClientConnection {
    /// The active_connection_id_limit this side announces: how many of the server's IDs it keeps.
    static let connectionIDLimit: UInt64 = 4

    /// Whether ``migrate()`` can move the connection: the handshake is done, the server did not
    /// disable active migration, and it issued a connection ID not used yet (RFC 9000 §9.5).
    public var canMigrate: Bool { whyNotMigrate == nil }

    /// Why ``migrate()`` cannot move the connection now, in words; nil when it can.
    public var whyNotMigrate: String? {
        if !isHandshakeComplete || isClosed { return "the connection is not open" }
        if peerParameters?.disableActiveMigration ?? false { return "the server disabled migration (disable_active_migration)" }
        if spareConnectionID == nil { return "the server gave no spare connection ID" }
        return nil
    }

    private var spareConnectionID: UInt64? { peerConnectionIDs.keys.filter { $0 > destinationSequence }.min() }

    /// The connection moves to a new path (the owner sends the datagrams from its new local address):
    /// a fresh connection ID of the server's, the old one retired, a PATH_CHALLENGE in a datagram of
    /// 1,200 bytes (RFC 9000 §8.2.1), and the congestion controller and round-trip estimate started
    /// afresh (§9.4). Empty when it cannot (``canMigrate``).
    public mutating func migrate() -> [[UInt8]] {
        guard canMigrate, let next = spareConnectionID, let identifier = peerConnectionIDs[next] else { return [] }
        pendingControlFrames.append(.retireConnectionID(sequence: destinationSequence))
        peerConnectionIDs[destinationSequence] = nil
        peerResetTokens[destinationSequence] = nil
        destinationSequence = next
        destinationConnectionID = identifier
        var generator = SystemRandomNumberGenerator()
        let challenge = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        pathChallengeData = challenge
        pendingControlFrames.append(.pathChallenge(challenge))
        recovery.newPath()
        return flush()
    }

    /// A NEW_CONNECTION_ID from the server: kept with its stateless reset token, and those it
    /// retires retired.
    mutating func received(connectionID: [UInt8], sequence: UInt64, retirePriorTo: UInt64, resetToken: [UInt8]) throws(QUICError) {
        if peerConnectionIDs.isEmpty { peerConnectionIDs[0] = destinationConnectionID }
        guard retirePriorTo <= sequence else { throw .malformed("NEW_CONNECTION_ID retires past its own sequence number") }
        if sequence >= retiredBelow, peerConnectionIDs[sequence] == nil {
            peerConnectionIDs[sequence] = connectionID
            peerResetTokens[sequence] = resetToken
        }
        if retirePriorTo > retiredBelow {
            for old in peerConnectionIDs.keys.filter({ $0 < retirePriorTo }).sorted() {
                peerConnectionIDs[old] = nil
                peerResetTokens[old] = nil
                pendingControlFrames.append(.retireConnectionID(sequence: old))
            }
            retiredBelow = retirePriorTo
            if destinationSequence < retirePriorTo, let lowest = peerConnectionIDs.keys.min(), let replacement = peerConnectionIDs[lowest] {
                destinationSequence = lowest
                destinationConnectionID = replacement
            }
        }
        // More than the limit this side announced: CONNECTION_ID_LIMIT_ERROR (RFC 9000 §5.1.1).
        guard peerConnectionIDs.count <= Int(Self.connectionIDLimit) else {
            throw .malformed("the server issued more connection IDs than the \(Self.connectionIDLimit) allowed")
        }
    }

    /// Whether `datagram` is a stateless reset (RFC 9000 §10.3.1): a short-header packet of 21 bytes
    /// or more whose last 16 are the token of the server's connection ID in use. Checked for every
    /// datagram (a genuine packet ends that way with probability 2^-128), before any decryption.
    func isStatelessReset(_ datagram: [UInt8]) -> Bool {
        guard datagram.count >= 21, datagram[0] & 0xC0 == 0x40, let token = peerResetTokens[destinationSequence] else { return false }
        // Compared without an early exit, so the time taken says nothing of the token.
        var difference: UInt8 = 0
        for (a, b) in zip(datagram.suffix(16), token) { difference |= a ^ b }
        return difference == 0
    }

    /// A PATH_RESPONSE: the path is validated when it echoes the challenge.
    mutating func receivedPathResponse(_ data: [UInt8]) {
        guard let expected = pathChallengeData, data == expected else { return }
        pathChallengeData = nil
        validatedMigrations += 1
        events.append(.pathValidated)
    }

    /// One connection ID of this side's beyond the handshake's, so the server has a fresh one to
    /// answer a new path with (RFC 9000 §9.5).
    mutating func issueConnectionID() {
        var generator = SystemRandomNumberGenerator()
        let identifier = (0..<sourceConnectionID.count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        pendingControlFrames.append(.newConnectionID(sequence: 1, retirePriorTo: 0, connectionID: identifier, statelessResetToken: token))
    }
}
