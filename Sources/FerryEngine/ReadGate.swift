import NIOCore

/// A handler's pause on reading (the reader has enough waiting): NIO's read requests are held while
/// paused and the last one is passed on when reading resumes.
struct ReadGate {
    private(set) var paused = false
    private var readPending = false

    mutating func pause() { paused = true }

    /// A read request from the channel: passed on unless paused.
    mutating func read(_ context: ChannelHandlerContext) {
        if paused { readPending = true } else { context.read() }
    }

    /// Reading goes on: a request held while paused is passed on.
    mutating func resume(_ context: ChannelHandlerContext?) {
        guard paused else { return }
        paused = false
        if readPending, let context {
            readPending = false
            context.read()
        }
    }
}
