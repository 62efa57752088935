#!/usr/bin/env bash
# End-to-end check of the `msal` command-line tool against a running local
# Glewlwyd (scripts/glewlwyd.sh start), using only the tool as a script would.
#
#   scripts/glewlwyd.sh start && scripts/e2e-glewlwyd-cli.sh
#
# Environment: MSAL_BIN (default <repo>/.build/debug/msal), GLEWLWYD_DIR
# (where scripts/glewlwyd.sh keeps its env file, default <repo>/.build/glewlwyd).
# Prints "ok - ..." / "not ok - ..." per check, then "N passed, M failed";
# exits 1 if any check failed. Never prints a token.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MSAL_BIN=${MSAL_BIN:-$REPO_ROOT/.build/debug/msal}
GLEWLWYD_SH=$REPO_ROOT/scripts/glewlwyd.sh
ENV_FILE=${GLEWLWYD_DIR:-$REPO_ROOT/.build/glewlwyd}/env
RUN_TIMEOUT=60      # seconds for each foreground msal run
PROMPT_TIMEOUT=30   # seconds for the device-code prompt to appear
LOGIN_TIMEOUT=60    # seconds for login to finish once approved

E2E_NAME=e2e-glewlwyd-cli.sh
# shellcheck source=scripts/lib/e2e.sh
. "$REPO_ROOT/scripts/lib/e2e.sh"

e2e_load_env
# Only explicit options count in this test.
unset MSAL_AUTHORITY MSAL_CLIENT_ID MSAL_CACHE

e2e_workdir msal-e2e

# ---------------------------------------------------------------- helpers

# Run python on a result file; the script's exit status is the check's.
# Usage: pycheck FILE 'python expression over d (parsed JSON)'
pycheck() {
  python3 - "$1" "$2" <<'EOF' 2>/dev/null
import json, re, sys, datetime
try:
    d = json.loads(open(sys.argv[1]).read())
except Exception:
    sys.exit(1)
ok = eval("(" + sys.argv[2] + ")", {"re": re, "datetime": datetime, "d": d, "env": __import__("os").environ})
sys.exit(0 if ok else 1)
EOF
}

one_stderr_line() { # WHAT
  local lines st=1
  lines=$(grep -c '' "$ERR" || true)
  [[ $lines == 1 ]] && st=0
  check "$st" "$1 ($lines line(s) on stderr, expected 1)"
  [[ $st == 0 ]] || diag_file stderr "$ERR"
}

# The JSON result contract of login/token; names the fields that are wrong.
check_result_shape() { # WHAT
  local problems st=0
  problems=$(result_problems any) || st=1
  check "$st" "$1: stdout is one JSON object with the result fields"
  [[ $st == 0 ]] || { echo "#   $problems" | redact; diag_file stdout "$OUT"; }
}

check_source() { # EXPECTED WHAT
  local st=1 got
  got=$(jget "$OUT" token_source)
  [[ $got == "$1" ]] && st=0
  check "$st" "$2: token_source is $1 (got ${got:-nothing})"
}

# Device-code login in the background, approved through glewlwyd.sh.
# Sets LOGIN_OK=0 on success and leaves the result in OUT.
device_login() { # CACHE LABEL
  local cache=$1 label=$2 user_code="" st
  LOGIN_OK=1
  start_login "$cache" --device-code
  user_code=$(wait_stderr_field user_code)
  st=1
  [[ -n $user_code ]] && st=0
  check "$st" "$label: login --device-code prints a JSON prompt with user_code on stderr"
  if [[ $st != 0 ]]; then
    kill "$LOGIN_PID" 2>/dev/null || true
    wait "$LOGIN_PID" 2>/dev/null || true
    LOGIN_PID=""
    diag_file stdout "$OUT"
    diag_file stderr "$ERR"
    return 0
  fi

  st=0
  python3 - "$ERR" <<'EOF' 2>/dev/null || st=1
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and "user_code" in d:
        ok = (isinstance(d.get("verification_uri"), str) and d["verification_uri"].startswith("http")
              and isinstance(d.get("expires_in"), int) and d["expires_in"] > 0
              and isinstance(d.get("message"), str) and d["message"] != "")
        sys.exit(0 if ok else 1)
sys.exit(1)
EOF
  check "$st" "$label: the prompt line also has verification_uri, expires_in, message"
  [[ $st == 0 ]] || diag_file stderr "$ERR"

  st=0
  "$GLEWLWYD_SH" approve "$user_code" >"$WORK/approve$N.log" 2>&1 || st=1
  check "$st" "$label: glewlwyd.sh approve accepts the user code"
  [[ $st == 0 ]] || diag_file "glewlwyd.sh approve" "$WORK/approve$N.log"

  wait_login "$LOGIN_TIMEOUT"
  expect_rc 0 "$label: login exits 0 after approval" || return 0
  check_result_shape "$label: login"
  check_source identity_provider "$label: login"
  local at
  at=$(jget "$OUT" access_token)
  st=0
  [[ -n $at ]] && grep -qF -- "$at" "$ERR" && st=1
  check "$st" "$label: login does not print the access token on stderr"
  LOGIN_OK=0
}

