#!/usr/bin/env bash
# Installs, with apt-get, what swift-msal's build, demo and tests need and this machine lacks.
#   scripts/install-deps.sh          build + demo needs (pkg-config, SQLite, OpenSSL, libsecret and simdjson headers)
#   scripts/install-deps.sh --test   also the test tools (sqlite3, openssl, curl, python3) and a private
#                                    keyring for the keyring tests (scripts/lib/keyring-session.sh:
#                                    dbus-daemon, dbus-bin, gnome-keyring, gdbus from libglib2.0-bin,
#                                    secret-tool from libsecret-tools, python3-dbus); Glewlwyd itself
#                                    is installed by scripts/glewlwyd.sh install
# Uses sudo when not root. The Swift toolchain itself (6.0 or newer) must already be on PATH:
# Debian does not package it; get it from swift.org.
set -euo pipefail

packages=(pkg-config libsqlite3-dev libssl-dev libsecret-1-dev libsimdjson-dev)
if [[ ${1:-} == --test ]]; then
  packages+=(sqlite3 openssl curl python3)
  packages+=(dbus-daemon dbus-bin gnome-keyring libglib2.0-bin libsecret-tools python3-dbus)
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "install-deps.sh: no 'swift' on PATH. Install a Swift 6 toolchain for Debian 12 from swift.org and add its usr/bin to PATH." >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "install-deps.sh: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
