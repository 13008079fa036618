import FerryCore
import Foundation
import Synchronization
import Testing
@testable import FerryEngine

@Suite struct HostConnectionLimiterTests {
    private final class Granted: Sendable {
        let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
    }

    private func key(_ text: String) -> HostConnectionLimiter.Key {
        HostConnectionLimiter.Key(URL(string: text)!)
    }

    @Test func anOriginIsItsLowerCasedPartsWithTheDefaultPort() {
        #expect(key("HTTP://Example.COM/a") == key("http://example.com:80/b"))
        #expect(key("https://example.com/") == key("https://example.com:443/"))
        #expect(key("https://example.com/") != key("http://example.com/"))
        #expect(key("http://example.com:8080/") != key("http://example.com/"))
    }

    @Test(.timeLimit(.minutes(1))) func aThirdExchangeWaitsForASlotOfTwo() async throws {
        let limiter = HostConnectionLimiter(limit: 2)
        let origin = key("http://example.com/")
        let first = try await limiter.acquire(origin: origin, priority: 0.5)
        let second = try await limiter.acquire(origin: origin, priority: 0.5)
        #expect(limiter.active(for: origin) == 2)
        let granted = Granted()
        let third = Task {
            let permit = try await limiter.acquire(origin: origin, priority: 0.5)
            granted.flag.store(true, ordering: .sequentiallyConsistent)
            return permit
        }
        // (Waits for the third to queue: an event, not a time.)
        while limiter.waiting(for: origin) == 0 { await Task.yield() }
        // Another origin is not held back meanwhile.
        let other = try await limiter.acquire(origin: key("http://other.example/"), priority: 0.5)
        other.release()
        #expect(!granted.isSet)
        first.release()
        let permit = try await third.value
        #expect(granted.isSet)
        #expect(limiter.active(for: origin) == 2)
        second.release()
        permit.release()
        #expect(limiter.active(for: origin) == 0)
    }

    @Test func idleOriginsAreDroppedWhenThereAreMany() async throws {
        let limiter = HostConnectionLimiter(limit: 6)
        let held = try await limiter.acquire(origin: key("http://held.example/"), priority: 0.5)
        for index in 0..<(HostConnectionLimiter.idleOriginsKept * 3) {
            let permit = try await limiter.acquire(origin: key("http://host\(index).example/"), priority: 0.5)
            permit.release()
            #expect(limiter.trackedOrigins <= HostConnectionLimiter.idleOriginsKept + 1)
        }
        // The origin still in use kept its count.
        #expect(limiter.active(for: key("http://held.example/")) == 1)
        held.release()
        #expect(limiter.active(for: key("http://held.example/")) == 0)
    }
}
