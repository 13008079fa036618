import FerryTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ferryd over a real shaped link (issue 19): `Benchmarks/limits.sh --link` runs the test server, ferryd
/// and ferry in a network namespace of their own whose loopback the kernel shapes with tbf. Needs root
/// and iproute2; skipped with the reason otherwise.
@Suite struct RealLinkTests {
    static var unavailable: String? {
        if getuid() != 0 { return "needs root for a network namespace" }
        for tool in ["/usr/sbin/ip", "/usr/sbin/tc", "/usr/bin/python3"]
        where !FileManager.default.isExecutableFile(atPath: tool) && !FileManager.default.isExecutableFile(atPath: tool.replacingOccurrences(of: "/usr/sbin", with: "/sbin")) {
            return "\(tool) is missing (iproute2, python3)"
        }
        return nil
    }

    @Test func ferrydsLimitHoldsOnAShapedLinkAndANamespaceWithoutARouteIsOffline() async throws {
        if let reason = Self.unavailable {
            print("skipped: \(reason)")
            return
        }
        // A container may refuse new namespaces even to root.
        let probe = try ChildProcess.spawn(
            "/bin/sh",
            arguments: ["-c", "ip netns add ferry-probe-$$ && ip netns del ferry-probe-$$"],
            environment: ProcessInfo.processInfo.environment,
            directory: "/"
        )
        async let probeOut = probe.standardOutput!.readToEndOffPool()
        async let probeErr = probe.standardError!.readToEndOffPool()
        let refusal = await (probeOut, probeErr).1
        while probe.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        guard probe.terminationStatus == 0 else {
            print("skipped: cannot make a network namespace: \(String(decoding: refusal, as: UTF8.self))")
            return
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let bin = (ChildProcess.builtProduct("ferryd") as NSString).deletingLastPathComponent
        let child = try ChildProcess.spawn(
            "/bin/bash",
            arguments: [root.appendingPathComponent("Benchmarks/limits.sh").path, "--link", "32"],
            environment: ProcessInfo.processInfo.environment.merging(["BIN": bin]) { $1 },
            directory: root.path
        )
        async let out = child.standardOutput!.readToEndOffPool()
        async let err = child.standardError!.readToEndOffPool()
        let (output, errors) = await (String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        while child.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(child.terminationStatus == 0, "\(output)\n\(errors)")
        // The namespace has only its loopback: no default route, so ferryd says offline, and still runs
        // the tasks, whose host is this machine.
        #expect(output.contains("offline (no default route)"), "\(output)")
        func rate(_ label: String) -> Double? {
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(label) }),
                let figure = line.split(separator: "=").last?.split(separator: " ").first
            else { return nil }
            return Double(figure)
        }
        let link = try #require(rate("link only"), "\(output)")
        let limited = try #require(rate("ferry limit"), "\(output)")
        // The link (32 Mbit/s = 4 MB/s) is a ceiling the kernel keeps; ferryd's 1 MiB/s is one Ferry
        // keeps, start-up included in the time, so never above it by more than 5 %.
        #expect(limited <= 1.048_576 * 1.05, "\(output)")
        #expect(limited < link, "\(output)")
    }
}
