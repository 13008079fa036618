// swift-tools-version: 6.0
// Peers for the benchmarks (Benchmarks/run.sh): the same work as `ferry-bench`, done with
// AsyncHTTPClient alone and with Foundation's URLSession (FoundationNetworking). Kept apart from the main
// package so the test command never builds them.
import PackageDescription

let package = Package(
    name: "FerryBenchmarkPeers",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
    ],
    targets: [
        .executableTarget(
            name: "ahc-bench",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "urlsession-bench"),
    ],
    // Small programs with top-level code shared by tasks: the Swift 5 mode keeps them plain.
    swiftLanguageModes: [.v5]
)
