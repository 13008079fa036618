import FerryDaemon
import Foundation

// Thin main: the daemon itself lives in FerryDaemon and lands with the background sessions issue.
if CommandLine.arguments.dropFirst().contains("--version") {
    print(FerryDaemonInfo.version)
    exit(0)
}
FileHandle.standardError.write(
    Data("ferryd \(FerryDaemonInfo.version): the daemon is not built yet (background sessions issue); exiting.\n".utf8)
)
exit(69)  // EX_UNAVAILABLE
