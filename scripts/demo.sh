#!/usr/bin/env bash
# The main job: builds the `msal` tool and runs `msal demo` against the embedded local
# Entra-compatible provider on 127.0.0.1 (device-code sign-in, a silent token from the cache,
# a forced refresh, the account list). Installs what is missing first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-deps.sh
swift build --product msal
exec .build/debug/msal demo "$@"
