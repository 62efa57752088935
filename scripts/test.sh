#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, starts Glewlwyd (a real OpenID
# provider) on 127.0.0.1, runs every Swift test suite (unit, local-provider integration, Glewlwyd
# end to end with a real headless Chromium, the keyring store against a private gnome-keyring in
# its own D-Bus session), then checks the `msal` tool against Glewlwyd as a
# script would (device code, then interactive sign-in with a script and with Chromium as the browser).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-deps.sh --test
scripts/glewlwyd.sh install
scripts/install-browser-test-deps.sh
scripts/interop/install.sh

swift build --build-tests

scripts/glewlwyd.sh start >/dev/null
trap 'scripts/glewlwyd.sh stop >/dev/null 2>&1 || true' EXIT
set -a
# shellcheck disable=SC1091
. .build/glewlwyd/env
set +a
# The Glewlwyd suites fail instead of skipping when this is set and the provider is missing.
export MSAL_GLEWLWYD_REQUIRED=1
# The MSAL Python interoperability suites fail instead of skipping when the venv is missing.
export MSAL_INTEROP_REQUIRED=1
# The keyring suites fail instead of skipping when no Secret Service is reachable.
export MSAL_KEYRING_REQUIRED=1

swift_status=0
# MSALTests (the facade, and the suites that run the msal tool as a child process) runs on its own:
# all suites at once have peaked near 1,500 open descriptors (sockets of the local providers and the
# tools' pipes). The tests start child processes with posix_spawn (SpawnedProcess in MSALTestSupport),
# not Foundation's Process, whose run() can crash on Linux with Swift 6.3 (swift-corelibs-foundation#5472).
scripts/lib/keyring-session.sh swift test --skip-build --skip MSALCacheProcessTests --skip MSALTests || swift_status=$?
scripts/lib/keyring-session.sh swift test --skip-build --filter MSALTests || swift_status=$?
# The many-process and crash tests load both cores with 16 writers at a time: run them on their own,
# after the other suites, so that neither slows the other into its timeouts.
scripts/lib/keyring-session.sh swift test --skip-build --filter MSALCacheProcessTests || swift_status=$?

e2e_status=0
MSAL_BIN=.build/debug/msal scripts/e2e-glewlwyd-cli.sh || e2e_status=$?
MSAL_BIN=.build/debug/msal scripts/e2e-glewlwyd-interactive-cli.sh || e2e_status=$?

# A downstream package built from the cache layers only links neither OpenSSL nor libsecret.
examples_status=0
scripts/check-examples.sh || examples_status=$?

# The benchmarks: built in release mode and each case run once at the smallest size, so they cannot rot.
bench_status=0
Benchmarks/run --smoke || bench_status=$?

if [[ $swift_status -ne 0 || $e2e_status -ne 0 || $examples_status -ne 0 || $bench_status -ne 0 ]]; then
  echo "test.sh: FAILED (swift test exit $swift_status, msal end-to-end exit $e2e_status, examples exit $examples_status, benchmarks smoke exit $bench_status)" >&2
  exit 1
fi
echo "test.sh: all suites passed (benchmarks smoke included)"
