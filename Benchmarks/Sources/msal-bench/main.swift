import BenchmarkSupport
import Foundation

// msal-bench: swift-msal's benchmarks. One JSON line per case on stdout; progress on stderr.
//
//   msal-bench header [--mode full|smoke]
//   msal-bench probe [--at LABEL]      the machine's memory latency and hashing speed right now
//   msal-bench lookup --backend B --n N [--tenants T] [--scope-sets S] [--secret-length L] [--label L]
//                     [--only facade,cold,raw,miss-refresh] [--stub-wait spin:US|suspend:US] [--smoke]
//   msal-bench refresh [--only single,other-writer,noop,concurrent] [--smoke]
//   msal-bench fixture --n N --out DIR [--lookups K]
//
// Backends: in-memory, sqlite, encrypted-file, json-file, keyring (needs a D-Bus session with a
// Secret Service: scripts/lib/keyring-session.sh). Release builds only.

refuseDebugBuild()

func usage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("msal-bench: \(message)\nusage: msal-bench header|probe|lookup|refresh|fixture [options] (see Benchmarks/Sources/msal-bench/main.swift)\n".utf8))
    exit(64)
}

/// The options each command takes (`smoke` is a flag; the others take a value).
let knownOptions: [String: Set<String>] = [
    "header": ["mode", "smoke"],
    "probe": ["at"],
    "lookup": ["backend", "n", "tenants", "scope-sets", "secret-length", "label", "only", "stub-wait", "smoke"],
    "refresh": ["only", "smoke"],
    "fixture": ["n", "out", "lookups"],
]

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { usage("no command") }
if ["--help", "-h", "help"].contains(command) {
    print("usage: msal-bench header|probe|lookup|refresh|fixture [options]; the options of each command are listed at the top of Benchmarks/Sources/msal-bench/main.swift, and Docs/Performance.md explains them")
    exit(0)
}
guard let allowed = knownOptions[command] else { usage("unknown command '\(command)'") }
arguments.removeFirst()
var values: [String: String] = [:]
var flags: Set<String> = []
var index = 0
while index < arguments.count {
    let argument = arguments[index]
    guard argument.hasPrefix("--") else { usage("unexpected argument '\(argument)'") }
    let name = String(argument.dropFirst(2))
    guard allowed.contains(name) else {
        usage("\(command) does not take --\(name) (it takes \(allowed.sorted().map { "--\($0)" }.joined(separator: ", ")))")
    }
    if name == "smoke" {
        flags.insert(name)
        index += 1
    } else {
        guard index + 1 < arguments.count else { usage("--\(name) needs a value") }
        values[name] = arguments[index + 1]
        index += 2
    }
}
@MainActor func integer(_ name: String, _ fallback: Int) -> Int {
    guard let text = values[name] else { return fallback }
    guard let value = Int(text), value > 0 else { usage("--\(name) must be a positive integer") }
    return value
}
let smoke = flags.contains("smoke")

do {
    switch command {
    case "header":
        let mode = values["mode"] ?? (smoke ? "smoke" : "full")
        guard ["full", "smoke"].contains(mode) else { usage("--mode takes full or smoke") }
        MachineDescription.printHeader(mode: mode)
    case "probe":
        MachineProbe.printProbe(at: values["at"] ?? "now")
    case "lookup":
        var options = LookupOptions()
        guard let name = values["backend"], let backend = Backend(rawValue: name) else {
            usage("--backend must be one of \(Backend.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        options.backend = backend
        options.n = integer("n", 10)
        options.tenants = integer("tenants", 4)
        options.scopeSets = integer("scope-sets", 10)
        options.secretLength = integer("secret-length", 64)
        options.label = values["label"]
        options.smoke = smoke
        if let wait = values["stub-wait"] {
            guard let parsed = StubWait(wait) else { usage("--stub-wait takes spin:MICROSECONDS or suspend:MICROSECONDS (0 to 1000000)") }
            options.stubWait = parsed
        }
        if let only = values["only"] {
            let groups = Set(only.split(separator: ",").map(String.init))
            let known: Set = ["facade", "cold", "raw", "miss-refresh"]
            guard groups.isSubset(of: known) else { usage("--only takes \(known.sorted().joined(separator: ","))") }
            options.facade = groups.contains("facade")
            options.cold = groups.contains("cold")
            options.raw = groups.contains("raw")
            options.missRefresh = groups.contains("miss-refresh")
        }
        try await LookupBench(options: options).run()
    case "refresh":
        var bench = RefreshBench(smoke: smoke)
        if let only = values["only"] {
            let groups = Set(only.split(separator: ",").map(String.init))
            let known = RefreshBench.allGroups
            guard groups.isSubset(of: known) else { usage("--only takes \(known.sorted().joined(separator: ","))") }
            bench.groups = groups
        }
        try await bench.run()
    case "fixture":
        guard let out = values["out"] else { usage("fixture needs --out DIR") }
        try Fixture(n: integer("n", 10), directory: out, lookups: integer("lookups", 20_000)).run()
    default:
        usage("unknown command '\(command)'")
    }
} catch {
    FileHandle.standardError.write(Data("msal-bench \(command): FAILED: \(error)\n".utf8))
    exit(1)
}
