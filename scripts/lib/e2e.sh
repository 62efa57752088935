# shellcheck shell=bash
# Shared helpers of the `msal` end-to-end scripts (scripts/e2e-glewlwyd-*.sh); sourced, not run.
#
# The sourcing script sets, before calling these:
#   E2E_NAME      the script's name, for bail messages
#   MSAL_BIN, ENV_FILE, RUN_TIMEOUT, PROMPT_TIMEOUT
#   COMMON        the options every msal run gets (array)
#   SCOPES        the options only login and token take, e.g. (--scope email) (array; msal
#                 refuses options a command does not use)
# and optionally:
#   E2E_SECRET_CODES=1   also hide authorization codes (?code=..., a JSON "code" field)
#   E2E_DIAG_KEEP=tail   diag_file shows the last 20 lines instead of the first 20
# Results of a check are counted in PASSED and FAILED; each msal run leaves its
# output in OUT and ERR (files under WORK) and its exit status in RC.

PASSED=0
FAILED=0
N=0

bail() { echo "$E2E_NAME: $*" >&2; exit 1; }

# The preconditions, then the Glewlwyd env file (exported); bails when the
# provider does not answer. Extra arguments: more commands that must be on PATH.
e2e_load_env() { # [COMMAND...]
  local c v
  [[ -x $MSAL_BIN ]] || bail "$MSAL_BIN is not an executable (run: swift build, or set MSAL_BIN)"
  [[ -f $ENV_FILE ]] || bail "no $ENV_FILE (run: scripts/glewlwyd.sh start)"
  command -v python3 >/dev/null 2>&1 || bail "python3 is needed to parse JSON"
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || bail "$c is needed"
  done
  set -a
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  set +a
  for v in GLEWLWYD_ISSUER GLEWLWYD_CLIENT_ID GLEWLWYD_USERNAME GLEWLWYD_URL; do
    [[ -n ${!v:-} ]] || bail "$v missing from $ENV_FILE"
  done
  curl -fsS -o /dev/null --max-time 5 "$GLEWLWYD_ISSUER/.well-known/openid-configuration" 2>/dev/null \
    || bail "Glewlwyd does not answer at $GLEWLWYD_ISSUER (run: scripts/glewlwyd.sh start)"
}

