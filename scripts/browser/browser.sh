#!/usr/bin/env bash
# A $BROWSER for tests: "opens" URL by signing in on Glewlwyd's login page with
# scripts/browser/signin.py (headless Chromium) in the background, and returns at once.
#
#   BROWSER=scripts/browser/browser.sh msal login ...     (the SDK runs: $BROWSER URL)
#
# Environment:
#   MSAL_TEST_BROWSER_LOG       file for signin.py's output (default: a new temp file);
#                               first line "browser.sh: starting signin.py ...",
#                               last line "browser.sh: signin.py exited with status N"
#   MSAL_TEST_BROWSER_USERNAME  / MSAL_TEST_BROWSER_PASSWORD (default alice / alice-password)
#   MSAL_TEST_BROWSER_TIMEOUT   seconds for the sign-in (default 30)
#   MSAL_TEST_BROWSER_SCREENSHOT_DIR  evidence on failure (default: a new temp dir)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/../.." && pwd)

if (($# != 1)); then
  echo "usage: browser.sh URL" >&2
  exit 2
fi
url=$1

log_file=${MSAL_TEST_BROWSER_LOG:-}
if [[ -z $log_file ]]; then
  log_file=$(mktemp "${TMPDIR:-/tmp}/msal-test-browser.XXXXXX")
fi

python=python3
[[ -x $REPO_ROOT/.build/browser-venv/bin/python ]] && python=$REPO_ROOT/.build/browser-venv/bin/python

args=("$url"
  --username "${MSAL_TEST_BROWSER_USERNAME:-alice}"
  --password "${MSAL_TEST_BROWSER_PASSWORD:-alice-password}"
  --timeout "${MSAL_TEST_BROWSER_TIMEOUT:-30}")
[[ -n ${MSAL_TEST_BROWSER_SCREENSHOT_DIR:-} ]] && args+=(--screenshot-dir "$MSAL_TEST_BROWSER_SCREENSHOT_DIR")

echo "browser.sh: starting signin.py ($(date -u +%H:%M:%S))" >>"$log_file"
# In the background, nothing inherited on stdin/stdout; signin.py ends by itself (--timeout).
(
  status=0
  "$python" "$HERE/signin.py" "${args[@]}" || status=$?
  echo "browser.sh: signin.py exited with status $status"
) </dev/null >>"$log_file" 2>&1 &
disown
echo "browser.sh: signing in in the background (log: $log_file)" >&2
