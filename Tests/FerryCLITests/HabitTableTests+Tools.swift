import FerryTestServer
import Foundation
import Testing

/// The wget and aria2 rows of docs/CLI.md's habit table, and the two about units and statuses.
extension HabitTableTests {
    static let wgetAndAria2Rows: [String: Check] = [
        "wget `-i FILE`, aria2 `-i FILE`": { cli, server, directory in
            try "\(server.url("/bytes/10"))\n".write(toFile: directory + "/list.txt", atomically: true, encoding: .utf8)
            let run = try await cli.run(["get", "-i", "list.txt"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("use --input-file list.txt"), "\(run.stderr)")
            #expect(files(directory) == ["list.txt"])
            let input = try await cli.run(["get", "-s", "--input-file", "list.txt"])
            #expect(input.status == 0, "\(input.stderr)")
            #expect(files(directory) == ["list.txt", "10"])
        },
        "wget `--tries N`": { cli, server, directory in
            let once = try await cli.run(["get", "-s", "--tries", "1", server.url("/bytes/10?fail=1&key=t1"), "-o", "t1"])
            #expect(once.status == 1)
            let twice = try await cli.run(["get", "-s", "--tries", "2", "--retry-delay", "0.01", server.url("/bytes/10?fail=1&key=t2"), "-o", "t2"])
            #expect(twice.status == 0, "\(twice.stderr)")
        },
        "wget `-c`": { cli, _, directory in
            refused(try await cli.run(["get", "-c", "http://127.0.0.1:1/file.bin"]), "use -C: ferry get -C URL", directory: directory)
        },
        "wget `-P DIR`/`--directory-prefix`, `--no-check-certificate`": { cli, server, directory in
            let run = try await cli.run(["get", "-s", "-P", "made/here", server.url("/bytes/10")])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: directory + "/made/here/10"))
            let help = try await cli.run(["get", "--help"])
            #expect(help.stdout.contains("--directory-prefix") && help.stdout.contains("--no-check-certificate"))
        },
        "wget `-O FILE`": { cli, server, directory in
            refused(
                try await cli.run(["get", "-O", "out.bin", server.url("/bytes/10")]),
                "-O is curl's --remote-name here", "use -o out.bin", directory: directory
            )
        },
        "wget's file names keep the URL's query (`4000?seed=1`)": { cli, server, directory in
            let run = try await cli.run(["get", "-s", server.url("/bytes/4000?seed=1")])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(files(directory) == ["4000"])
        },
        "aria2 `--dir DIR --out NAME`": { cli, server, directory in
            let missing = try await cli.run(["get", "-s", "--dir", "nodir", "--out", "n.bin", server.url("/bytes/10")])
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("--create-dirs"), "\(missing.stderr)")
            try FileManager.default.createDirectory(atPath: directory + "/d", withIntermediateDirectories: false)
            let run = try await cli.run(["get", "-s", "--dir", "d", "--out", "n.bin", server.url("/bytes/10")])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try fileSHA256(directory + "/d/n.bin") == bytesSHA256(10))
            // aria2's -d DIR is curl's --data here: refused rather than the directory's name sent as a body.
            let data = try await cli.run(["get", "-d", "d", server.url("/bytes/10")])
            #expect(data.status == 2)
            #expect(data.stderr.contains("use --dir d"), "\(data.stderr)")
            #expect(files(directory) == ["d"])
        },
        "aria2 `-x N`, `-j N`": { cli, server, directory in
            let run = try await cli.run([
                "get", "-s", "-x", "3", "-j", "2", server.url("/bytes/3000000?seed=1"), server.url("/bytes/3000001?seed=2"),
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try fileSHA256(directory + "/3000000") == bytesSHA256(3_000_000, seed: 1))
            #expect(try fileSHA256(directory + "/3000001") == bytesSHA256(3_000_001, seed: 2))
        },
        "aria2 `-s N` (splits)": { cli, server, directory in
            refused(
                try await cli.run(["get", "-s", "4", server.url("/bytes/10")]),
                "-s is curl's --silent here", "use -x 4", directory: directory
            )
        },
        "sizes": { cli, server, directory in
            // In: 1K is 1024 bytes a second; out: IEC units.
            let run = try await cli.run(["get", "--limit-rate", "1M", server.url("/bytes/3145728"), "-o", "z.bin"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("3.0 MiB"), "\(run.stderr)")
            let bad = try await cli.run(["get", "--limit-rate", "fast", server.url("/bytes/10")])
            #expect(bad.status == 2)
        },
        "exit statuses": { cli, server, directory in
            for (arguments, status) in [
                (["-o", "ok", server.url("/bytes/10")], 0), (["-o", "no", server.url("/status/503")], 1),
                (["--frobnicate", server.url("/bytes/10")], 2), (["-o", "missing/x", server.url("/bytes/10")], 4),
            ] as [([String], Int32)] {
                let run = try await cli.run(["get", "-s"] + arguments)
                #expect(run.status == status, "\(arguments): \(run.stderr)")
            }
        },
    ]
}