# ---------------------------------------------------------------- checks

COMMON=(--authority "$GLEWLWYD_ISSUER" --authority-type oidc --client-id "$GLEWLWYD_CLIENT_ID" --output json)
SCOPES=(--scope email)
CACHE=$WORK/cache.sqlite
echo "# msal: $MSAL_BIN"
echo "# authority: $GLEWLWYD_ISSUER, client: $GLEWLWYD_CLIENT_ID, user: $GLEWLWYD_USERNAME"

run_msal "$CACHE" no-such-subcommand
expect_rc 2 "an unknown subcommand is a usage error" || true

run_msal "$CACHE" token
if expect_rc 3 "token on an empty cache asks for interaction"; then
  one_stderr_line "token on an empty cache reports one error line"
fi

device_login "$CACHE" "first login"
LOGIN_AT=""
IDENTIFIER=""
if [[ $LOGIN_OK == 0 ]]; then
  LOGIN_AT=$(jget "$OUT" access_token)
  IDENTIFIER=$(jget "$OUT" account.identifier)
  echo "# account: identifier=$IDENTIFIER username=$(jget "$OUT" account.username) environment=$(jget "$OUT" account.environment)"
fi

run_msal "$CACHE" token
if expect_rc 0 "token (new process) after login"; then
  check_result_shape "token"
  check_source cache "token after login"
  st=1
  [[ -n $LOGIN_AT && $(jget "$OUT" access_token) == "$LOGIN_AT" ]] && st=0
  check "$st" "token returns the access token from login"
fi

run_msal "$CACHE" token --force-refresh
if expect_rc 0 "token --force-refresh"; then
  check_result_shape "token --force-refresh"
  check_source identity_provider "token --force-refresh"
fi

run_msal "$CACHE" accounts
if expect_rc 0 "accounts"; then
  st=0
  export IDENTIFIER
  pycheck "$OUT" '
isinstance(d, list) and any(isinstance(a, dict) and (a.get("username") == env["GLEWLWYD_USERNAME"]
    or (env.get("IDENTIFIER") and a.get("identifier") == env["IDENTIFIER"])) for a in d)
' || st=1
  check "$st" "accounts prints a JSON array containing $GLEWLWYD_USERNAME"
  [[ $st == 0 ]] || diag_file stdout "$OUT"
fi

if [[ -n $IDENTIFIER ]]; then
  run_msal "$CACHE" logout --account "$IDENTIFIER"
  expect_rc 0 "logout --account <identifier>" || true
else
  check 1 "logout --account <identifier> (no identifier from login)"
fi

run_msal "$CACHE" token
if expect_rc 3 "token after logout asks for interaction"; then
  one_stderr_line "token after logout reports one error line"
fi

run_msal "$CACHE" accounts
if expect_rc 0 "accounts after logout"; then
  st=0
  pycheck "$OUT" 'isinstance(d, list) and len(d) == 0' || st=1
  check "$st" "accounts after logout is an empty JSON array"
  [[ $st == 0 ]] || diag_file stdout "$OUT"
fi

# A fresh login, then the provider revokes the refresh token.
CACHE2=$WORK/cache2.sqlite
device_login "$CACHE2" "second login"
st=0
"$GLEWLWYD_SH" revoke-refresh-tokens "$GLEWLWYD_USERNAME" >"$WORK/revoke.log" 2>&1 || st=1
check "$st" "glewlwyd.sh revoke-refresh-tokens"
[[ $st == 0 ]] || diag_file "glewlwyd.sh revoke-refresh-tokens" "$WORK/revoke.log"

run_msal "$CACHE2" token --force-refresh
if expect_rc 3 "token --force-refresh with a revoked refresh token asks for interaction"; then
  one_stderr_line "the revoked refresh token is reported on one error line"
  st=0; grep -q "Sign in with 'msal login'" "$ERR" || st=1
  check "$st" "the revoked refresh token's error says to sign in with msal login"
  [[ $st == 0 ]] || diag_file stderr "$ERR"
fi

# No token value may have reached the output of this script: checked by
# construction (only redacted diagnostics are printed).
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
