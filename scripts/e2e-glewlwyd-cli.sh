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

bail() { echo "e2e-glewlwyd-cli.sh: $*" >&2; exit 1; }

[[ -x $MSAL_BIN ]] || bail "$MSAL_BIN is not an executable (run: swift build, or set MSAL_BIN)"
[[ -f $ENV_FILE ]] || bail "no $ENV_FILE (run: scripts/glewlwyd.sh start)"
command -v python3 >/dev/null 2>&1 || bail "python3 is needed to parse JSON"
set -a
# shellcheck disable=SC1090
. "$ENV_FILE"
set +a
for v in GLEWLWYD_ISSUER GLEWLWYD_CLIENT_ID GLEWLWYD_USERNAME GLEWLWYD_URL; do
  [[ -n ${!v:-} ]] || bail "$v missing from $ENV_FILE"
done
curl -fsS -o /dev/null --max-time 5 "$GLEWLWYD_ISSUER/.well-known/openid-configuration" 2>/dev/null \
  || bail "Glewlwyd does not answer at $GLEWLWYD_ISSUER (run: scripts/glewlwyd.sh start)"
# Only explicit options count in this test.
unset MSAL_AUTHORITY MSAL_CLIENT_ID MSAL_CACHE

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msal-e2e.XXXXXX")
LOGIN_PID=""
cleanup() {
  if [[ -n $LOGIN_PID ]] && kill -0 "$LOGIN_PID" 2>/dev/null; then
    kill "$LOGIN_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

PASSED=0
FAILED=0

# ---------------------------------------------------------------- helpers

# Hide anything that looks like a token: JWTs and long opaque strings.
redact() {
  sed -E -e 's#eyJ[A-Za-z0-9_-]*[.][A-Za-z0-9_-]*[.][A-Za-z0-9_-]*#<redacted>#g' \
    -e 's#[A-Za-z0-9_~+/-]{64,}=*#<redacted>#g'
}

# Print a file as "#   ..." diagnostics, redacted; JSON token fields are
# replaced by <redacted> before anything else.
diag_file() { # LABEL FILE
  [[ -s $2 ]] || { echo "#   $1: (empty)"; return 0; }
  echo "#   $1:"
  python3 - "$2" <<'EOF' | redact | head -n 20 | sed 's/^/#     /'
import json, sys
text = open(sys.argv[1], errors="replace").read()
def scrub(v):
    if isinstance(v, dict):
        return {k: ("<redacted>" if k in ("access_token", "id_token", "refresh_token") else scrub(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v
for line in text.splitlines():
    try:
        print(json.dumps(scrub(json.loads(line))))
    except ValueError:
        print(line)
EOF
}

check() { # CONDITION_STATUS WHAT  (status 0 = ok)
  if [[ $1 == 0 ]]; then
    echo "ok - $2"
    PASSED=$((PASSED + 1))
  else
    echo "not ok - $2"
    FAILED=$((FAILED + 1))
  fi
}

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

# Print one field (dotted path) of a JSON result file, or nothing.
jget() { # FILE PATH
  python3 - "$1" "$2" <<'EOF' 2>/dev/null || true
import json, sys
d = json.loads(open(sys.argv[1]).read())
for k in sys.argv[2].split("."):
    d = d[k]
print(d if not isinstance(d, (dict, list)) else json.dumps(d))
EOF
}

# msal SUBCOMMAND... with the common options; sets RC, OUT, ERR.
N=0
run_msal() { # CACHE ARGS...
  local cache=$1
  shift
  N=$((N + 1))
  OUT=$WORK/run$N.out
  ERR=$WORK/run$N.err
  RC=0
  timeout "$RUN_TIMEOUT" "$MSAL_BIN" "$@" "${COMMON[@]}" --cache "$cache" >"$OUT" 2>"$ERR" || RC=$?
}

expect_rc() { # EXPECTED WHAT
  local st=1
  [[ $RC == "$1" ]] && st=0
  check "$st" "$2 (exit $RC, expected $1)"
  if [[ $st != 0 ]]; then diag_file stdout "$OUT"; diag_file stderr "$ERR"; fi
  return "$st"
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
  problems=$(python3 - "$OUT" <<'EOF' 2>&1
import json, re, sys
try:
    d = json.loads(open(sys.argv[1]).read())
except Exception as e:
    print("stdout is not one JSON value (%s)" % type(e).__name__)
    sys.exit(1)
if not isinstance(d, dict):
    print("stdout is not a JSON object")
    sys.exit(1)
bad = []
def nonempty_str(v):
    return isinstance(v, str) and v != ""
for k in ("access_token", "token_type", "correlation_id"):
    if not nonempty_str(d.get(k)):
        bad.append(k)
if not (isinstance(d.get("expires_on"), str)
        and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", d["expires_on"])):
    bad.append("expires_on=%r (want ISO 8601 UTC, ...Z)" % (d.get("expires_on"),))
sc = d.get("scopes")
if not ((isinstance(sc, list) and "email" in sc) or (isinstance(sc, str) and "email" in sc.split())):
    bad.append("scopes=%r (want a list with email)" % (sc,))
if d.get("token_source") not in ("cache", "identity_provider"):
    bad.append("token_source=%r" % (d.get("token_source"),))
a = d.get("account")
if not isinstance(a, dict):
    bad.append("account (not an object)")
else:
    bad += ["account.%s" % k for k in ("identifier", "username", "environment") if not nonempty_str(a.get(k))]
if bad:
    print("missing or wrong: " + ", ".join(bad))
    sys.exit(1)
EOF
) || st=1
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
  local cache=$1 label=$2 user_code="" i st
  LOGIN_OK=1
  N=$((N + 1))
  OUT=$WORK/run$N.out
  ERR=$WORK/run$N.err
  "$MSAL_BIN" login --device-code "${COMMON[@]}" --cache "$cache" >"$OUT" 2>"$ERR" &
  LOGIN_PID=$!

  for ((i = 0; i < PROMPT_TIMEOUT * 5; i++)); do
    user_code=$(python3 - "$ERR" <<'EOF' 2>/dev/null || true
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and isinstance(d.get("user_code"), str) and d["user_code"]:
        print(d["user_code"])
        break
EOF
)
    [[ -n $user_code ]] && break
    kill -0 "$LOGIN_PID" 2>/dev/null || break
    sleep 0.2
  done
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

  for ((i = 0; i < LOGIN_TIMEOUT * 5; i++)); do
    kill -0 "$LOGIN_PID" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$LOGIN_PID" 2>/dev/null; then
    kill "$LOGIN_PID" 2>/dev/null || true
    echo "#   login still running after ${LOGIN_TIMEOUT} s; killed"
  fi
  RC=0
  wait "$LOGIN_PID" 2>/dev/null || RC=$?
  LOGIN_PID=""
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

COMMON=(--authority "$GLEWLWYD_ISSUER" --authority-type oidc --client-id "$GLEWLWYD_CLIENT_ID"
  --scope email --output json)
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
fi

# No token value may have reached the output of this script: checked by
# construction (only redacted diagnostics are printed).
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
