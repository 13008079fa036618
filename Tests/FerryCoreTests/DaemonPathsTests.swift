import FerryCore
import Testing

@Suite struct DaemonPathsTests {
    @Test func ferryHomeHoldsEverything() throws {
        let paths = try DaemonPaths(environment: [
            "FERRY_HOME": "/tmp/f", "XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/h",
        ])
        #expect(paths.socket == "/tmp/f/ferryd.sock")
        #expect(paths.stateDirectory == "/tmp/f")
        #expect(paths.database == "/tmp/f/ferry.sqlite")
        #expect(paths.partialDirectory.hasPrefix("/tmp/f/"))
    }

    @Test func xdgDirectoriesAreUsedOtherwise() throws {
        let paths = try DaemonPaths(environment: ["XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/h"])
        #expect(paths.socket == "/run/user/1/ferry/ferryd.sock")
        #expect(paths.stateDirectory == "/h/.local/state/ferry")
        let state = try DaemonPaths(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"])
        #expect(state.stateDirectory == "/s/ferry")
        #expect(state.socket == "/s/ferry/ferryd.sock")
    }

    @Test func socketOverrideAndLimits() throws {
        let paths = try DaemonPaths(environment: ["HOME": "/h", "FERRY_SOCKET": "/tmp/x.sock"])
        #expect(paths.socket == "/tmp/x.sock")
        #expect(throws: FerryError.self) { try DaemonPaths(environment: [:]) }
        let long = "/tmp/" + String(repeating: "d", count: 120)
        let error = #expect(throws: FerryError.self) { try DaemonPaths(environment: ["FERRY_HOME": long]) }
        #expect(error?.message.contains("FERRY_SOCKET") == true)
    }
}
