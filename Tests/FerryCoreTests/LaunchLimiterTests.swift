import FerryCore
import Foundation
import Testing

@Suite struct LaunchLimiterTests {
    @Test func eachLaunchDoublesTheDelayUpToTheMaximum() {
        var limiter = LaunchLimiter(baseDelay: 1, maximumDelay: 5)
        #expect(limiter.earliestLaunch(now: 100) == 100)
        limiter.launched(at: 100)
        #expect(limiter.delay == 1)
        #expect(limiter.earliestLaunch(now: 100.2) == 101)
        limiter.launched(at: 101)
        #expect(limiter.delay == 2)
        #expect(limiter.earliestLaunch(now: 101) == 103)
        limiter.launched(at: 103)
        limiter.launched(at: 107)
        #expect(limiter.delay == 5)
    }

    @Test func theDelayResetsWhenTheClientAttachesByItselfOrAWholeDelayPasses() {
        var limiter = LaunchLimiter(baseDelay: 1, maximumDelay: 60)
        limiter.launched(at: 0)
        limiter.launched(at: 1)
        #expect(limiter.delay == 2)
        limiter.clientAttachedByItself()
        #expect(limiter.earliestLaunch(now: 1.5) == 1.5)
        limiter.launched(at: 2)
        limiter.launched(at: 3)
        #expect(limiter.delay == 2)
        // Next allowed at 5; nothing happened until 7 (a whole delay later): start over.
        limiter.launched(at: 7.5)
        #expect(limiter.delay == 1)
    }
}
