import FerryCore
import Foundation
import Logging
import Testing

@testable import FerryDaemon

/// ferryd's command line as values: flags over their variables, the configuration they make, and the
/// values refused (the binary's exit statuses are DaemonOperationsTests').
@Suite struct FerrydCommandTests {
    private let home = ["FERRY_HOME": "/tmp/ferry-command-tests"]

    @Test func flagsWinOverTheirVariables() throws {
        let command = try FerrydCommand.parse(["--log-level", "debug", "--prune-after=12h", "--metrics-address", "127.0.0.1:9466"])
        let settings = command.settings(home.merging(["FERRY_LOG_LEVEL": "error", "FERRY_PRUNE_AFTER": "off"]) { $1 })
        #expect(settings["FERRY_LOG_LEVEL"] == "debug")
        #expect(settings["FERRY_PRUNE_AFTER"] == "12h")
        #expect(settings["FERRY_METRICS_ADDRESS"] == "127.0.0.1:9466")
        #expect(settings["FERRY_HOME"] == "/tmp/ferry-command-tests")
        let configuration = try DaemonConfiguration(settings: settings)
        #expect(configuration.pruneAfter == 43_200.0)
        #expect(configuration.metricsAddress == "127.0.0.1:9466")
        #expect(try FerrydCommand.logLevel(settings["FERRY_LOG_LEVEL"]) == .debug)
    }

    @Test func variablesAloneConfigureTheDaemon() throws {
        let settings = try FerrydCommand.parse([]).settings(
            home.merging([
                "FERRY_MAX_TRANSFERS": "0", "FERRY_CHECKPOINT_BYTES": "4096", "FERRY_PRUNE_AFTER": "off",
                "FERRY_CONNECTIONS_PER_HOST": "3", "FERRY_RETRY_BASE_DELAY": "0.25",
            ]) { $1 }
        )
        let configuration = try DaemonConfiguration(settings: settings)
        #expect(configuration.maximumConcurrentTransfers == 0)
        #expect(configuration.checkpointBytes == 4096)
        #expect(configuration.pruneAfter == nil)
        #expect(configuration.maximumConnectionsPerHost == 3)
        #expect(configuration.retry.baseDelay == 0.25)
        #expect(try FerrydCommand.logLevel(nil) == .info)
    }

    @Test func valuesThatCannotBeUsedAreRefusedByName() throws {
        #expect(throws: FerrydCommand.UsageError.self) {
            _ = try DaemonConfiguration(settings: home.merging(["FERRY_PRUNE_AFTER": "soon"]) { $1 })
        }
        do {
            _ = try FerrydCommand.logLevel("loud")
            Issue.record("a log level that is none of the names was taken")
        } catch let error as FerrydCommand.UsageError {
            #expect(error.description.contains("the log level 'loud' is not one of trace"))
        }
        #expect(throws: (any Error).self) { _ = try FerrydCommand.parse(["--metrics"]) }
        #expect(throws: (any Error).self) { _ = try FerrydCommand.parse(["--log-level"]) }
    }
}
