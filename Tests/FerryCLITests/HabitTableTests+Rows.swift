import FerryTestServer
import Foundation
import Testing

/// The checks of docs/CLI.md's habit table, one per row, keyed by the row's first column.
extension HabitTableTests {
    static let curlRows: [String: Check] = [
        "curl `-o FILE`/`--output`, `-o -`, `-O`/`--remote-name`, `-J`, `-R`, `--create-dirs`, `-S`, `-#`, `-L`, `--max-redirs`, `-f`, `-s`, `-v`, `-i`, `-I`, `-D`, `-w`, `-H`, `-A`, `-e`, `-u`, `--netrc`, `-b`, `-c`, `-X`, `-d`, `--data-binary`, `-r`, `-C`, `-C -`, `--retry`, `--retry-delay`, `--max-time`, `--connect-timeout`, `--limit-rate`, `--compressed`, `-4`, `-6`, `-k`, `--cacert`, `--cert`, `--key`, `--pinnedpubkey`, `--resolve`, `--proxy`, `--proxy-user`, `--noproxy`, `--http1.1`, `--http2`, `-Z`, `--parallel-max`, `-T -` (as `put -`), `-F` (as `put --form`)":
            { cli, _, _ in
                // Every option the row names is one `get --help` lists (the side-by-side runs against
                // curl are CurlHabitsTests'); -T - and -F are put's.
                let get = try await cli.run(["get", "--help"]).stdout
                let row = documentedHabits.first ?? ""
                let options = row.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }
                    .compactMap { $0.element.split(separator: " ").first.map(String.init) }
                    .filter { $0.hasPrefix("-") && $0 != "-T" && $0 != "-F" }
                #expect(options.count > 40, "\(options)")
                for option in Set(options) {
                    let listed = get.split(separator: "\n").contains { line in
                        line.split(whereSeparator: { $0 == " " || $0 == "," }).contains { $0 == option }
                    }
                    #expect(listed, "`ferry get --help` does not list \(option)")
                }
                let put = try await cli.run(["put", "--help"]).stdout
                #expect(put.contains("--form"))
            },
        "curl `-L`": { cli, server, directory in
            let run = try await cli.run(["get", "-s", "-L", server.url("/redirect/2"), "-o", "r.txt"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(files(directory) == ["r.txt"])
        },
        "curl `-f`": { cli, server, directory in
            for arguments in [["-f"], []] {
                let run = try await cli.run(["get", "-s"] + arguments + [server.url("/status/404"), "-o", "e.html"])
                #expect(run.status == 1, "\(arguments): \(run.stderr)")
                #expect(run.stderr.contains("404"), "\(run.stderr)")
                #expect(files(directory).isEmpty, "nothing is saved, -f or not")
            }
        },
        "curl's order, the URL first (`curl URL -o FILE`)": { cli, server, directory in
            let first = try await cli.run([server.url("/bytes/500"), "-o", "u.bin", "-s"])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(try fileSHA256(directory + "/u.bin") == bytesSHA256(500))
            let options = try await cli.run(["-o", "v.bin", server.url("/bytes/500")])
            #expect(options.status == 2)
            #expect(options.stderr.contains("name the command first: ferry get URL [options]"), "\(options.stderr)")
        },
        "curl writes the body to stdout by default": { cli, server, directory in
            let run = try await cli.run(["get", "-s", server.url("/bytes/700")])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            #expect(try fileSHA256(directory + "/700") == bytesSHA256(700))
            let piped = try await cli.run(["get", "-s", server.url("/echo"), "-o", "-"])
            #expect(piped.stdout.hasPrefix("{"), "\(piped.stdout)")
            #expect(files(directory) == ["700"])
        },
        "curl `-q` (skip `.curlrc`)": { cli, server, directory in
            for (option, name) in [("--disable", "a.bin"), ("--no-config", "b.bin")] {
                let run = try await cli.run(["get", option, "-s", server.url("/bytes/10"), "-o", name])
                #expect(run.status == 0, "\(option): \(run.stderr)")
            }
            // -q is --quiet: a successful download writes nothing on stderr.
            let quiet = try await cli.run(["get", "-q", server.url("/bytes/3000000"), "-o", "q.bin"])
            #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        },
        "curl `-C -` (continue at the file's size)": { cli, server, directory in
            // A file of the right size but no record is not trusted: downloaded from the start.
            try Data(repeating: 0, count: 400).write(to: URL(fileURLWithPath: directory + "/c.bin"))
            for resume in [["-C", "-"], ["-C"]] {
                let run = try await cli.run(["get"] + resume + [server.url("/bytes/800"), "-o", "c.bin"])
                #expect(run.status == 0, "\(resume): \(run.stderr)")
                #expect(try fileSHA256(directory + "/c.bin") == bytesSHA256(800))
            }
        },
        "curl `-C OFFSET`": { cli, server, directory in
            refused(try await cli.run(["get", "-C", "100", server.url("/bytes/800")]), "-C takes no offset (100)", "-r 100-", directory: directory)
        },
        "curl `-s` without `-S` hides errors": { cli, server, directory in
            let run = try await cli.run(["get", "-s", server.url("/status/500"), "-o", "s.bin"])
            #expect(run.status == 1)
            #expect(run.stderr.contains("500"), "\(run.stderr)")
            let shown = try await cli.run(["get", "-s", "-S", server.url("/status/500"), "-o", "s.bin"])
            #expect(shown.status == 1 && shown.stderr.contains("500"))
        },
        "curl `-x PROXY`": { cli, server, directory in
            refused(
                try await cli.run(["get", "-x", "http://127.0.0.1:3128", server.url("/bytes/8")]),
                "not a proxy", "--proxy http://127.0.0.1:3128", directory: directory
            )
            let segmented = try await cli.run(["get", "-s", "-x", "4", server.url("/bytes/4000000"), "-o", "x.bin"])
            #expect(segmented.status == 0, "\(segmented.stderr)")
        },
        "curl `-w` unknown variable (a warning)": { cli, server, directory in
            refused(try await cli.run(["get", "-w", "%{nosuch}", server.url("/bytes/8")]), "unknown variable 'nosuch'", directory: directory)
        },
    ]
}
