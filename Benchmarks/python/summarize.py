"""Summarizes a results file of Benchmarks/run as Markdown tables, and checks the targets of the
benchmarks issue (Docs/Performance.md lists them).

    python3 Benchmarks/python/summarize.py RESULTS.jsonl

Standard library only. Prints to standard output; exits 0 whatever the targets say (the file is
the record; the table says which targets are met).
"""

import json
import sys

SIZES = [10, 1000, 10000, 100000]
BACKENDS = ["in-memory", "sqlite", "encrypted-file", "json-file", "keyring"]
LOOKUP_CASES = [
    "silent.hit.exact", "silent.hit.subset", "main_actor.silent.hit.exact", "tokencache.hit.exact", "tokencache.hit.subset", "tokencache.miss",
    "cold_start.first_hit", "silent.miss_refresh", "silent.miss_refresh.sdk_share",
]


def duration(ns):
    if ns is None:
        return "-"
    if ns < 10_000:
        return f"{ns / 1000:.2f} µs"
    if ns < 10_000_000:
        return f"{ns / 1000:.0f} µs"
    if ns < 10_000_000_000:
        return f"{ns / 1_000_000:.1f} ms"
    return f"{ns / 1_000_000_000:.1f} s"


def main(path):
    header, cases, comparisons, probes = None, {}, {}, []
    with open(path) as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            line = json.loads(raw)
            if line.get("type") == "header":
                header = line
            elif line.get("type") == "probe":
                probes.append(line)
            elif line.get("type") == "comparison":
                comparisons[(line["name"], line["n"])] = line
            else:
                cases[(line["name"], line["backend"], line["n"])] = line

    def get(name, backend, n):
        return cases.get((name, backend, n))

    def median(name, backend, n):
        line = get(name, backend, n)
        return line["median_ns"] if line else None

    if header:
        print(f"Machine: {header['cpu_model']}, {header['cores']} cores, "
              f"{header['memory_bytes'] / 2**30:.0f} GiB, {header['kernel']}; {header['swift_version']}; "
              f"{header['build_configuration']} build of {header['git_commit'][:12]}; {header['date_utc']} "
              f"({header.get('mode', 'full')} run).")
        print()
    if probes:
        readings = "; ".join(
            f"{probe['at']}: {probe['memory_latency_ns']:.0f} ns per read from memory, "
            f"{probe['hash_ns']:.0f} ns per 48-byte hash"
            + (f", {probe['chase_2mib_ns']:.0f} / {probe['chase_4mib_ns']:.0f} / {probe['chase_8mib_ns']:.0f} ns "
               "per read within 2 / 4 / 8 MiB" if 'chase_8mib_ns' in probe else "")
            for probe in probes)
        print(f"Machine speed ({readings}).")
        print()

    sizes = [n for n in SIZES if any(key[2] == n for key in cases)]
    print("Median (p99) per call; peak RSS of the process for that backend and size.")
    print()
    print("| backend | case | " + " | ".join(f"n = {n:,}" for n in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for backend in BACKENDS:
        for name in LOOKUP_CASES:
            cells = []
            for n in sizes:
                line = get(name, backend, n)
                cells.append(f"{duration(line['median_ns'])} ({duration(line['p99_ns'])})" if line else "-")
            if any(cell != "-" for cell in cells):
                print(f"| {backend} | {name} | " + " | ".join(cells) + " |")
        rss = [get("silent.hit.exact", backend, n) for n in sizes]
        if any(rss):
            print(f"| {backend} | peak RSS | " + " | ".join(
                f"{line['peak_rss_bytes'] / 2**20:.0f} MiB" if line else "-" for line in rss) + " |")
    print()

    partition = [line for key, line in sorted(cases.items()) if key[0].startswith("partition.")]
    if partition:
        print("One account, one tenant, 1000 scope sets in its partition (n = 1000):")
        print()
        print("| case | median | p99 |")
        print("|---|---|---|")
        for line in partition:
            print(f"| {line['name']} | {duration(line['median_ns'])} | {duration(line['p99_ns'])} |")
        print()

    refresh = [line for key, line in sorted(cases.items()) if key[0].startswith(("refresh.", "http."))]
    if refresh:
        print("Refresh against the local provider on 127.0.0.1 (real HTTP through URLSession):")
        print()
        print("| case | median | p99 | refresh requests | slowest caller (median over rounds) |")
        print("|---|---|---|---|---|")
        for line in refresh:
            slowest = duration(line["slowest_caller_ns"]) if "slowest_caller_ns" in line else "-"
            print(f"| {line['name']} | {duration(line['median_ns'])} | {duration(line['p99_ns'])} | "
                  f"{line.get('refresh_requests', '-')} | {slowest} |")
        print()

    waits = [line for key, line in cases.items()
             if key[0].startswith("wait_") and key[0].endswith(".silent.miss_refresh.sdk_share")]
    if waits:
        print("The stubbed refresh's SDK share (n = 10) with a wait inside the transport, subtracted like a provider's time:")
        print()
        print("| wait | median | p99 |")
        print("|---|---|---|")
        order = {"none": 0, "spin": 1, "suspend": 2}
        def wait_key(line):
            kind, _, micros = line["name"][len("wait_"):].split(".")[0].partition("_")
            return (int(micros or 0), order.get(kind, 3))
        for line in sorted(waits, key=wait_key):
            kind, _, micros = line["name"][len("wait_"):].split(".")[0].partition("_")
            label = "none" if kind == "none" else f"{kind} {int(micros) / 1000:g} ms"
            print(f"| {label} | {duration(line['median_ns'])} | {duration(line['p99_ns'])} |")
        print()

    if comparisons:
        print("Side by side with MSAL Python (same cache contents, same lookups, network stubbed in process):")
        print()
        print("| case | n | swift-msal (in memory) | MSAL Python | ratio |")
        print("|---|---|---|---|---|")
        for (name, n), line in sorted(comparisons.items()):
            print(f"| {name} | {n:,} | {duration(line['swift_median_ns'])} | {duration(line['msal_python_median_ns'])} "
                  f"| {line['ratio']:,}× |")
        print()

    # The targets of the issue.
    rows = []

    def target(text, value, ok, shown):
        rows.append((text, "met" if ok else ("not met" if value is not None else "not measured"), shown))

    for name in ["silent.hit.exact", "silent.hit.subset"]:
        value = median(name, "in-memory", 10)
        target(f"in-memory {name} ≤ 1 µs at n = 10", value, value is not None and value <= 1000, duration(value))
        value = median(name, "in-memory", 100000)
        target(f"in-memory {name} ≤ 2 µs at n = 100k", value, value is not None and value <= 2000, duration(value))
        value = median("partition." + name, "in-memory", 1000)
        target(f"in-memory {name}, 1000 scope sets in one partition ≤ 10 µs", value,
               value is not None and value <= 10000, duration(value))
    for name, minimum in [("silent.hit.exact", 20), ("silent.hit.subset", 1000)]:
        line = comparisons.get((name, 10000))
        ratio = line["ratio"] if line else None
        target(f"{name} vs MSAL Python at n = 10k ≥ {minimum}×", ratio, ratio is not None and ratio >= minimum,
               f"{ratio:,}×" if ratio is not None else "-")
    shares = [median("silent.miss_refresh.sdk_share", "in-memory", n) for n in sizes]
    worst = max((s for s in shares if s is not None), default=None)
    target("a miss that refreshes, SDK share ≤ 100 µs at every n (in memory, network stubbed)", worst,
           worst is not None and worst <= 100_000, "worst " + duration(worst) + " (" +
           ", ".join(f"{n:,}: {duration(s)}" for n, s in zip(sizes, shares)) + ")")
    value = median("refresh.sdk_share", "in-memory", 1)
    target("one refresh against the local provider, SDK share ≤ 100 µs", value,
           value is not None and value <= 100_000, duration(value))
    value = median("silent.hit.exact", "sqlite", 100000)
    target("SQLite warm hit ≤ 30 µs at n = 100k", value, value is not None and value <= 30_000, duration(value))
    value = median("cold_start.first_hit", "encrypted-file", 10000)
    target("encrypted file, 10k tokens: open + decrypt + first hit ≤ 50 ms", value,
           value is not None and value <= 50_000_000, duration(value))
    line = get("refresh.concurrent.1000", "in-memory", 1)
    requests = line.get("refresh_requests") if line else None
    target("1000 concurrent silent calls on an expired token: exactly 1 refresh request", requests,
           requests == 1, str(requests) if requests is not None else "-")
    line = get("silent.hit.exact", "in-memory", 100000)
    rss = line["peak_rss_bytes"] if line else None
    target("100k tokens in memory ≤ 150 MB peak RSS", rss, rss is not None and rss <= 150_000_000,
           f"{rss / 1e6:.0f} MB" if rss else "-")
    keyring = median("silent.hit.exact", "keyring", 1000) or median("silent.hit.exact", "keyring", 10)
    rows.append(("keyring hit: reported", "reported", duration(keyring)))

    if header.get("mode") == "smoke":
        print("A smoke run measures each case once at the smallest size, to show that every case runs;")
        print("its figures are not medians and say nothing about the targets (judge those on a full run).")
        print()
    print("| target | status | measured |")
    print("|---|---|---|")
    for text, status, shown in rows:
        print(f"| {text} | {status} | {shown} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py RESULTS.jsonl")
    main(sys.argv[1])
