import NIOCore

/// Settings of the HTTP/2 connections (tests shorten the PING interval).
struct HTTP2Settings: Sendable {
    /// Bytes a stream may have in flight before the reader takes them (SETTINGS_INITIAL_WINDOW_SIZE and
    /// the stream window kept topped up). 64 KiB, the protocol's default, allows one window a round
    /// trip; this much keeps a path of 1 Gbit/s and 30 ms full, and is what a slow reader can leave
    /// buffered per stream.
    var streamWindow = 4 << 20
    /// The connection's window, shared by its streams.
    var connectionWindow = 16 << 20
    /// The largest frame the server may send (SETTINGS_MAX_FRAME_SIZE). DATA content is never
    /// gathered whole, so this bounds only what other frames may hold.
    var maximumFrameSize = 256 << 10
    /// How often an idle connection is checked with a PING.
    var pingInterval = TimeAmount.seconds(20)
    /// How long an idle connection is kept.
    var idleTimeout = TimeAmount.seconds(60)
}
