// swift-tools-version:6.1
// Ferry: background transfers for Swift on Linux. See README.md and docs/ARCHITECTURE.md.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Ferry",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Ferry", targets: ["Ferry"]),
        .library(name: "FerryCore", targets: ["FerryCore"]),
        .library(name: "FerryFoundationNetworking", targets: ["FerryFoundationNetworking"]),
        .library(name: "FerryEngine", targets: ["FerryEngine"]),
        .library(name: "FerryTestServer", targets: ["FerryTestServer"]),
        .executable(name: "ferry", targets: ["FerryTool"]),
        .executable(name: "ferryd", targets: ["FerrydTool"]),
        .executable(name: "ferry-testserver", targets: ["FerryTestServerTool"]),
        .executable(name: "ferry-bench", targets: ["FerryBenchTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Documentation only: `swift package generate-documentation --target Ferry` (README).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: Layers (docs/ARCHITECTURE.md). Each target declares exactly what its files import
        // (contrib/check-package.py imports, run by PackageManifestTests).
        .target(
            name: "FerryCore",
            dependencies: [
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ],
            swiftSettings: swiftSettings
        ),
        // QUIC (RFC 9000, 9001, 9002) as value types: varints, packet numbers, keys, packet and header
        // protection, frames, headers. No I/O; the transport that sends them comes with HTTP/3 (issue 42).
        .target(
            name: "FerryQUIC",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                // For BoringSSL's QUIC interface (CNIOBoringSSL, which swift-nio-ssl ships).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FerryEngine",
            dependencies: [
                "CFerryZlib",
                "FerryCore",
                "FerryQUIC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FerryStore",
            dependencies: ["FerryCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FerryDaemon",
            dependencies: [
                "FerryCore",
                "FerryEngine",
                "FerryStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Ferry",
            dependencies: [
                "FerryCore",
                "FerryEngine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Apple's URLSession API on Ferry's engine (docs/FOUNDATION_NETWORKING.md).
        .target(
            name: "FerryFoundationNetworking",
            dependencies: ["Ferry", "FerryEngine", "FerryCore"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FerryCLI",
            dependencies: [
                .product(name: "NIOHTTP1", package: "swift-nio"),
                "Ferry",
                "FerryCore",
                "FerryEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Test server (a public library; also the ferry-testserver executable)
        .systemLibrary(name: "CFerryZlib", path: "Sources/CFerryZlib"),
        .target(
            name: "FerryTestServer",
            dependencies: [
                "CFerryZlib",
                "FerryCore",
                "FerryEngine",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "NIOResumableUpload", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Executables: thin mains over the libraries
        .executableTarget(
            name: "FerryTool",
            dependencies: ["FerryCLI"],
            path: "Sources/ferry",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FerrydTool",
            dependencies: ["FerryDaemon"],
            path: "Sources/ferryd",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FerryTestServerTool",
            dependencies: ["FerryTestServer", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/ferry-testserver",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "FerryBenchTool",
            dependencies: ["Ferry", "FerryEngine", .product(name: "NIOCore", package: "swift-nio")],
            path: "Sources/ferry-bench",
            swiftSettings: swiftSettings
        ),
        // The benchmark peer Benchmarks/Peers/Sources/urlsession-bench, the same source built against
        // FerryFoundationNetworking instead of FoundationNetworking (only the import differs).
        .executableTarget(
            name: "urlsession-bench-ferry",
            dependencies: ["FerryEngine", "FerryFoundationNetworking"],
            path: "Benchmarks/URLSessionOnFerry",
            swiftSettings: [.define("FERRY"), .swiftLanguageMode(.v5)]
        ),

        // MARK: Tests (mirror Sources/)
        .testTarget(
            name: "FerryCLITests",
            dependencies: [
                "FerryCLI",
                "Ferry",
                "FerryCore",
                "FerryTestServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The sameness suite: one set of URLSession programs built against FoundationNetworking and
        // against FerryFoundationNetworking (Tests/SamenessPrograms), compared by the tests.
        .target(
            name: "SamenessOnFoundation",
            path: "Tests/SamenessOnFoundation",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SamenessOnFerry",
            dependencies: ["FerryFoundationNetworking"],
            path: "Tests/SamenessOnFerry",
            swiftSettings: swiftSettings + [.define("FERRY")]
        ),
        .testTarget(
            name: "FerryFoundationNetworkingTests",
            dependencies: [
                "Ferry", "FerryFoundationNetworking", "SamenessOnFoundation", "SamenessOnFerry", "FerryTestServer",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryCoreTests",
            dependencies: ["FerryCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryQUICTests",
            dependencies: ["FerryQUIC", "FerryTestServer", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryStoreTests",
            dependencies: ["FerryCore", "FerryStore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryDaemonTests",
            dependencies: [
                "FerryCore",
                "FerryDaemon",
                "FerryStore",
                "FerryEngine",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryEngineTests",
            dependencies: [
                "FerryCore",
                "FerryEngine",
                "FerryQUIC",
                "FerryTestServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryTests",
            dependencies: [
                "Ferry",
                .product(name: "Logging", package: "swift-log"),
                "FerryEngine",
                "FerryStore",
                "FerryTestServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FerryTestServerTests",
            dependencies: [
                "FerryCore",
                "FerryTestServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
