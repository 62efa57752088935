#!/usr/bin/env python3
"""Checks read_cache.py against the MSAL Python fixtures: for every `silent_queries` row of each
`*.expect.json` in FIXTURE_DIR, read_cache.py must answer what the row says MSAL Python answered
(hit with the secret, or a miss that tried the listed refresh tokens), and get_accounts() must list
the row's accounts. Prints one line per row; exits 1 on any difference.

Usage: check_fixtures.py FIXTURE_DIR
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_cache  # noqa: E402


def check(expect_path):
    expect = json.load(open(expect_path, encoding="utf-8"))
    cache_path = os.path.join(os.path.dirname(expect_path), expect["fixture"])
    queries = expect["silent_queries"]
    request = {
        "now_epoch": expect["now_epoch"],
        "domains": {"contoso.example": "aaaaaaaa-0000-4000-8000-00000000aaaa"},
        "apps": [{"client_id": queries[0]["client_id"], "authority": a}
                 for a in expect["get_accounts_by_authority"]],
        "queries": queries,
    }
    out = read_cache.read(cache_path, request)
    failures = 0
    for app, authority in zip(out["apps"], expect["get_accounts_by_authority"]):
        want = sorted(expect["get_accounts_by_authority"][authority], key=lambda a: a["home_account_id"])
        ok = app["accounts"] == want
        failures += not ok
        print("%s %s get_accounts(%s)" % ("ok  " if ok else "FAIL", expect["fixture"], authority))
    for row, got in zip(queries, out["queries"]):
        if row["expect"] == "hit":
            ok = got["source"] == "cache" and got["access_token"] == row["cached_secret_returned"]
        elif row["refresh_attempt"]:
            attempt = row["refresh_attempt"]
            ok = (got["source"] == "refresh_failed"
                  and got["refresh_tokens_sent"] == attempt["all_refresh_tokens_tried_in_order"]
                  and got["scope_sent"][0] == sorted(attempt["scope_sent"]))
        else:
            ok = got["access_token"] is None and not got["refresh_tokens_sent"]
        failures += not ok
        print("%s %s %s: %s" % ("ok  " if ok else "FAIL", expect["fixture"], row["name"],
                               json.dumps({k: got.get(k) for k in ("source", "access_token", "refresh_tokens_sent")})))
    return failures


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    failures = sum(check(p) for p in sorted(glob.glob(os.path.join(argv[1], "*.expect.json"))))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
