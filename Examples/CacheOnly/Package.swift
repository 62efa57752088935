// swift-tools-version: 6.0
// An example downstream package: a token cache on SQLite, built from swift-msal's cache layers only
// (MSALCore, MSALCache, MSALCacheSQLite). It links SQLite and the Swift runtime, not OpenSSL, libcurl
// or libsecret: scripts/check-examples.sh checks that with ldd.
import PackageDescription

let package = Package(
    name: "CacheOnly",
    products: [
        .executable(name: "cache-only", targets: ["CacheOnly"]),
    ],
    dependencies: [
        // `name:` makes `package: "swift-msal"` below work whatever the checkout's folder is called:
        // without it SwiftPM names a path dependency after its folder. An application would depend
        // on swift-msal by URL instead.
        .package(name: "swift-msal", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "CacheOnly",
            dependencies: [
                .product(name: "MSALCore", package: "swift-msal"),
                .product(name: "MSALCache", package: "swift-msal"),
                .product(name: "MSALCacheSQLite", package: "swift-msal"),
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
