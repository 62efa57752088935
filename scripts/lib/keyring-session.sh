#!/usr/bin/env bash
# Runs a command against a real, private Secret Service keyring:
#   scripts/lib/keyring-session.sh <command...>
# starts a D-Bus session bus (dbus-run-session), a gnome-keyring-daemon (secrets component) with
# its login keyring created and unlocked with a throwaway password and its data in a temporary
# directory, checks that the 'default' alias points at that unlocked login keyring, runs the
# command, then stops the daemon and deletes the keyring. Headless, non-interactive, works as root.
#
# The command keeps its own environment (XDG_DATA_HOME and XDG_RUNTIME_DIR are changed for the
# daemon only) plus DBUS_SESSION_BUS_ADDRESS, and:
#   MSAL_TEST_KEYRING_SESSION=1       the keyring is a throwaway one that tests may lock
#   MSAL_TEST_KEYRING_PASSWORD=...    its password, for tests that lock and unlock it again
# Exit status: the command's, or 70 when the keyring could not be set up.
# Needs: dbus-daemon/dbus-bin (dbus-run-session), gnome-keyring, libglib2.0-bin (gdbus).
set -euo pipefail

inner_marker=__msal_keyring_session_inner__

if [[ $# -eq 0 ]]; then
  echo "usage: scripts/lib/keyring-session.sh <command...>" >&2
  exit 64
fi

fail() {
  echo "keyring-session.sh: $*" >&2
  exit 70
}

if [[ $1 != "$inner_marker" ]]; then
  for tool in dbus-run-session gnome-keyring-daemon gdbus; do
    command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is missing; run scripts/install-deps.sh --test (packages dbus-daemon, dbus-bin, gnome-keyring, libglib2.0-bin)."
  done
  exec dbus-run-session -- "$0" "$inner_marker" "$@"
fi
shift

work=$(mktemp -d "${TMPDIR:-/tmp}/msal-keyring.XXXXXXXX")
daemon_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [[ -n $daemon_pid ]]; then
    kill "$daemon_pid" 2>/dev/null || true
    # A caller that blocks SIGTERM (some process spawners do) passes that mask on: then kill it.
    for _ in $(seq 30); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/data" "$work/runtime"
chmod 700 "$work" "$work/runtime"
password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')

# --unlock reads the password from stdin and creates the login keyring with it when missing.
printf '%s' "$password" | env XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/runtime" \
  gnome-keyring-daemon --foreground --components=secrets --unlock >"$work/daemon.log" 2>&1 &
daemon_pid=$!

bus_call() { gdbus call --session --timeout 10 "$@"; }
secrets_call() { bus_call --dest org.freedesktop.secrets "$@"; }

owned=false
for _ in $(seq 100); do
  if ! kill -0 "$daemon_pid" 2>/dev/null; then
    cat "$work/daemon.log" >&2 || true
    fail "gnome-keyring-daemon exited before it took the name org.freedesktop.secrets."
  fi
  if bus_call --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.NameHasOwner org.freedesktop.secrets 2>/dev/null | grep -q true; then
    owned=true
    break
  fi
  sleep 0.1
done
$owned || { cat "$work/daemon.log" >&2 || true; fail "gnome-keyring-daemon did not take the name org.freedesktop.secrets within 10 seconds."; }

# The default alias must name the login keyring, and that keyring must be unlocked.
login=/org/freedesktop/secrets/collection/login
alias=$(secrets_call --object-path /org/freedesktop/secrets --method org.freedesktop.Secret.Service.ReadAlias default) ||
  fail "cannot read the Secret Service's 'default' alias."
[[ $alias == "(objectpath '$login',)" ]] ||
  fail "the 'default' alias is $alias, not the login keyring $login."
locked=$(secrets_call --object-path "$login" --method org.freedesktop.DBus.Properties.Get \
  org.freedesktop.Secret.Collection Locked) || fail "cannot read whether the login keyring is locked."
[[ $locked == "(<false>,)" ]] || fail "the login keyring is still locked ($locked) after --unlock."

status=0
MSAL_TEST_KEYRING_SESSION=1 MSAL_TEST_KEYRING_PASSWORD="$password" "$@" || status=$?
exit "$status"
