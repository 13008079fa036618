import NIOCore

/// One timer on an event loop for the timeouts of a connection's exchanges, set for the earliest moment
/// that matters and scheduled again only when it fires or must fire sooner: a timer per exchange (two or
/// three, scheduled and cancelled each time) was 8 of a small request's 96 allocations. Used by
/// ``HTTP1ConnectionHandler`` and ``HTTP2ClientHandler``, on their loop.
struct LoopWatchdog {
    private var scheduled: Scheduled<Void>?
    private var due = NIODeadline.distantFuture

    /// Makes the watchdog run `fire` by `due` (sooner if it already would).
    mutating func arm(_ due: NIODeadline, on loop: any EventLoop, _ fire: @escaping () -> Void) {
        guard scheduled == nil || due < self.due else { return }
        scheduled?.cancel()
        self.due = due
        scheduled = loop.assumeIsolated().scheduleTask(deadline: due) { fire() }
    }

    /// It fired (or is stopped): the next ``arm(_:on:_:)`` schedules it anew.
    mutating func reset() {
        scheduled?.cancel()
        scheduled = nil
        due = .distantFuture
    }
}
