import FerryCLI

#if canImport(Glibc)
import Glibc
#endif

// A FIFO whose reader went away (`ferry get -o fifo`) makes write(2) fail with EPIPE, reported as an
// error, instead of killing the process with SIGPIPE.
signal(SIGPIPE, SIG_IGN)
await FerryCommand.runCommandLine()
