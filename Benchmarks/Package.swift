// swift-tools-version: 6.2
// swift-msal's benchmarks: plain executables (no benchmark package can be fetched), built in release
// mode only, that print one JSON line per case. Run them all with `Benchmarks/run`; see
// Docs/Performance.md.
import PackageDescription

let package = Package(
    name: "swift-msal-benchmarks",
    dependencies: [
        // `name:` keeps `package: "swift-msal"` working whatever the checkout's folder is called
        // (SwiftPM names a path dependency after its folder).
        .package(name: "swift-msal", path: "../"),
    ],
    targets: [
        // Timing, statistics, the JSON lines, the machine header and the cache shapes.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "MSALCore", package: "swift-msal"),
                .product(name: "MSALCache", package: "swift-msal"),
                .product(name: "MSALTestSupport", package: "swift-msal"),
            ]
        ),
        // One program, one process per (suite, backend, size) so that peak RSS is per size.
        .executableTarget(
            name: "msal-bench",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "MSAL", package: "swift-msal"),
                .product(name: "MSALCore", package: "swift-msal"),
                .product(name: "MSALNetwork", package: "swift-msal"),
                .product(name: "MSALCache", package: "swift-msal"),
                .product(name: "MSALCacheSQLite", package: "swift-msal"),
                .product(name: "MSALCacheEncryptedFile", package: "swift-msal"),
                .product(name: "MSALCacheKeyring", package: "swift-msal"),
                .product(name: "MSALTestSupport", package: "swift-msal"),
            ]
        ),
    ]
)

// The same settings as swift-msal's own targets.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
