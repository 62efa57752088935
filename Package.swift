// swift-tools-version: 6.2
// swift-msal: the Microsoft Authentication Library (MSAL) for Swift on Linux.
import PackageDescription

let package = Package(
    name: "swift-msal",
    products: [
        .library(name: "MSALCore", targets: ["MSALCore"]),
        .library(name: "MSALNetwork", targets: ["MSALNetwork"]),
        .library(name: "MSALCache", targets: ["MSALCache"]),
        .library(name: "MSALCacheSQLite", targets: ["MSALCacheSQLite"]),
        .library(name: "MSALCacheEncryptedFile", targets: ["MSALCacheEncryptedFile"]),
        .library(name: "MSALCacheKeyring", targets: ["MSALCacheKeyring"]),
        .library(name: "MSALWebAuth", targets: ["MSALWebAuth"]),
        .library(name: "MSAL", targets: ["MSAL"]),
        .library(name: "MSALTestSupport", targets: ["MSALTestSupport"]),
        .executable(name: "msal", targets: ["msal"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibsecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // simdjson (Debian's libsimdjson-dev) is a C++ library: this target's C++ file gives Swift a
        // C function that parses a JSON document into a flat list of values (see its header).
        .target(name: "CSimdJSON", linkerSettings: [.linkedLibrary("simdjson")]),
        .target(name: "MSALCore", dependencies: ["CSimdJSON"]),
        .target(name: "MSALNetwork", dependencies: ["MSALCore"]),
        .target(name: "MSALCache", dependencies: ["MSALCore"]),
        .target(name: "MSALCacheSQLite", dependencies: ["MSALCache", "CSQLite"]),
        .target(name: "MSALCacheEncryptedFile", dependencies: ["MSALCache", "COpenSSL"]),
        .target(name: "MSALCacheKeyring", dependencies: ["MSALCache", "CLibsecret"]),
        .target(name: "MSALWebAuth", dependencies: ["MSALCore", "MSALNetwork", "COpenSSL"]),
        .target(
            name: "MSAL",
            dependencies: [
                "MSALCore", "MSALNetwork", "MSALCache", "MSALCacheSQLite", "MSALCacheEncryptedFile", "MSALCacheKeyring",
                "MSALWebAuth",
            ]
        ),
        .target(
            name: "MSALTestSupport",
            dependencies: ["MSALCore", "MSALCache", "MSALWebAuth", "COpenSSL"]
        ),
        .executableTarget(
            name: "msal",
            dependencies: ["MSAL", "MSALCacheSQLite", "MSALCacheEncryptedFile", "MSALTestSupport"]
        ),
        // Test tooling, not a product: the worker processes of MSALCacheProcessTests.
        .executableTarget(
            name: "msal-cache-worker",
            dependencies: ["MSALCore", "MSALCache", "MSALCacheSQLite", "MSALCacheEncryptedFile", "MSALCacheKeyring", "CSQLite"]
        ),
        .testTarget(name: "MSALCoreTests", dependencies: ["MSALCore", "MSALTestSupport"]),
        .testTarget(name: "MSALNetworkTests", dependencies: ["MSALNetwork", "MSALTestSupport"]),
        .testTarget(
            name: "MSALCacheTests",
            dependencies: ["MSALCache", "MSALTestSupport"],
            exclude: ["Fixtures"]  // read from the source tree by path
        ),
        .testTarget(
            name: "MSALCacheSQLiteTests",
            dependencies: ["MSALCacheSQLite", "CSQLite", "MSALTestSupport"]  // CSQLite: a second connection holding the lock
        ),
        .testTarget(
            name: "MSALCacheEncryptedFileTests",
            dependencies: ["MSALCacheEncryptedFile", "MSALTestSupport"]
        ),
        .testTarget(
            name: "MSALCacheKeyringTests",
            dependencies: ["MSALCacheKeyring", "MSALTestSupport"]
        ),
        .testTarget(
            name: "MSALCacheProcessTests",
            // The worker is a dependency so the tests share its fixtures and backend list
            // (@testable import) and SwiftPM builds it before them.
            dependencies: ["msal-cache-worker", "MSALCore", "MSALCache", "MSALCacheSQLite", "MSALCacheEncryptedFile", "MSALCacheKeyring", "MSALTestSupport"]
        ),
        .testTarget(name: "MSALWebAuthTests", dependencies: ["MSALWebAuth", "MSALTestSupport"]),
        .testTarget(
            name: "MSALTests",
            dependencies: ["MSAL", "MSALCacheSQLite", "MSALCacheEncryptedFile", "MSALCacheKeyring", "MSALTestSupport"]
        ),
    ],
    cxxLanguageStandard: .cxx17  // simdjson's headers need C++17
)

// Shared settings, applied once to every target (as swift-log's Package.swift does).
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
