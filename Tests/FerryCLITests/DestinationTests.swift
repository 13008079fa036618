import Crypto
import FerryCore
import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ferry get -o X` writes what X is: a device or FIFO is written through and stays what it was (the
/// machine-breaking `-o /dev/null` bug), a link is followed, and two downloads to one X never share a
/// part file. Devices are made with mknod in the test's own directory, never the machine's /dev/null.
@Suite struct DestinationTests {
    @Test(.enabled(if: SpecialFiles.canMakeDevices, "making a device node needs root with CAP_MKNOD"))
    func aCharacterDeviceStaysADevice() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try makeNullDevice(directory + "/null")
            let cli = CLIRunner(directory: directory)
            for extra in [[], ["-x", "4"], ["-C"]] {
                let run = try await cli.run(["get", server.url("/bytes/300000"), "-o", "null", "-q"] + extra)
                #expect(run.status == 0, "\(extra): \(run.stderr)")
                #expect(fileType(directory + "/null") == S_IFCHR, "\(extra)")
            }
            // Nothing beside it: no part file, no resume record.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["null"])
            // A checksum needs the bytes back: refused, and the device is untouched.
            let sum = try await cli.run(["get", server.url("/bytes/10"), "-o", "null", "--checksum", "sha256=" + String(repeating: "0", count: 64)])
            #expect(sum.status == 2, "\(sum.stderr)")
            #expect(sum.stderr.contains("not a regular file"))
            #expect(fileType(directory + "/null") == S_IFCHR)
        }
    }

    @Test func aFIFOsReaderGetsEveryByte() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let fifo = directory + "/pipe"
            try SpecialFiles.makeFIFO(fifo)
            // The reader opens first (a FIFO without one is refused at once, not waited for).
            let reader = try FIFOReader(fifo)
            let run = try await CLIRunner(directory: directory).run([
                "get", server.url("/bytes/2500000?throttle=20000000"), "-o", "pipe", "-q",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let received = await reader.bytes()
            #expect(received.count == 2_500_000)
            #expect(received == Data(DeterministicBytes(seed: 0).bytes(offset: 0, count: 2_500_000)))
            #expect(fileType(fifo) == S_IFIFO)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["pipe"])

            let alone = try await CLIRunner(directory: directory).run(["get", server.url("/bytes/10"), "-o", "pipe"])
            #expect(alone.status != 0)
            #expect(alone.stderr.contains("nothing is reading the FIFO"), "\(alone.stderr)")
            #expect(fileType(fifo) == S_IFIFO)
        }
    }

    @Test func devStdoutIsWrittenThrough() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // /dev/stdout → /proc/self/fd/1 → pipe:[…]: a "magic" link whose text is no path.
            let (child, out, err) = try CLIRunner(directory: directory).start([
                "get", server.url("/bytes/300000?seed=5"), "-o", "/dev/stdout", "-q",
            ])
            async let bytes = out.readToEndOffPool()
            async let errors = err.readToEndOffPool()
            let (received, message) = await (bytes, errors)
            child.waitUntilExit()
            #expect(child.terminationStatus == 0, "\(String(decoding: message, as: UTF8.self))")
            #expect(received == Data(DeterministicBytes(seed: 5).bytes(offset: 0, count: 300_000)))
            #expect(fileType("/dev/stdout", following: false) == S_IFLNK)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func aSymbolicLinkIsFollowed() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory + "/real", withIntermediateDirectories: true)
            try Data("old".utf8).write(to: URL(fileURLWithPath: directory + "/real/file"))
            try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "real/file")
            let run = try await CLIRunner(directory: directory).run(["get", server.url("/bytes/5000"), "-o", "link", "-q"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileType(directory + "/link", following: false) == S_IFLNK)
            #expect(try fileSHA256(directory + "/real/file") == bytesSHA256(5000))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/real") == ["file"])
        }
    }

    @Test func twoDownloadsToOneDestinationNeverMixTheirBytes() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            let size = 2_000_000
            // The first stalls after 1 MB (its first try only), holding its part file; the second starts
            // meanwhile, for other bytes (seed 1), and must not write into it.
            let slow = server.url("/bytes/\(size)?stall_after=1000000&stall_ms=60000&only_first=1&key=same")
            let first = try cli.start(["get", slow, "-o", "same.bin", "-q"])
            try await waitUntil("the first download has its part file") {
                FileManager.default.fileExists(atPath: directory + "/same.bin.ferry-part")
            }
            let second = try await cli.run(["get", server.url("/bytes/\(size)?seed=1"), "-o", "same.bin", "-q"])
            #expect(second.status == 4, "\(second.stderr)")
            #expect(second.stderr.contains("another download is writing"), "\(second.stderr)")
            #expect(second.stderr.contains("ferry"), "the holder is named: \(second.stderr)")
            kill(first.0.processIdentifier, SIGINT)
            let firstRun = try await cli.finish(first.0, first.1, first.2)
            #expect(firstRun.status == 130, "\(firstRun.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/same.bin"))
            // The first's part file is its own: continued, it ends as exactly its resource.
            let resumed = try await cli.run(["get", slow, "-o", "same.bin", "-q", "-C"])
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(try fileSHA256(directory + "/same.bin") == bytesSHA256(size))
        }
    }

    @Test(.enabled(if: SpecialFiles.canMakeDevices, "making a device node needs root with CAP_MKNOD"))
    func aBackgroundDownloadToADeviceLeavesTheDevice() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            let home = "/tmp/ferry-c-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let cli = CLIRunner(environment: ["FERRY_HOME": home], directory: directory)
            defer {
                try? FileManager.default.removeItem(atPath: directory)
                try? FileManager.default.removeItem(atPath: home)
            }
            try makeNullDevice(directory + "/null")
            try FileManager.default.createDirectory(atPath: directory + "/real", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "real/file")
            do {
                let device = try await cli.run(["get", "--background", server.url("/bytes/400000"), "-o", "null"])
                #expect(device.status == 0, "\(device.stderr)")
                let wait = try await cli.run(["wait", device.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(fileType(directory + "/null") == S_IFCHR)

                let link = try await cli.run(["get", "--background", server.url("/bytes/4000"), "-o", "link"])
                let linkWait = try await cli.run(["wait", link.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                #expect(linkWait.status == 0, "\(linkWait.stderr)")
                #expect(fileType(directory + "/link", following: false) == S_IFLNK)
                #expect(try fileSHA256(directory + "/real/file") == bytesSHA256(4000))

                // Two tasks of different resources to one destination: each has its own part file, and
                // whichever is delivered last, the file is exactly one resource's bytes.
                let a = try await cli.run(["get", "--background", server.url("/bytes/900000?throttle=3000000"), "-o", "same"])
                let b = try await cli.run(["get", "--background", server.url("/bytes/700000?seed=1"), "-o", "same"])
                for submitted in [a, b] {
                    let done = try await cli.run(["wait", submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
                    #expect(done.status == 0, "\(done.stderr)")
                }
                let digest = try fileSHA256(directory + "/same")
                let seed1 = SHA256.hash(data: DeterministicBytes(seed: 1).bytes(offset: 0, count: 700_000))
                    .map { String(format: "%02x", $0) }.joined()
                #expect(digest == bytesSHA256(900_000) || digest == seed1)
            } catch {
                _ = try? await cli.run(["daemon", "stop"])
                throw error
            }
            _ = try await cli.run(["daemon", "stop"])
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["null", "real", "link", "same"])
        }
    }

    /// The other files the user names: `-D` (the heads), `-c` (the cookie jar) and `--alt-svc` are
    /// written as what they are, as curl writes them: a device stays a device (`-D /dev/null` once
    /// turned the machine's /dev/null into a regular file), a FIFO's reader gets the bytes, and a link
    /// is followed (the link stays; the file it names gets the contents).
    @Test func headsCookiesAndAltSvcFilesAreWrittenAsWhatTheyAre() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let cli = CLIRunner(directory: directory)
            // Over https: an Alt-Svc is taken only from a secure origin.
            try server.certificates.trustRootPEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let url = "https://127.0.0.1:\(server.ports[.tls]!)/cookies/set?flavour=oat&header=Alt-Svc:h3%3D%22%3A443%22%3B%20ma%3D3600"
            // Links: each flag's file named through a link to a file of its own.
            for name in ["heads", "jar", "altsvc"] {
                try "# old\n".write(toFile: directory + "/\(name).real", atomically: true, encoding: .utf8)
                try FileManager.default.createSymbolicLink(atPath: directory + "/\(name).link", withDestinationPath: "\(name).real")
            }
            let linked = try await cli.run([
                "get", "-s", "--cacert", "ca.pem", url, "-o", "out", "-D", "heads.link", "-c", "jar.link", "--alt-svc", "altsvc.link",
            ])
            #expect(linked.status == 0, "\(linked.stderr)")
            for name in ["heads", "jar", "altsvc"] {
                #expect(fileType(directory + "/\(name).link", following: false) == S_IFLNK, "\(name)")
            }
            #expect(try String(contentsOfFile: directory + "/heads.real", encoding: .utf8).hasPrefix("HTTP/2 200"))
            #expect(try String(contentsOfFile: directory + "/jar.real", encoding: .utf8).contains("flavour\toat"))
            #expect(try String(contentsOfFile: directory + "/altsvc.real", encoding: .utf8).contains("h3"))
            // A FIFO: its reader gets the heads, and it stays a FIFO.
            try SpecialFiles.makeFIFO(directory + "/pipe")
            let reader = try FIFOReader(directory + "/pipe")
            let piped = try await cli.run(["get", "-s", "--cacert", "ca.pem", url, "-o", "out", "-D", "pipe"])
            #expect(piped.status == 0, "\(piped.stderr)")
            // (Checked before the reader is waited for: a FIFO replaced by a file never ends its read.)
            guard fileType(directory + "/pipe") == S_IFIFO else {
                Issue.record("-D replaced the FIFO")
                return
            }
            #expect(String(decoding: await reader.bytes(), as: UTF8.self).hasPrefix("HTTP/2 200"))
            // A device (in the test's own directory, never the machine's /dev/null).
            guard SpecialFiles.canMakeDevices else { return }
            try makeNullDevice(directory + "/null")
            // (-b null, curl's way to turn cookies on with none loaded, reads as empty.)
            let nulled = try await cli.run([
                "get", "-s", "--cacert", "ca.pem", url, "-o", "out", "-D", "null", "-b", "null", "-c", "null", "--alt-svc", "null",
            ])
            #expect(nulled.status == 0, "\(nulled.stderr)")
            #expect(fileType(directory + "/null") == S_IFCHR)
        }
    }
}

func makeNullDevice(_ path: String) throws { try SpecialFiles.makeNullDevice(path) }

func fileType(_ path: String, following: Bool = true) -> mode_t { SpecialFiles.type(of: path, following: following) }
