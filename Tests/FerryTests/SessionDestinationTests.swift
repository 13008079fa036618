import FerryTestServer
import Foundation
import Testing

@testable import Ferry

#if canImport(Glibc)
import Glibc
#endif

/// `Session.download(for:to:)` and `downloadTask(with:to:)`: only what was named is written — a device
/// or FIFO is written through, a link is followed, a file is replaced whole, one writer per destination.
@Suite struct SessionDestinationTests {
    @Test(.enabled(if: SpecialFiles.canMakeDevices, "making a device node needs root with CAP_MKNOD"))
    func aDeviceStaysADeviceAndAFIFOGetsEveryByte() async throws {
        try await withSession { server, session in
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let device = directory.appendingPathComponent("null")
            try SpecialFiles.makeNullDevice(device.path)
            var many = request(server.url("/bytes/600000?seed=3"))
            many.connections = 4
            let (location, response) = try await session.download(for: many, to: device)
            #expect(response.statusCode == 200)
            #expect(location.path == device.path)
            #expect(SpecialFiles.type(of: device.path) == S_IFCHR)

            let fifo = directory.appendingPathComponent("pipe")
            try SpecialFiles.makeFIFO(fifo.path)
            let reader = try FIFOReader(fifo.path)
            _ = try await session.download(for: request(server.url("/bytes/900000?seed=4")), to: fifo)
            #expect(await reader.bytes() == Data(DeterministicBytes(seed: 4).bytes(offset: 0, count: 900_000)))
            #expect(SpecialFiles.type(of: fifo.path) == S_IFIFO)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory.path)) == ["null", "pipe"])
        }
    }

    @Test func aLinkIsFollowedAndAnErrorStatusLeavesTheFile() async throws {
        try await withSession { server, session in
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let real = directory.appendingPathComponent("real.bin")
            try Data("old".utf8).write(to: real)
            let link = directory.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "real.bin")
            let (location, _) = try await session.download(for: request(server.url("/bytes/70000?seed=5")), to: link)
            #expect(location.path == real.path)
            #expect(SpecialFiles.type(of: link.path, following: false) == S_IFLNK)
            #expect(try sha256(ofFile: real.path) == expectedSHA256(70_000, seed: 5))

            await #expect(throws: FerryError.self) {
                _ = try await session.download(for: request(server.url("/status/404")), to: link)
            }
            #expect(try sha256(ofFile: real.path) == expectedSHA256(70_000, seed: 5))
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory.path)) == ["real.bin", "link"])
        }
    }

    @Test func twoDownloadsToOneDestinationNeverShareAPartFile() async throws {
        try await withSession { server, session in
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("same.bin")
            // The first is held after 1 MB until the gate opens, holding its part file while the second
            // tries (a 2.5 s stall once ended before a loaded machine got to the second).
            let slow = Task {
                try await session.download(
                    for: request(server.url("/bytes/2000000?seed=6&stall_after=1000000&gate=same")),
                    to: target
                )
            }
            try await eventually("the first download has its part file") {
                FileManager.default.fileExists(atPath: target.path + ".ferry-part")
            }
            do {
                _ = try await session.download(for: request(server.url("/bytes/1000000?seed=7")), to: target)
                Issue.record("the second download to one destination succeeded while the first was writing")
            } catch let error as FerryError {
                #expect(error.message.contains("another download is writing"), "\(error)")
            }
            server.openGate("same")
            _ = try await slow.value
            #expect(try sha256(ofFile: target.path) == expectedSHA256(2_000_000, seed: 6))
        }
    }

    @Test func aDelegateTaskLeavesItsDestinationInPlace() async throws {
        let recorder = Recorder()
        try await withSession(delegate: recorder) { server, session in
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("kept.bin")
            let task = session.downloadTask(with: request(server.url("/bytes/50000?seed=8")), to: target)
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error == nil)
            #expect(recorder.finishedFilePaths == [target.path])
            #expect(try sha256(ofFile: target.path) == expectedSHA256(50_000, seed: 8))
        }
    }
}
