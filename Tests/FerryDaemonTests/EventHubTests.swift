import FerryCore
@testable import FerryDaemon
import Foundation
import Testing

/// Who may attach to a session: one client at a time; a holder whose process is gone, or that is the
/// process attaching again, gives way.
@Suite struct EventHubTests {
    @Test func theSameProcessAttachingAgainReplacesItsEarlierStreamAndAnotherIsRefused() async throws {
        let hub = EventHub()
        let me = getpid()
        let (first, firstSignals) = try hub.attach(session: "s", pid: me)
        // Another living process (init) is refused while this one holds the session.
        #expect(throws: FerryError.self) { try hub.attach(session: "s", pid: 1) }
        // This process again (a session invalidated and made again before ferryd saw the old stream
        // close): it takes the session, and the earlier stream ends.
        let (second, _) = try hub.attach(session: "s", pid: me)
        #expect(second != first)
        var ended = true
        for await _ in firstSignals { ended = false }
        #expect(ended, "the earlier stream was finished without signals")
        #expect(hub.isAttached("s"))
        // The earlier attachment's late detach does not remove the new one.
        hub.detach(session: "s", id: first)
        #expect(hub.isAttached("s"))
        hub.detach(session: "s", id: second)
        #expect(!hub.isAttached("s"))
    }
}