# A scratch directory in WORK, removed on exit (a background login still running is killed).
e2e_workdir() { # PREFIX
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  LOGIN_PID=""
  trap e2e_cleanup EXIT
}
e2e_cleanup() {
  if [[ -n $LOGIN_PID ]] && kill -0 "$LOGIN_PID" 2>/dev/null; then
    kill "$LOGIN_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}

# Hide anything that looks like a token (JWTs and long opaque strings), and
# with E2E_SECRET_CODES=1 an authorization code in a URL.
redact() {
  local rules=(-e 's#eyJ[A-Za-z0-9_-]*[.][A-Za-z0-9_-]*[.][A-Za-z0-9_-]*#<redacted>#g')
  [[ ${E2E_SECRET_CODES:-0} == 1 ]] && rules+=(-e 's#([?&]code=)[^&"[:space:]]*#\1<redacted>#g')
  rules+=(-e 's#[A-Za-z0-9_~+/-]{64,}=*#<redacted>#g')
  sed -E "${rules[@]}"
}

# Print a file as "#   ..." diagnostics, redacted; JSON token fields are
# replaced by <redacted> before anything else.
diag_file() { # LABEL FILE
  [[ -s $2 ]] || { echo "#   $1: (empty)"; return 0; }
  echo "#   $1:"
  python3 - "$2" "${E2E_SECRET_CODES:-0}" <<'EOF' | redact | "${E2E_DIAG_KEEP:-head}" -n 20 | sed 's/^/#     /'
import json, sys
text = open(sys.argv[1], errors="replace").read()
secrets = ("access_token", "id_token", "refresh_token") + (("code",) if sys.argv[2] == "1" else ())
def scrub(v):
    if isinstance(v, dict):
        return {k: ("<redacted>" if k in secrets else scrub(x))
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

check() { # STATUS WHAT  (status 0 = ok)
  if [[ $1 == 0 ]]; then
    echo "ok - $2"
    PASSED=$((PASSED + 1))
  else
    echo "not ok - $2"
    FAILED=$((FAILED + 1))
  fi
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

# msal SUBCOMMAND... with the common options, in the foreground; sets RC, OUT, ERR.
run_msal() { # CACHE ARGS...
  local cache=$1
  shift
  N=$((N + 1))
  OUT=$WORK/run$N.out
  ERR=$WORK/run$N.err
  RC=0
  local scopes=()
  [[ ${1:-} == login || ${1:-} == token ]] && scopes=("${SCOPES[@]}")
  timeout "$RUN_TIMEOUT" "$MSAL_BIN" "$@" "${COMMON[@]}" "${scopes[@]}" --cache "$cache" >"$OUT" 2>"$ERR" || RC=$?
}

start_login() { # CACHE ARGS...: msal login in the background; sets OUT, ERR, LOGIN_PID
  local cache=$1
  shift
  N=$((N + 1))
  OUT=$WORK/run$N.out
  ERR=$WORK/run$N.err
  "$MSAL_BIN" login "$@" "${COMMON[@]}" "${SCOPES[@]}" --cache "$cache" >"$OUT" 2>"$ERR" &
  LOGIN_PID=$!
}

# Print the first non-empty string FIELD of a JSON object line in FILE, or nothing.
json_line_field() { # FILE FIELD
  python3 - "$1" "$2" <<'EOF' 2>/dev/null || true
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and isinstance(d.get(sys.argv[2]), str) and d[sys.argv[2]]:
        print(d[sys.argv[2]])
        break
EOF
}

# Wait (PROMPT_TIMEOUT at most, or until the background login exits) for a JSON
# line with FIELD on the login's stderr; prints the field, or nothing.
wait_stderr_field() { # FIELD
  local i value=""
  for ((i = 0; i < PROMPT_TIMEOUT * 5; i++)); do
    value=$(json_line_field "$ERR" "$1")
    [[ -n $value ]] && break
    kill -0 "$LOGIN_PID" 2>/dev/null || break
    sleep 0.2
  done
  [[ -z $value ]] || echo "$value"
}

wait_login() { # SECONDS: waits for LOGIN_PID (killed when it overruns); sets RC
  local i
  for ((i = 0; i < $1 * 5; i++)); do
    kill -0 "$LOGIN_PID" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$LOGIN_PID" 2>/dev/null; then
    kill "$LOGIN_PID" 2>/dev/null || true
    echo "#   login still running after $1 s; killed"
  fi
  RC=0
  wait "$LOGIN_PID" 2>/dev/null || RC=$?
  LOGIN_PID=""
}

expect_rc() { # EXPECTED WHAT
  local st=1
  [[ $RC == "$1" ]] && st=0
  check "$st" "$2 (exit $RC, expected $1)"
  if [[ $st != 0 ]]; then diag_file stdout "$OUT"; diag_file stderr "$ERR"; fi
  return "$st"
}

# The JSON result contract of login/token on OUT: prints what is missing or
# wrong and fails, or prints nothing. token_source must be SOURCE; "any" means
# either cache or identity_provider.
result_problems() { # SOURCE
  python3 - "$OUT" "$1" <<'EOF' 2>&1
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
if sys.argv[2] == "any":
    if d.get("token_source") not in ("cache", "identity_provider"):
        bad.append("token_source=%r" % (d.get("token_source"),))
elif d.get("token_source") != sys.argv[2]:
    bad.append("token_source=%r (want %r)" % (d.get("token_source"), sys.argv[2]))
a = d.get("account")
if not isinstance(a, dict):
    bad.append("account (not an object)")
else:
    bad += ["account.%s" % k for k in ("identifier", "username", "environment") if not nonempty_str(a.get(k))]
if bad:
    print("missing or wrong: " + ", ".join(bad))
    sys.exit(1)
EOF
}
