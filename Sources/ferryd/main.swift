import FerryDaemon

// Thin main: the daemon and its command line live in FerryDaemon (docs/ARCHITECTURE.md, docs/OPERATIONS.md).
await FerrydCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
