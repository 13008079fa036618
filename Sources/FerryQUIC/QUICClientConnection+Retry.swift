/// A server's Retry (RFC 9000 §8.1.2, §17.2.5) and Version Negotiation (§6): the two packets a
/// client gets before any Initial that change how it starts.
extension QUICClientConnection {
    /// A Retry: accepted once, before any Initial from the server, when its integrity tag proves it
    /// answers this client's first Initial (RFC 9001 §5.8). The ClientHello goes again, to the
    /// connection ID the server chose, under Initial keys from it, carrying the server's token.
    /// Anything else is dropped, as the RFC says.
    mutating func receivedRetry(_ packet: [UInt8], header: QUICPacketHeader) {
        guard !sawServerInitial, retryToken == nil, !header.token.isEmpty, header.destinationConnectionID == sourceConnectionID,
            QUICRetry.isValid(packet, originalDestinationConnectionID: originalDestinationConnectionID)
        else { return }
        retryToken = header.token
        retrySourceConnectionID = header.sourceConnectionID
        destinationConnectionID = header.sourceConnectionID
        let initial = QUICInitialSecrets(destinationConnectionID: header.sourceConnectionID)
        spaces[0].write = QUICPacketProtection(keys: initial.client)
        spaces[0].read = QUICPacketProtection(keys: initial.server)
        // What the first Initials carried goes again; they are neither lost nor acknowledged, and the
        // time they took is no round-trip sample.
        let frames = recovery.abandon(space: 0).filter { if case .crypto = $0 { true } else { false } }
        spaces[0].retransmit = frames.sorted { first, second in
            if case .crypto(let a, _) = first, case .crypto(let b, _) = second { return a < b }
            return false
        } + spaces[0].retransmit
    }

    /// A Version Negotiation, before any other packet from the server: when it does not list version
    /// 1 (the only one this side speaks), the connection cannot be made, and says which the server
    /// speaks. One that lists 1, or comes late, is ignored (RFC 9000 §6.2).
    mutating func receivedVersionNegotiation(_ header: QUICPacketHeader) {
        guard !sawServerInitial, retryToken == nil, header.destinationConnectionID == sourceConnectionID,
            !header.supportedVersions.contains(1)
        else { return }
        let versions = header.supportedVersions.map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
        isClosed = true
        events.append(.closed(errorCode: 0, reason: "the server speaks QUIC version(s) \(versions), not version 1", byPeer: true))
    }
}
