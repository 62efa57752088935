#!/usr/bin/env bash
# Builds the example downstream package Examples/CacheOnly against this checkout, runs it, and
# checks with ldd that a package composed of MSALCore, MSALCache and MSALCacheSQLite only does not
# link libsecret or OpenSSL (libssl, libcrypto).
#
#   scripts/check-examples.sh
#
# Builds into .build/examples/cache-only (not the root package's build directory), so a second run
# only relinks what changed. Installs what is missing with scripts/install-deps.sh first.
# Prints "ok - ..." / "not ok - ..." per check, then "N passed, M failed"; exits 1 if any failed.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
EXAMPLE=Examples/CacheOnly
SCRATCH=.build/examples/cache-only
ACCESS_GROUP=com.example.cache-only   # the example's access group (SampleEntries.accessGroup)
SECRET_MARKER=cache-only-secret-      # every secret the example writes starts with it
CHECKS=6                              # the number of "ok" lines the example prints

PASSED=0
FAILED=0
check() { # STATUS WHAT
  if [[ $1 == 0 ]]; then
    PASSED=$((PASSED + 1)); echo "ok - $2"
  else
    FAILED=$((FAILED + 1)); echo "not ok - $2"
  fi
}
diag_lines() { sed 's/^[[:space:]]*/#   /'; }  # stdin as "#   ..." diagnostics
diag_file() { # LABEL FILE
  if [[ -s $2 ]]; then echo "#   $1:"; head -n 20 "$2" | sed 's/^/#     /'; else echo "#   $1: (empty)"; fi
}

scripts/install-deps.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-examples.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# ---------------------------------------------------------------- build

build=(swift build --package-path "$EXAMPLE" --scratch-path "$SCRATCH")
start=$(date +%s)
if ! "${build[@]}" >"$WORK/build.log" 2>&1; then
  check 1 "$EXAMPLE builds (${build[*]})"
  tail -n 40 "$WORK/build.log" | sed 's/^/#   /'
  echo "$PASSED passed, $FAILED failed"
  exit 1
fi
check 0 "$EXAMPLE builds against this checkout in $(($(date +%s) - start)) s (${build[*]})"
BIN=$("${build[@]}" --show-bin-path)/cache-only

# ---------------------------------------------------------------- run

OUT=$WORK/stdout ERR=$WORK/stderr RC=0
run() { # ARGUMENT...
  RC=0
  "$BIN" "$@" >"$OUT" 2>"$ERR" || RC=$?
}

# Reads the rows of the example's access group with an SQLite reader of its own (not swift-msal):
# one line per entry, "<kind> <1 if its JSON holds a secret of the example, else 0>", sorted.
# Prints nothing and returns 1 when neither sqlite3 nor python3 is installed.
rows_on_disk() { # DATABASE
  local query="SELECT kind, instr(json, '$SECRET_MARKER') > 0 FROM entries WHERE access_group = '$ACCESS_GROUP' ORDER BY kind"
  if command -v sqlite3 >/dev/null 2>&1; then
    sqlite3 -readonly -separator ' ' "$1" "$query"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sqlite3, sys
for row in sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute(sys.argv[2]):
    print(*row)' "$1" "$query"
  else
    return 1
  fi
}

DB=$WORK/cache/msal_cache.sqlite
run "$DB"
check "$([[ $RC == 0 ]]; echo $?)" "cache-only on a new database exits 0 (got $RC)"
ok_lines=$(grep -c '^ok   ' "$OUT" || true)
st=1
[[ $ok_lines == "$CHECKS" ]] && ! grep -q FAIL "$OUT" "$ERR" && grep -qx "cache-only: all $CHECKS checks passed" "$OUT" && st=0
check "$st" "it reports $CHECKS passed checks: account, two scope-subset access token lookups, a non-subset miss, refresh token, store contents (got $ok_lines)"
[[ $st == 0 ]] || { diag_file stdout "$OUT"; diag_file stderr "$ERR"; }
st=0
grep -qF -- "$SECRET_MARKER" "$OUT" "$ERR" && st=1
check "$st" "its output holds no secret (no line contains $SECRET_MARKER)"

mode=$(stat -c %a "$DB" 2>/dev/null || echo missing)
check "$([[ $mode == 600 ]]; echo $?)" "the database file was created with mode 600 (got $mode)"

if rows=$(rows_on_disk "$DB" 2>"$WORK/sqlite.err"); then
  rows=$(echo "$rows" | tr '\n' ',')
  st=1
  [[ $rows == "AccessToken 1,Account 0,RefreshToken 1," ]] && st=0
  check "$st" "read with another SQLite reader, the file holds the 3 entries, the tokens with their secrets (got ${rows:-nothing})"
  [[ $st == 0 ]] || diag_file "reader errors" "$WORK/sqlite.err"
else
  echo "# skipped: reading the file with another SQLite reader (neither sqlite3 nor python3 is installed)"
fi

run "$DB"
st=1
[[ $RC == 0 ]] && grep -qx "cache-only: all $CHECKS checks passed" "$OUT" && st=0
check "$st" "a second run on the same database replaces its entries and passes again (exit $RC)"
[[ $st == 0 ]] || { diag_file stdout "$OUT"; diag_file stderr "$ERR"; }

NOTES=$WORK/notes.txt
printf 'my notes, not a database\n' >"$NOTES"
cp "$NOTES" "$WORK/notes.orig"
run "$NOTES"
st=1
[[ $RC == 3 ]] && grep -q "not an SQLite database" "$ERR" && cmp -s "$NOTES" "$WORK/notes.orig" && st=0
check "$st" "on a file that is not a database it exits 3, says so, and leaves the file untouched (exit $RC)"
[[ $st == 0 ]] || diag_file stderr "$ERR"

run "$DB" extra-argument
check "$([[ $RC == 2 ]]; echo $?)" "an extra argument is a usage error, exit 2 (got $RC)"

# ---------------------------------------------------------------- linking

ldd "$BIN" >"$WORK/ldd" 2>&1 || true
missing=$(grep 'not found' "$WORK/ldd" || true)
check "$([[ -z $missing ]]; echo $?)" "ldd resolves every library of $BIN"
[[ -z $missing ]] || diag_lines <<<"$missing"
st=1
grep -qE '(^|[[:space:]/])libsqlite3\.so' "$WORK/ldd" && grep -qE '(^|[[:space:]/])libFoundation\.so' "$WORK/ldd" && st=0
check "$st" "ldd lists libsqlite3 and libFoundation (the libraries the example needs)"
[[ $st == 0 ]] || diag_file ldd "$WORK/ldd"
# libk5crypto and the like are other libraries: only lib{secret-1,ssl,crypto}.so by name count.
offending=$(grep -E '(^|[[:space:]/])lib(secret-1|ssl|crypto)\.so' "$WORK/ldd" || true)
if [[ -z $offending ]]; then
  check 0 "the binary links neither libsecret-1 nor OpenSSL (libssl, libcrypto), directly or through another library"
else
  check 1 "the binary links neither libsecret-1 nor OpenSSL (libssl, libcrypto): it links them"
  diag_lines <<<"$offending"
  via=$(grep -E 'libFoundationNetworking|libcurl' "$WORK/ldd" || true)
  [[ -z $via ]] || { echo "#   probably through (a module imports FoundationNetworking):"; diag_lines <<<"$via"; }
  echo "#   a target in MSALCore, MSALCache or MSALCacheSQLite (or the example) now depends on one of them"
fi

echo "$PASSED passed, $FAILED failed"
[[ $FAILED == 0 ]]
