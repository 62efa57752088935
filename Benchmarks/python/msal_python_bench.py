"""MSAL Python's acquire_token_silent on the caches and lookups of swift-msal's benchmarks.

    msal_python_bench.py --fixture DIR [--swift-results FILE] [--smoke]

DIR holds msal_cache.json (the cache swift-msal wrote as MSAL JSON, MSAL Python's own format) and
bench.json (the shape's identifiers and the lookups the Swift cases made), from
`msal-bench fixture`. Prints one JSON line per case with the fields of the Swift lines
(backend "msal-python"), then, with --swift-results, one comparison line per case with the
in-memory Swift figure of the same case and size and the ratio (MSAL Python's median divided by
swift-msal's).

The network is stubbed in process (a fake http_client), as for the Swift "miss that refreshes":
MSAL Python's discovery requests and token requests are answered from prepared data, no socket.
"""

import argparse
import base64
import json
import os
import resource
import statistics
import sys
import time

import msal


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def unsigned_jwt(claims: dict) -> str:
    header = b64url(json.dumps({"alg": "none", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode())
    return f"{header}.{payload}."


class Response:
    def __init__(self, status_code: int, body: dict):
        self.status_code = status_code
        self.text = json.dumps(body)
        self.headers = {"Content-Type": "application/json"}

    def raise_for_status(self):
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}")


class StubHTTPClient:
    """Answers Entra's discovery documents and the refresh-token grant for the fixture's accounts,
    with a response prepared once per account, tenant and requested scopes (echoed as granted)."""

    def __init__(self, shape: dict, refresh_token_owners: dict, access_token_lifetime: int = 250):
        self.shape = shape
        self.owners = refresh_token_owners
        self.lifetime = access_token_lifetime
        self.token_requests = 0
        self.responses = {}

    def get(self, url, params=None, headers=None, **kwargs):
        env = self.shape["environment"]
        if "/discovery/instance" in url:
            return Response(200, {
                "tenant_discovery_endpoint": f"https://{env}/common/v2.0/.well-known/openid-configuration",
                "api-version": "1.1",
                "metadata": [{"preferred_network": env, "preferred_cache": env, "aliases": [env]}],
            })
        if url.endswith("/.well-known/openid-configuration"):
            tenant = url.split("/")[3]
            base = f"https://{env}/{tenant}"
            return Response(200, {
                "issuer": f"{base}/v2.0",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
            })
        return Response(404, {"error": "not_found"})

    def post(self, url, params=None, data=None, headers=None, **kwargs):
        if not url.endswith("/oauth2/v2.0/token"):
            return Response(404, {"error": "not_found"})
        self.token_requests += 1
        data = data or {}
        account = self.owners.get(data.get("refresh_token"))
        tenant_id = url.split("/")[3]
        if account is None or data.get("grant_type") != "refresh_token":
            return Response(400, {"error": "invalid_grant"})
        tenant = self.shape["tenants"].index(tenant_id)
        scope = data.get("scope", "")
        key = (account, tenant, scope)
        if key not in self.responses:  # prepared once, as the Swift stub does
            now = int(time.time())
            client_info = b64url(json.dumps({
                "uid": self.shape["account_object_ids"][account], "utid": self.shape["tenants"][0]}).encode())
            self.responses[key] = Response(200, {
                "token_type": "Bearer", "scope": scope, "expires_in": self.lifetime, "ext_expires_in": self.lifetime,
                "access_token": f"stub-access-token-{account}-{tenant}", "refresh_token": data["refresh_token"],
                "id_token": unsigned_jwt({
                    "aud": self.shape["client_id"], "iss": f"https://{self.shape['environment']}/{tenant_id}/v2.0",
                    "iat": now, "nbf": now, "exp": now + 86400, "name": f"User {account}",
                    "oid": self.shape["account_object_ids"][account] if tenant == 0 else f"guest-{account}-{tenant}",
                    "preferred_username": f"user{account}@contoso.example", "tid": tenant_id, "ver": "2.0",
                    "sub": f"sub-{account}-{tenant}",
                }),
                "client_info": client_info,
            })
        return self.responses[key]

    def close(self):
        pass


def peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(body, count: int, smoke: bool, budget_ns: int = 2_000_000_000, minimum: int = 5):
    """Runs body(i): one warm-up call (none in smoke mode), then as many timed calls as fit the budget."""
    if smoke:
        start = time.perf_counter_ns()
        body(0)
        return [time.perf_counter_ns() - start]
    start = time.perf_counter_ns()
    body(0)
    per_call = max(1, time.perf_counter_ns() - start)
    iterations = max(minimum, min(count, budget_ns // per_call))
    samples = []
    for index in range(iterations):
        start = time.perf_counter_ns()
        body(index + 1)
        samples.append(time.perf_counter_ns() - start)
    return samples


def result_line(name: str, n: int, samples: list) -> dict:
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * 99 // 100))
    total = sum(samples)
    return {
        "name": name, "backend": "msal-python", "n": n, "iterations": len(samples),
        "median_ns": int(statistics.median(ordered)), "p99_ns": ordered[rank - 1],
        "ops_per_s": round(len(samples) * 1e9 / total, 1) if total else 0.0,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def emit(line: dict):
    sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def run(fixture: str, smoke: bool) -> list:
    with open(os.path.join(fixture, "bench.json")) as f:
        shape = json.load(f)
    cache = msal.SerializableTokenCache()
    with open(os.path.join(fixture, "msal_cache.json")) as f:
        cache.deserialize(f.read())
    n = shape["n"]
    refresh_token_owners = {}
    home_to_index = {home: index for index, home in enumerate(shape["home_account_ids"])}
    for entry in cache._cache.get("RefreshToken", {}).values():
        refresh_token_owners[entry["secret"]] = home_to_index[entry["home_account_id"]]
    http = StubHTTPClient(shape, refresh_token_owners)
    apps = [
        msal.PublicClientApplication(
            shape["client_id"], authority=f"https://{shape['environment']}/{tenant}",
            token_cache=cache, http_client=http)
        for tenant in shape["tenants"]
    ]
    # The accounts as MSAL Python returns them (get_accounts reads the Account section).
    found = {account["home_account_id"]: account for account in apps[0].get_accounts()}
    accounts = [found[home] for home in shape["home_account_ids"]]
    scope_sets = shape["scope_sets"]
    lookups = shape["lookups"]
    count = 1 if smoke else len(lookups)
    lines = []

    def hit_case(name, scopes_of):
        def body(index):
            account, tenant, scope_set, subset = lookups[index % len(lookups)]
            result = apps[tenant].acquire_token_silent(scopes_of(scope_set, subset), accounts[account])
            if not result or result.get("token_source") != "cache":
                raise SystemExit(f"{name}: not a cache hit: {result and result.get('error')}")
        line = result_line(name, n, measure(body, count, smoke))
        emit(line)
        lines.append(line)

    hit_case("silent.hit.exact", lambda s, _: list(scope_sets[s]))
    hit_case("silent.hit.subset", lambda s, k: [scope_sets[s][k]])

    # A miss that refreshes: every access token now expires within the 5-minute buffer, and each
    # refresh answers with another such token.
    soon = str(int(time.time()) + 250)
    for entry in cache._cache.get("AccessToken", {}).values():
        entry["expires_on"] = soon
        entry["extended_expires_on"] = soon

    def refresh_body(index):
        account, tenant, scope_set, _ = lookups[index % len(lookups)]
        before = http.token_requests
        result = apps[tenant].acquire_token_silent(list(scope_sets[scope_set]), accounts[account])
        if not result or result.get("token_source") != "identity_provider" or http.token_requests != before + 1:
            raise SystemExit(f"silent.miss_refresh: not a refresh: {result and result.get('error')}")

    line = result_line("silent.miss_refresh", n, measure(refresh_body, count, smoke, budget_ns=3_000_000_000, minimum=3))
    emit(line)
    lines.append(line)
    return lines


def compare(lines: list, swift_results: str):
    swift = {}
    with open(swift_results) as f:
        for raw in f:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if line.get("backend") == "in-memory" and "name" in line:
                swift[(line["name"], line["n"])] = line
    for line in lines:
        mine = swift.get((line["name"], line["n"]))
        if not mine or not mine["median_ns"]:
            continue
        emit({
            "type": "comparison", "name": line["name"], "n": line["n"],
            "swift_backend": "in-memory", "swift_median_ns": mine["median_ns"],
            "msal_python_version": msal.__version__, "msal_python_median_ns": line["median_ns"],
            "ratio": round(line["median_ns"] / mine["median_ns"], 1),
        })


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--swift-results")
    parser.add_argument("--smoke", action="store_true")
    arguments = parser.parse_args()
    lines = run(arguments.fixture, arguments.smoke)
    if arguments.swift_results:
        compare(lines, arguments.swift_results)


if __name__ == "__main__":
    main()
