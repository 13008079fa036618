import FerryCLI

await FerryCommand.runCommandLine()
