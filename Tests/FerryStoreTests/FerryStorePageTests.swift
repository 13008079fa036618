import FerryCore
import FerryStore
import Foundation
import Testing

/// A view of every task reads a bounded page of them, unfinished first, and a session holds at most its
/// limit of tasks.
@Suite struct FerryStorePageTests {
    @Test func aPageHoldsTheUnfinishedFirstThenTheNewestFinished() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        for session in ["a", "b"] {
            try store.registerSession(session)
            for index in 1...4 { _ = try store.createTask(session: session, kind: .download, request: request("\(session)\(index)")) }
        }
        // a1-a4 and b1 finish; b2-b4 do not.
        for (session, identifier) in [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 1)] {
            try store.transition(session: session, identifier: identifier, to: .completed, event: (.didComplete, nil))
        }
        let (tasks, total) = try store.page(limit: 5)
        #expect(total == 8)
        #expect(tasks.count == 5)
        #expect(tasks.prefix(3).map { "\($0.session)\($0.taskIdentifier)" } == ["b2", "b3", "b4"])
        #expect(tasks.suffix(2).allSatisfy { $0.state == .completed })
        #expect(try store.page(limit: 2).tasks.map(\.state) == [.pending, .pending])
    }

    @Test func aSessionHoldsAtMostItsLimit() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let task = FerryStore.NewTask(kind: .download, request: request("x"))
        _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task, task])
        let error = #expect(throws: FerryStoreError.self) {
            _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task, task])
        }
        #expect(error?.isConflict == true)
        #expect(try store.tasks(session: "s").count == 2)
        _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task])
        #expect(try store.tasks(session: "s").count == 3)
    }

    /// Past the limit in identifiers issued, the session's tasks are counted: removed ones make room, and
    /// an identifier chosen far ahead refuses nothing by itself.
    @Test func aSessionThatIssuedMoreThanItsLimitCountsWhatItHolds() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let task = FerryStore.NewTask(kind: .download, request: request("x"))
        _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task, task, task])
        for identifier in 1...2 {
            try store.transition(session: "s", identifier: identifier, to: .completed, event: (.didComplete, nil))
        }
        _ = try store.removeFinishedTasks(finishedBefore: nil, session: "s")
        // Identifiers 1-3 issued, one task held: two more fit, a third does not.
        _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task, task])
        #expect(throws: FerryStoreError.self) {
            _ = try store.createTasks(registeringSession: true, session: "s", limit: 3, [task])
        }
        #expect(try store.tasks(session: "s").map(\.taskIdentifier) == [3, 4, 5])

        var chosen = task
        chosen.identifier = 1_000_000
        _ = try store.createTasks(registeringSession: true, session: "t", limit: 3, [chosen])
        _ = try store.createTasks(registeringSession: true, session: "t", limit: 3, [task, task])
        #expect(try store.tasks(session: "t").count == 3)
    }
}
