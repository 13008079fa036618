// swift-tools-version:6.1
// Programs that show Ferry's library at work, each tested against ferry-testserver (README.md here).
// A package of its own, so that the main build stays the four tools: `swift build --package-path Examples`.
import PackageDescription

let package = Package(
    name: "FerryExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The Ferry package in the directory above, whatever that directory is called.
        .package(name: "Ferry", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "BackgroundDownloader",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "ResumableUploader",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "WebSocketChat",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "MetricsReader",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "ReportDownloader",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "AppleStyleDownloader",
            dependencies: [.product(name: "FerryFoundationNetworking", package: "Ferry")]
        ),
        // GettingStarted.md's snippets, built to prove they compile (never run: they reach example.com).
        .executableTarget(
            name: "GettingStartedAsync",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .executableTarget(
            name: "GettingStartedDelegate",
            dependencies: [.product(name: "Ferry", package: "Ferry")]
        ),
        .testTarget(
            name: "ExamplesTests",
            dependencies: [
                "AppleStyleDownloader", "BackgroundDownloader", "ResumableUploader", "WebSocketChat", "MetricsReader", "ReportDownloader",
                .product(name: "FerryTestServer", package: "Ferry"),
            ]
        ),
    ]
)
