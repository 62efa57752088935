#!/usr/bin/env bash
# Installs the real MSAL Python into .build/interop-venv for the interop tests
# (Tests/MSALTests/Interop*Tests.swift). Quiet and idempotent: does nothing when the venv already
# has the pinned version. The version is the one that wrote Tests/MSALTests/Fixtures (VERSIONS.json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

MSAL_VERSION=1.39.0
VENV=.build/interop-venv
PYTHON=${PYTHON:-python3}

if [[ -x $VENV/bin/python ]] && "$VENV/bin/python" - "$MSAL_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("msal") == sys.argv[1] else 1)
PY
then
  exit 0
fi

# Debian's own python3 ships venv/ensurepip separately (python3-venv).
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi

mkdir -p .build
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "msal==$MSAL_VERSION"
"$VENV/bin/python" -c 'import msal; print("interop: msal", msal.__version__, "in '"$VENV"'")'
