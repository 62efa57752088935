#!/usr/bin/env bash
# Installs what the real-browser tests need (scripts/browser/, scripts/e2e-glewlwyd-interactive-cli.sh)
# and this machine lacks: Debian's chromium and chromium-driver (apt-get, sudo when not root), and
# Selenium from PyPI for python3 -- with pip when python3 accepts it, else into a venv at
# <repo>/.build/browser-venv (Debian's own python3 is "externally managed"; its venv needs the
# python3-venv package, installed here when missing). scripts/browser/ uses that venv when it exists.
# Prints nothing and changes nothing when everything is present.
# Environment: PYTHON (default python3).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$REPO_ROOT/.build/browser-venv
PYTHON=${PYTHON:-python3}

say() { echo "install-browser-test-deps.sh: $*" >&2; }
die() { say "$*"; exit 1; }

has_selenium() { # PYTHON
  "$1" -c 'import selenium' >/dev/null 2>&1
}
installed() { # PACKAGE
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

command -v "$PYTHON" >/dev/null 2>&1 || die "no $PYTHON on PATH (apt-get install python3)"

need_selenium=1
if has_selenium "$VENV/bin/python" || has_selenium "$PYTHON"; then
  need_selenium=0
fi

# A venv is the way when python3 has no pip or refuses one (PEP 668: Debian's python3).
use_venv=0
if ((need_selenium)); then
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1 \
    || [[ -f $("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')/EXTERNALLY-MANAGED ]]; then
    use_venv=1
  fi
fi

packages=()
[[ -x /usr/bin/chromium ]] || packages+=(chromium)
[[ -x /usr/bin/chromedriver ]] || packages+=(chromium-driver)
# Debian's python3 makes venvs only with python3-venv (ensurepip).
if ((use_venv)) && [[ $(command -v "$PYTHON") == /usr/bin/* ]] && ! installed python3-venv; then
  packages+=(python3-venv)
fi

if ((${#packages[@]} > 0)); then
  sudo_cmd=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to install: ${packages[*]}"
    sudo_cmd=(sudo)
  fi
  say "installing ${packages[*]} (apt-get)"
  for package in "${packages[@]}"; do
    if ! apt-cache show "$package" >/dev/null 2>&1; then
      "${sudo_cmd[@]}" apt-get update -qq
      break
    fi
  done
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null
fi

if ((need_selenium)); then
  if ((use_venv == 0)); then
    say "installing selenium for $PYTHON (pip)"
    if "$PYTHON" -m pip install --quiet --disable-pip-version-check selenium; then
      exit 0
    fi
    say "pip refused; using a venv instead"
  fi
  if [[ ! -x $VENV/bin/python ]]; then
    say "creating $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "$PYTHON -m venv failed (Debian: apt-get install python3-venv)"
  fi
  say "installing selenium into $VENV (pip)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check selenium \
    || die "pip could not install selenium into $VENV"
  has_selenium "$VENV/bin/python" || die "selenium still not importable from $VENV"
fi
