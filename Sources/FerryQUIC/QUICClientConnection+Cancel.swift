/// Ending a stream early (RFC 9000 §3.5, §4.5): this side stops reading (STOP_SENDING) and sending
/// (RESET_STREAM), and the bytes the server sent or will send on it still count for the
/// connection's flow control, so cancelled requests never strand the connection's window.
extension QUICClientConnection {
    /// The most cancelled streams whose final size is awaited (older ones are forgotten: their
    /// unaccounted bytes are at most a stream window each, and the window grows past them anyway).
    static let cancelledLimit = 1_000

    /// Ends `streamID` both ways with the application's `errorCode` (HTTP/3: H3_REQUEST_CANCELLED,
    /// 0x10c); what it had received counts as read. The datagrams to send.
    public mutating func cancel(stream streamID: UInt64, errorCode: UInt64) -> [[UInt8]] {
        guard let stream = streams.removeValue(forKey: streamID), !isClosed else { return [] }
        if !stream.finSent {
            pendingControlFrames.append(.resetStream(streamID: streamID, errorCode: errorCode, finalSize: stream.sendOffset))
        }
        if !stream.finDelivered {
            pendingControlFrames.append(.stopSending(streamID: streamID, errorCode: errorCode))
            cancelled[streamID] = stream.highestReceived
            if cancelled.count > Self.cancelledLimit, let oldest = cancelled.keys.min() { cancelled[oldest] = nil }
        }
        dataConsumed += stream.highestReceived - min(stream.consumed, stream.highestReceived)
        return flush()
    }

    /// Bytes for a cancelled stream up to `end` (its final size when `final`): counted as received and
    /// read at once. False when the stream is not one this side cancelled.
    mutating func absorbCancelled(_ streamID: UInt64, upTo end: UInt64, final: Bool) -> Bool {
        guard let seen = cancelled[streamID] else { return false }
        if end > seen {
            dataReceived += end - seen
            dataConsumed += end - seen
        }
        if final { cancelled[streamID] = nil } else { cancelled[streamID] = max(seen, end) }
        return true
    }
}
