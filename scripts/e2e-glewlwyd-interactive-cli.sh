#!/usr/bin/env bash
# End-to-end check of `msal login` (interactive: authorization code + PKCE, loopback
# redirect) against a running local Glewlwyd (scripts/glewlwyd.sh start):
#   (a) --no-browser: the user is played with curl (scripts/glewlwyd.sh authorize-url-login),
#       and the redirect is delivered to msal's loopback listener with curl;
#   (b) a real browser: BROWSER=scripts/browser/browser.sh signs in on Glewlwyd's login
#       page in headless Chromium (scripts/install-browser-test-deps.sh installs it).
# Each login is followed by `msal token` from the same cache.
#
#   scripts/glewlwyd.sh start && scripts/e2e-glewlwyd-interactive-cli.sh
#
# Environment: MSAL_BIN (default <repo>/.build/debug/msal), GLEWLWYD_DIR (where
# scripts/glewlwyd.sh keeps its env file, default <repo>/.build/glewlwyd),
# MSAL_E2E_REDIRECT_URI (default http://127.0.0.1:4594/callback, which `start` registers;
# another one is registered with scripts/glewlwyd.sh register-redirect-uri).
# Prints "ok - ..." / "not ok - ..." per check, then "N passed, M failed";
# exits 1 if any check failed. Never prints a token or an authorization code.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MSAL_BIN=${MSAL_BIN:-$REPO_ROOT/.build/debug/msal}
GLEWLWYD_SH=$REPO_ROOT/scripts/glewlwyd.sh
BROWSER_SH=$REPO_ROOT/scripts/browser/browser.sh
ENV_FILE=${GLEWLWYD_DIR:-$REPO_ROOT/.build/glewlwyd}/env
REDIRECT_URI=${MSAL_E2E_REDIRECT_URI:-http://127.0.0.1:4594/callback}
RUN_TIMEOUT=60      # seconds for each foreground msal run
PROMPT_TIMEOUT=30   # seconds for the authorization_url line to appear
LOGIN_TIMEOUT=90    # seconds for login to finish (the browser sign-in takes ~3 s)

E2E_NAME=e2e-glewlwyd-interactive-cli.sh
E2E_SECRET_CODES=1   # authorization codes are secrets too
E2E_DIAG_KEEP="tail"   # the end of a browser log is what tells
# shellcheck source=scripts/lib/e2e.sh
. "$REPO_ROOT/scripts/lib/e2e.sh"

e2e_load_env curl
[[ $REDIRECT_URI =~ ^http://127\.0\.0\.1:([0-9]+)/ ]] \
  || bail "MSAL_E2E_REDIRECT_URI must be http://127.0.0.1:PORT/PATH (got $REDIRECT_URI)"
REDIRECT_PORT=${BASH_REMATCH[1]}
# Glewlwyd matches redirect URIs exactly, port included; idempotent.
"$GLEWLWYD_SH" register-redirect-uri "$REDIRECT_URI" 2>/dev/null \
  || bail "could not register $REDIRECT_URI (scripts/glewlwyd.sh register-redirect-uri)"
# Only explicit options count in this test.
unset MSAL_AUTHORITY MSAL_CLIENT_ID MSAL_CACHE BROWSER

e2e_workdir msal-e2e-interactive

# ---------------------------------------------------------------- helpers

port_in_use() { # PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The JSON result contract of login/token (as for the device-code login).
check_result() { # SOURCE WHAT: stdout is the result object, token_source is SOURCE
  local problems st=0
  problems=$(result_problems "$1") || st=1
  check "$st" "$2: stdout is the JSON result with token_source $1"
  [[ $st == 0 ]] || { echo "#   $problems" | redact; diag_file stdout "$OUT"; }
}

# One query parameter of a URL (decoded), or nothing.
query_param() { # URL NAME
  python3 - "$1" "$2" <<'EOF' 2>/dev/null || true
import sys, urllib.parse
q = urllib.parse.parse_qs(urllib.parse.urlsplit(sys.argv[1]).query)
print(q.get(sys.argv[2], [""])[0])
EOF
}

# After a successful login: no secret on stderr, listener closed, token from the cache.
after_login() { # CACHE LABEL SECRET...
  local cache=$1 label=$2 at st s
  shift 2
  check_result identity_provider "$label: login"
  at=$(jget "$OUT" access_token)
  st=0
  for s in "$at" "$@"; do
    [[ -n $s ]] && grep -qF -- "$s" "$ERR" && st=1
  done
  check "$st" "$label: login prints neither the access token nor the code on stderr"
  st=0
  port_in_use "$REDIRECT_PORT" && st=1
  check "$st" "$label: the loopback listener on port $REDIRECT_PORT is closed after login"

  run_msal "$cache" token
  if expect_rc 0 "$label: token (new process) after login"; then
    check_result cache "$label: token"
    st=1
    [[ -n $at && $(jget "$OUT" access_token) == "$at" ]] && st=0
    check "$st" "$label: token returns the access token from login"
  fi
}

# ---------------------------------------------------------------- checks

COMMON=(--authority "$GLEWLWYD_ISSUER" --authority-type oidc --client-id "$GLEWLWYD_CLIENT_ID" --output json)
SCOPES=(--scope email)
echo "# msal: $MSAL_BIN"
echo "# authority: $GLEWLWYD_ISSUER, client: $GLEWLWYD_CLIENT_ID, user: $GLEWLWYD_USERNAME"
echo "# redirect URI: $REDIRECT_URI"

# (a) --no-browser: curl plays the user and delivers the redirect.
label="no browser"
if port_in_use "$REDIRECT_PORT"; then
  check 1 "$label: port $REDIRECT_PORT is free for msal's listener (something else listens there)"
else
  CACHE_A=$WORK/cache-a.sqlite
  start_login "$CACHE_A" --no-browser --redirect-uri "$REDIRECT_URI"
  url=$(wait_stderr_field authorization_url)
  st=1
  [[ -n $url ]] && st=0
  check "$st" "$label: login prints {\"authorization_url\": ...} on a stderr line"
  if [[ $st != 0 ]]; then
    wait_login 0
    diag_file stdout "$OUT"
    diag_file stderr "$ERR"
  else
    problems=""
    [[ $url == "$GLEWLWYD_ISSUER/auth?"* ]] || problems+=" endpoint"
    [[ $(query_param "$url" response_type) == code ]] || problems+=" response_type"
    [[ $(query_param "$url" client_id) == "$GLEWLWYD_CLIENT_ID" ]] || problems+=" client_id"
    [[ $(query_param "$url" redirect_uri) == "$REDIRECT_URI" ]] || problems+=" redirect_uri"
    [[ $(query_param "$url" code_challenge_method) == S256 ]] || problems+=" code_challenge_method"
    [[ $(query_param "$url" code_challenge) =~ ^[A-Za-z0-9_-]{43}$ ]] || problems+=" code_challenge"
    [[ -n $(query_param "$url" state) ]] || problems+=" state"
    [[ -n $(query_param "$url" nonce) ]] || problems+=" nonce"
    [[ " $(query_param "$url" scope) " == *" email "* ]] || problems+=" scope"
    st=0
    [[ -z $problems ]] || st=1
    check "$st" "$label: the URL is $GLEWLWYD_ISSUER/auth with code, client_id, redirect_uri, S256 PKCE, state, nonce, scope${problems:+ (wrong:$problems)}"

    location=""
    st=0
    location=$("$GLEWLWYD_SH" authorize-url-login "$url" 2>"$WORK/authorize.log") || st=1
    check "$st" "$label: glewlwyd.sh authorize-url-login signs in and gets the redirect"
    [[ $st == 0 ]] || diag_file "glewlwyd.sh authorize-url-login" "$WORK/authorize.log"
    code=$(query_param "$location" code)

    if [[ $st == 0 ]]; then
      st=1
      [[ $location == "$REDIRECT_URI?"* && $(query_param "$location" state) == $(query_param "$url" state) ]] && st=0
      check "$st" "$label: the redirect goes to $REDIRECT_URI with the URL's state"
      # The redirect reaching msal's loopback listener (what the browser would do).
      status=$(curl -sS -o "$WORK/listener.html" -w '%{http_code}' --max-time 10 "$location" 2>"$WORK/curl.log") \
        || status=000
      st=1
      [[ $status == 200 && -s $WORK/listener.html ]] && st=0
      check "$st" "$label: msal's listener answers the redirect with a page (HTTP $status)"
      [[ $st == 0 ]] || diag_file curl "$WORK/curl.log"
    fi

    wait_login "$LOGIN_TIMEOUT"
    if expect_rc 0 "$label: login exits 0 after the redirect"; then
      after_login "$CACHE_A" "$label" "$code"
    fi
  fi
fi

# (b) A real browser: headless Chromium signs in on Glewlwyd's login page.
label="browser"
deps=0
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || deps=1
if [[ -x $REPO_ROOT/.build/browser-venv/bin/python ]]; then
  "$REPO_ROOT/.build/browser-venv/bin/python" -c 'import selenium' 2>/dev/null || deps=1
else
  python3 -c 'import selenium' 2>/dev/null || deps=1
fi
hint=""
[[ $deps == 0 ]] || hint=" (run: scripts/install-browser-test-deps.sh)"
check "$deps" "$label: chromium, chromedriver and selenium are installed$hint"
if [[ $deps == 0 ]]; then
  if port_in_use "$REDIRECT_PORT"; then
    check 1 "$label: port $REDIRECT_PORT is free for msal's listener (something else listens there)"
  else
    CACHE_B=$WORK/cache-b.sqlite
    BROWSER_LOG=$WORK/browser.log
    : >"$BROWSER_LOG"
    started=$EPOCHREALTIME
    BROWSER=$BROWSER_SH MSAL_TEST_BROWSER_LOG=$BROWSER_LOG MSAL_TEST_BROWSER_SCREENSHOT_DIR=$WORK/screenshots \
      start_login "$CACHE_B" --redirect-uri "$REDIRECT_URI"
    # Until login exits; stop early when the browser sign-in has failed.
    for ((i = 0; i < LOGIN_TIMEOUT * 5; i++)); do
      kill -0 "$LOGIN_PID" 2>/dev/null || break
      if grep -q '^browser.sh: signin.py exited with status [1-9]' "$BROWSER_LOG"; then
        echo "#   the browser sign-in failed; stopping login"
        break
      fi
      sleep 0.2
    done
    wait_login 1
    echo "# browser login took $(python3 -c "print(f'{$EPOCHREALTIME - $started:.1f}')") s"
    [[ -s $BROWSER_LOG ]] || echo "#   the browser log is empty: msal did not run \$BROWSER"
    # signin.py may still be finishing after msal exits: wait (bounded) for its status line.
    for ((i = 0; i < 75 && $(wc -c <"$BROWSER_LOG") > 0; i++)); do
      grep -q '^browser.sh: signin.py exited' "$BROWSER_LOG" && break
      sleep 0.2
    done
    st=1
    grep -q '^browser.sh: signin.py exited with status 0$' "$BROWSER_LOG" && st=0
    check "$st" "$label: signin.py (via \$BROWSER) signed in and reached msal's listener"
    if [[ $st != 0 ]]; then
      diag_file "browser log" "$BROWSER_LOG"
      if [[ -d $WORK/screenshots ]]; then
        keep=$(mktemp -d "${TMPDIR:-/tmp}/msal-e2e-screenshots.XXXXXX")
        cp -r "$WORK/screenshots/." "$keep/"
        echo "#   screenshot and page source kept in $keep"
      fi
    fi
    if expect_rc 0 "$label: login exits 0 after the browser sign-in"; then
      after_login "$CACHE_B" "$label"
    fi
  fi
fi

# No token or code may have reached the output of this script: checked by
# construction (only redacted diagnostics are printed).
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
