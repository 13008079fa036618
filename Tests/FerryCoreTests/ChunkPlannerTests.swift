import FerryCore
import Testing

@Suite struct ChunkPlannerTests {
    private func options(inFlight: Int = 4) -> ChunkPlanner.Options {
        var options = ChunkPlanner.Options()
        options.probeSize = 100
        options.minimumChunkSize = 100
        options.maximumChunkSize = 10_000
        options.targetChunkSeconds = 1
        options.maximumChunksInFlight = inFlight
        options.maximumAttempts = 3
        return options
    }

    @Test func theProbeGoesAloneAndItsThroughputSizesTheRest() throws {
        var planner = ChunkPlanner(length: 100_000, options: options())
        let probe = try take(&planner)
        #expect(probe.offset == 0)
        #expect(probe.length == 100)
        #expect(planner.next() == nil)  // nothing else until the probe is back
        planner.succeeded(probe.index, seconds: 0.1)  // 1,000 bytes a second
        #expect(planner.throughput == 1000)
        var sizes: [Int64] = []
        while let chunk = planner.next() { sizes.append(chunk.length) }
        #expect(sizes == [1000, 1000, 1000, 1000])  // four in flight, each a second's worth
        #expect(planner.inFlightCount == 4)
    }

    @Test func chunksStayWithinBoundsAndShrinkToShareTheLastRound() throws {
        var planner = ChunkPlanner(length: 10_000, options: options(inFlight: 2))
        let probe = try take(&planner)
        planner.succeeded(probe.index, seconds: 0.0001)  // very fast: capped at the maximum
        var chunks: [ChunkPlanner.Chunk] = []
        while !planner.isComplete {
            var round: [ChunkPlanner.Chunk] = []
            while let chunk = planner.next() { round.append(chunk) }
            for chunk in round { planner.succeeded(chunk.index, seconds: 0.0001) }
            chunks += round
        }
        let all = planner.chunksInFileOrder
        #expect(all.first?.offset == 0)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.offset + $0.length == $1.offset })
        #expect(all.last.map { $0.offset + $0.length } == 10_000)
        #expect(all.allSatisfy { $0.length <= 10_000 })
        // Never a sliver below the minimum, except a file's own tail.
        #expect(all.dropLast().allSatisfy { $0.length >= 100 })
        // The first chunks after the probe share what was left between the two slots.
        #expect(all[1].length == (10_000 - 100 + 1) / 2)
    }

    @Test func aFailedChunkGoesToTheEndOfTheQueueAndGivesUpAfterItsAttempts() throws {
        var planner = ChunkPlanner(length: 1000, options: options(inFlight: 2))
        let probe = try take(&planner)
        planner.succeeded(probe.index, seconds: 1)  // 100 bytes a second: chunks of 100
        let first = try take(&planner)
        let second = try take(&planner)
        #expect(planner.failed(first.index) == .requeued)
        // New chunks come before the failed one.
        let third = try take(&planner)
        #expect(third.offset == second.offset + second.length)
        planner.succeeded(second.index, seconds: 1)
        planner.succeeded(third.index, seconds: 1)
        var seen: [Int] = []
        while let chunk = planner.next() {
            seen.append(chunk.index)
            planner.succeeded(chunk.index, seconds: 1)
            if chunk.index != first.index, planner.inFlightCount == 0, seen.count > 20 { break }
        }
        #expect(seen.last == first.index)
        #expect(planner.isComplete)

        var failing = ChunkPlanner(length: 10, options: options())
        let only = try take(&failing)
        #expect(failing.failed(only.index) == .requeued)
        #expect(failing.next()?.index == only.index)  // a failed probe is sent again
        #expect(failing.failed(only.index) == .requeued)
        _ = failing.next()
        #expect(failing.failed(only.index) == .exhausted)
    }

    @Test func anEmptyFileIsOneEmptyChunk() throws {
        var planner = ChunkPlanner(length: 0, options: options())
        let chunk = try take(&planner)
        #expect(chunk.length == 0)
        #expect(planner.next() == nil)
        planner.succeeded(chunk.index, seconds: 0)
        #expect(planner.isComplete)
    }

    @Test func storedPiecesAreNotPlannedAgainOnlyTheGapsBetweenThem() throws {
        // A restarted upload: the server holds 0..<1000 and 3000..<4000 of 5,000 bytes.
        var planner = ChunkPlanner(length: 5000, options: options(inFlight: 8), stored: [3000..<4000, 0..<1000])
        #expect(!planner.isComplete)
        #expect(planner.chunk(0).offset == 3000)  // numbered in the given order
        #expect(planner.chunk(1).offset == 0)
        let probe = try take(&planner)
        #expect(probe.index == 2)
        #expect(probe.offset == 1000)
        #expect(probe.length == 100)
        planner.succeeded(probe.index, seconds: 0.1)
        var sent: [ChunkPlanner.Chunk] = [probe]
        while !planner.isComplete {
            var round: [ChunkPlanner.Chunk] = []
            while let chunk = planner.next() { round.append(chunk) }
            for chunk in round { planner.succeeded(chunk.index, seconds: 0.1) }
            sent += round
        }
        // Sent: exactly the two gaps, no byte twice, none of the stored ones.
        var covered = Set<Int64>()
        for chunk in sent {
            for byte in chunk.offset..<(chunk.offset + chunk.length) { #expect(covered.insert(byte).inserted) }
        }
        #expect(covered == Set(Array(1000..<3000) + Array(4000..<5000)))
        // All chunks, in file order, tile the file.
        var position: Int64 = 0
        for chunk in planner.chunksInFileOrder {
            #expect(chunk.offset == position)
            position += chunk.length
        }
        #expect(position == 5000)
    }

    @Test func everyPieceStoredMeansNothingToSend() {
        var planner = ChunkPlanner(length: 300, options: options(), stored: [0..<200, 200..<300])
        #expect(planner.isComplete)
        #expect(planner.next() == nil)
        #expect(planner.chunksInFileOrder.map(\.length) == [200, 100])
    }

    @Test func piecesThatOverlapOrLieOutsideTheFileStartThePlanOver() throws {
        for stored: [Range<Int64>] in [[0..<200, 100..<300], [0..<100, 900..<1100], [50..<50]] {
            var planner = ChunkPlanner(length: 1000, options: options(), stored: stored)
            #expect(planner.chunksInFileOrder.isEmpty)
            let probe = try take(&planner)
            #expect(probe.offset == 0)
            #expect(probe.index == 0)
        }
    }
}

/// The planner's next chunk; a test failure when there is none.
private func take(_ planner: inout ChunkPlanner) throws -> ChunkPlanner.Chunk {
    let chunk = planner.next()
    return try #require(chunk)
}
