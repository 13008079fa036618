import Foundation
import Testing

@testable import FerryEngine

#if canImport(Glibc)
import Glibc
#endif

/// The one spawner: what the child gets (arguments, environment, directory, descriptors, session) and
/// what it does not (this process's other descriptors).
@Suite struct ProcessSpawnTests {
    /// Runs `/bin/sh -c script` as `configure` sets it up, with its standard output on a pipe; returns
    /// what it printed and its exit status.
    private func run(_ script: String, _ configure: (inout ProcessSpawn) -> Void = { _ in }) async throws -> (String, Int32) {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        // Close-on-exec: a child another test spawns meanwhile must not hold the write end open (the
        // read would wait for that child's end; one run waited 23 s). (Glibc's module has no pipe2.)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var spawn = ProcessSpawn("/bin/sh", arguments: ["-c", script])
        spawn.standardOutput = .descriptor(ends[1])
        configure(&spawn)
        let pid = try spawn.start()
        close(ends[1])
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let output = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
                continuation.resume(returning: (output, ProcessSpawn.reap(pid)))
            }
        }
    }

    @Test func theChildGetsItsArgumentsEnvironmentAndDirectoryAndNothingElse() async throws {
        let (output, status) = try await run("echo \"$GREETING\"; pwd; echo \"${HOME:-no home}\"; exit 7") {
            $0.environment = ["GREETING": "hello there", "PATH": "/usr/bin:/bin"]
            $0.directory = "/tmp"
        }
        #expect(output == "hello there\n/tmp\nno home\n")
        #expect(status == 7)
    }

    @Test func noOtherDescriptorOfThisProcessIsInheritedButThePassedOnes() async throws {
        // A descriptor without close-on-exec, as a listening socket or a database could be.
        let open = Glibc.open("/dev/null", O_RDONLY)
        #expect(open > 2)
        defer { close(open) }
        let (listing, _) = try await run("ls /proc/self/fd")
        let descriptors = Set(listing.split(separator: "\n").compactMap { Int32($0) })
        // 0, 1, 2, and the one ls opens to read the directory.
        #expect(!descriptors.contains(open), "\(descriptors)")
        #expect(descriptors.subtracting([0, 1, 2]).count <= 1, "\(descriptors)")

        let (passed, _) = try await run("readlink /proc/self/fd/3") { $0.passing = [open] }
        #expect(passed == "/dev/null\n")
    }

    @Test func standardErrorCanFollowStandardOutputAndInputIsNull() async throws {
        let (output, _) = try await run("echo to-error >&2; cat; echo done") { $0.standardError = .standardOutput }
        #expect(output == "to-error\ndone\n")
    }

    @Test func aNewSessionLeavesThisOnesAndAnOwnGroupLeadsItself() async throws {
        // Fields 5 and 6 of /proc/self/stat (after the command's name): process group and session.
        let (inSession, _) = try await run("cut -d' ' -f5,6 /proc/$$/stat; echo $$") { $0.newSession = true }
        let lines = inSession.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first == "\(lines.last!) \(lines.last!)", "the child leads its group and session: \(inSession)")
        let (grouped, _) = try await run("cut -d' ' -f5,6 /proc/$$/stat; echo $$") { $0.ownProcessGroup = true }
        let parts = grouped.split(separator: "\n")
        let ids = parts.first?.split(separator: " ") ?? []
        #expect(ids.first.map(String.init) == parts.last.map(String.init), "its own group: \(grouped)")
        #expect(ids.last.map(String.init) != parts.last.map(String.init), "in this process's session: \(grouped)")
    }

    @Test func aProgramThatCannotStartSaysWhy() {
        do {
            _ = try ProcessSpawn("/nonexistent/program").start()
            Issue.record("a missing program started")
        } catch {
            #expect(error.code == ENOENT)
            #expect(error.description == "cannot start /nonexistent/program: No such file or directory")
        }
        var searched = ProcessSpawn("sh", arguments: ["-c", "exit 3"])
        searched.searchesPath = true
        #expect((try? searched.start()).map(ProcessSpawn.reap) == 3)
    }
}
