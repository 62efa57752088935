#!/usr/bin/env bash
# Run a local Glewlwyd 2.7 OpenID provider (Debian package `glewlwyd`) on
# 127.0.0.1 for swift-msal's integration tests. See Docs/Glewlwyd.md.
#
#   scripts/glewlwyd.sh install                         apt-get install glewlwyd sqlite3 openssl curl
#   scripts/glewlwyd.sh start                           provision a fresh instance and start it
#   scripts/glewlwyd.sh stop                            stop it
#   scripts/glewlwyd.sh env                             print the env file (GLEWLWYD_ISSUER=... etc.)
#   scripts/glewlwyd.sh approve USER_CODE [USER PASS]   approve a device code as the user
#   scripts/glewlwyd.sh revoke-refresh-tokens [USER]    disable all refresh tokens of the user
#   scripts/glewlwyd.sh register-redirect-uri URI       allow one more redirect URI for the client
#   scripts/glewlwyd.sh authorize-url-login URL [USER PASS]
#                       log in as the user, follow the authorization URL, print the
#                       redirect (Location with code and state) on stdout
#
# Environment: GLEWLWYD_DIR (state dir, default <repo>/.build/glewlwyd),
#              GLEWLWYD_PORT (default 4593).
# `start` also serves Glewlwyd's web app (its login page) at http://127.0.0.1:PORT/.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_DIR=${GLEWLWYD_DIR:-$REPO_ROOT/.build/glewlwyd}
PORT=${GLEWLWYD_PORT:-4593}
GLEWLWYD_BIN=/usr/bin/glewlwyd
SCHEMA=/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz
# Debian's web app (login page): its files are symlinks, its config.json a
# link to a directory; we serve a dereferenced copy with the real config.json.
WEBAPP_SRC=/usr/share/glewlwyd/webapp
WEBAPP_CONFIG_SRC=/etc/glewlwyd/config-2.7.json/config.json
MODULE_DIR=/usr/lib/glewlwyd

CLIENT_ID=swift-msal-test
USERNAME=alice
PASSWORD=alice-password
# PBKDF2 string for "alice-password" as stored by Glewlwyd's database user
# module (it embeds its own salt). Produced once through the admin API
# (POST /api/user/) on a throwaway instance; see Docs/Glewlwyd.md.
# "sub" of alice in ID and access tokens (subject type "public").
ALICE_SUB=U1bd5DINCxtHfb8tUqW8KrO56yrwSZns
ALICE_PASSWORD_HASH='12NPUytcjw95MkNU0sw8qes23/GI90pBXo1UfL8VXFBLRnhRSkpSaW5KN3hLN2No,150000'

DB=$STATE_DIR/glewlwyd.db
CONF=$STATE_DIR/glewlwyd.conf
LOG=$STATE_DIR/glewlwyd.log
PID_FILE=$STATE_DIR/glewlwyd.pid
ENV_FILE=$STATE_DIR/env
KEY=$STATE_DIR/oidc-key.pem
PUB=$STATE_DIR/oidc-pub.pem
WEBAPP=$STATE_DIR/webapp

die() { echo "glewlwyd.sh: $*" >&2; exit 1; }
log() { echo "glewlwyd.sh: $*" >&2; }

usage() {
  sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Base URL of the running instance: from the env file if there is one
# (the port may differ from the current GLEWLWYD_PORT), else from PORT.
base_url() {
  local url=""
  if [[ -f $ENV_FILE ]]; then
    url=$(sed -n 's/^GLEWLWYD_URL=//p' "$ENV_FILE")
  fi
  echo "${url:-http://127.0.0.1:$PORT}"
}

discovery_ok() { # URL
  curl -fsS -o /dev/null --max-time 2 "$1/api/oidc/.well-known/openid-configuration" 2>/dev/null
}

port_in_use() { # PORT: true if something accepts TCP connections on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running_pid() { # prints the PID if our instance is alive
  local pid
  [[ -f $PID_FILE ]] || return 1
  pid=$(cat "$PID_FILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

sql_quote() { # SQL string literal body: double single quotes
  printf '%s' "${1//\'/\'\'}"
}

json_pem() { # file -> PEM as a JSON string body (newlines as \n)
  awk '{ printf "%s\\n", $0 }' "$1"
}

need() {
  local missing=()
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  ((${#missing[@]} == 0)) || die "missing: ${missing[*]} (run: scripts/glewlwyd.sh install)"
}

cmd_install() {
  local pkgs=() sudo=() p
  [[ -x $GLEWLWYD_BIN ]] || pkgs+=(glewlwyd)
  command -v sqlite3 >/dev/null 2>&1 || pkgs+=(sqlite3)
  command -v openssl >/dev/null 2>&1 || pkgs+=(openssl)
  command -v curl >/dev/null 2>&1 || pkgs+=(curl)
  if ((${#pkgs[@]} == 0)); then
    echo "glewlwyd.sh: glewlwyd, sqlite3, openssl and curl are already installed" >&2
    return 0
  fi
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install ${pkgs[*]} yourself"
    sudo=(sudo)
  fi
  # apt-get update only when the package lists do not know a package yet.
  for p in "${pkgs[@]}"; do
    if ! apt-cache show "$p" >/dev/null 2>&1; then
      "${sudo[@]}" apt-get update
      break
    fi
  done
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"
  # The package enables its own service (default admin/password, all
  # interfaces, port 4593). We only need the binary: stop and disable it.
  if [[ " ${pkgs[*]} " == *" glewlwyd "* ]] && command -v systemctl >/dev/null 2>&1 \
    && systemctl list-unit-files glewlwyd.service >/dev/null 2>&1; then
    log "disabling the package's own glewlwyd.service (this script runs its own instance)"
    "${sudo[@]}" systemctl disable --now glewlwyd.service >/dev/null 2>&1 || true
  fi
}

write_config() {
  local url="http://127.0.0.1:$PORT"
  cat >"$CONF" <<EOF
# Generated by scripts/glewlwyd.sh; loopback only.
port=$PORT
bind_address="127.0.0.1"
external_url="http://127.0.0.1:$PORT"
login_url="login.html"
api_prefix="api"
allow_origin="*"
allow_methods="GET, POST, PUT, DELETE, OPTIONS"
allow_headers="Origin, X-Requested-With, Content-Type, Accept, Bearer, Authorization, DPoP"
expose_headers="Content-Encoding, Authorization"
log_mode="console"
log_level="INFO"
cookie_secure=0
cookie_same_site="empty"
session_expiration=2419200
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
add_x_frame_option_header_deny=true
max_post_size=16778240
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="$MODULE_DIR/user"
client_module_path="$MODULE_DIR/client"
user_auth_scheme_module_path="$MODULE_DIR/scheme"
plugin_module_path="$MODULE_DIR/plugin"
hash_algorithm="SHA512"
database =
{
  type = "sqlite3";
  path = "$DB";
};
# Glewlwyd's own web app (login and consent pages) at $url/login.html.
static_files_path="$WEBAPP/"
static_files_mime_types =
(
  { extension = ".html"; mime_type = "text/html"; },
  { extension = ".css"; mime_type = "text/css"; },
  { extension = ".js"; mime_type = "application/javascript"; },
  { extension = ".json"; mime_type = "application/json"; },
  { extension = ".png"; mime_type = "image/png"; },
  { extension = ".jpg"; mime_type = "image/jpeg"; },
  { extension = ".jpeg"; mime_type = "image/jpeg"; },
  { extension = ".svg"; mime_type = "image/svg+xml"; },
  { extension = ".ico"; mime_type = "image/x-icon"; },
  { extension = ".ttf"; mime_type = "font/ttf"; },
  { extension = ".otf"; mime_type = "font/otf"; },
  { extension = ".eot"; mime_type = "application/vnd.ms-fontobject"; },
  { extension = ".woff"; mime_type = "font/woff"; },
  { extension = ".woff2"; mime_type = "font/woff2"; },
  { extension = ".map"; mime_type = "application/octet-stream"; }
);
EOF
}

copy_webapp() {
  [[ -d $WEBAPP_SRC ]] || die "$WEBAPP_SRC not found (is the glewlwyd package complete?)"
  [[ -f $WEBAPP_CONFIG_SRC ]] || die "$WEBAPP_CONFIG_SRC not found (is the glewlwyd package complete?)"
  rm -rf "$WEBAPP"
  cp -rL "$WEBAPP_SRC" "$WEBAPP" || die "could not copy $WEBAPP_SRC to $WEBAPP"
  rm -rf "$WEBAPP/config.json"
  cp "$WEBAPP_CONFIG_SRC" "$WEBAPP/config.json" || die "could not copy $WEBAPP_CONFIG_SRC"
}

oidc_parameters() {
  local iss="http://127.0.0.1:$PORT/api/oidc"
  cat <<EOF
{"iss":"$iss","jwt-type":"rsa","jwt-key-size":"256",
"key":"$(json_pem "$KEY")","cert":"$(json_pem "$PUB")",
"secret-type":"public",
"access-token-duration":3600,"refresh-token-duration":1209600,"code-duration":600,
"refresh-token-rolling":false,"refresh-token-one-use":"never",
"client-refresh-token-one-use-parameter":"refresh-token-one-use",
"allow-non-oidc":false,
"auth-type-code-enabled":true,"auth-type-code-revoke-replayed":false,
"auth-type-token-enabled":false,"auth-type-id-token-enabled":false,
"auth-type-none-enabled":false,"auth-type-password-enabled":false,
"auth-type-client-enabled":false,"auth-type-device-enabled":true,
"auth-type-refresh-enabled":true,
"scope":[],"additional-parameters":[],"claims":[],
"jwks-show":true,"jwks-x5c":[],
"request-parameter-allow":false,"request-uri-allow-https-non-secure":false,
"address-claim":{"type":"no","formatted":"","street_address":"","locality":"","region":"","postal_code":"","country":"","mandatory":false},
"name-claim":"mandatory","name-claim-scope":[],
"email-claim":"mandatory","email-claim-scope":[],
"scope-claim":"no","scope-claim-scope":[],
"allowed-scope":["openid","profile","email","offline_access"],
"pkce-allowed":true,"pkce-required":true,"pkce-method-plain-allowed":false,
"introspection-revocation-allowed":false,"introspection-revocation-auth-scope":[],
"register-client-allowed":false,
"session-management-allowed":false,
"encrypt-out-token-allow":false,
"device-authorization-expiration":600,"device-authorization-interval":1,
"oauth-dpop-allowed":false,"resource-allowed":false,"oauth-rar-allowed":false,
"oauth-par-allowed":false,"oauth-par-required":false}
EOF
}

provision_sql() {
  local params user name email
  params=$(oidc_parameters | tr -d '\n')
  user=$(sql_quote "$USERNAME")
  name="Alice Example"
  email="alice@example.test"
  cat <<EOF
BEGIN;
INSERT INTO g_plugin_module_instance (gpmi_module, gpmi_name, gpmi_display_name, gpmi_parameters, gpmi_enabled)
  VALUES ('oidc', 'oidc', 'OpenID Connect', '$(sql_quote "$params")', 1);

INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age)
  VALUES ('offline_access', 'Offline access', 'Refresh tokens', 1, 0),
         ('profile', 'Profile', 'Name', 1, 0),
         ('email', 'E-mail', 'E-mail address', 1, 0);

INSERT INTO g_user (gu_username, gu_name, gu_email, gu_enabled) VALUES ('$user', '$name', '$email', 1);
INSERT INTO g_user_password (gu_id, guw_password)
  VALUES ((SELECT gu_id FROM g_user WHERE gu_username='$user'), '$ALICE_PASSWORD_HASH');
INSERT INTO g_user_scope (gus_name) VALUES ('openid'), ('profile'), ('email'), ('offline_access');
INSERT INTO g_user_scope_user (gu_id, gus_id)
  SELECT (SELECT gu_id FROM g_user WHERE gu_username='$user'), gus_id FROM g_user_scope
  WHERE gus_name IN ('openid', 'profile', 'email', 'offline_access');

INSERT INTO g_client (gc_client_id, gc_name, gc_description, gc_confidential, gc_password, gc_enabled)
  VALUES ('$CLIENT_ID', 'swift-msal tests', 'Public client for swift-msal tests', 0, NULL, 1);
INSERT INTO g_client_property (gc_id, gcp_name, gcp_value)
  SELECT gc_id, p.name, p.value FROM g_client,
    (SELECT 'redirect_uri' AS name, 'http://127.0.0.1:4594/callback' AS value
     UNION ALL SELECT 'redirect_uri', 'http://localhost:4594/callback'
     UNION ALL SELECT 'authorization_type', 'code'
     UNION ALL SELECT 'authorization_type', 'refresh_token'
     UNION ALL SELECT 'authorization_type', 'device_authorization') AS p
  WHERE gc_client_id = '$CLIENT_ID';

-- Fixed "sub" for the user (Glewlwyd would pick a random one per fresh
-- database), so account identifiers stay the same across restarts.
INSERT INTO gpo_subject_identifier (gposi_plugin_name, gposi_username, gposi_client_id, gposi_sector_identifier_uri, gposi_sub)
  VALUES ('oidc', '$user', NULL, NULL, '$ALICE_SUB');

INSERT INTO g_client_user_scope (gs_id, gcus_username, gcus_client_id, gcus_enabled)
  SELECT gs_id, '$user', '$CLIENT_ID', 1 FROM g_scope
  WHERE gs_name IN ('openid', 'profile', 'email', 'offline_access');
COMMIT;
EOF
}

write_env() {
  local url="http://127.0.0.1:$PORT"
  cat >"$ENV_FILE" <<EOF
GLEWLWYD_ISSUER=$url/api/oidc
GLEWLWYD_CLIENT_ID=$CLIENT_ID
GLEWLWYD_USERNAME=$USERNAME
GLEWLWYD_PASSWORD=$PASSWORD
GLEWLWYD_SUBJECT=$ALICE_SUB
GLEWLWYD_DIR=$STATE_DIR
GLEWLWYD_URL=$url
EOF
}

fail_with_log() {
  echo "glewlwyd.sh: $*" >&2
  if [[ -f $LOG ]]; then
    echo "--- last lines of $LOG ---" >&2
    tail -n 30 "$LOG" >&2
  fi
  exit 1
}

cmd_start() {
  need curl sqlite3 openssl awk
  [[ -x $GLEWLWYD_BIN ]] || die "$GLEWLWYD_BIN not found (run: scripts/glewlwyd.sh install)"
  [[ -f $SCHEMA ]] || die "$SCHEMA not found (is the glewlwyd package complete?)"

  local pid url="http://127.0.0.1:$PORT"
  if pid=$(running_pid); then
    if discovery_ok "$(base_url)"; then
      echo "glewlwyd.sh: already running (pid $pid), reusing it" >&2
      cat "$ENV_FILE"
      return 0
    fi
    log "pid $pid is alive but not answering; stopping it"
    cmd_stop
  fi
  if port_in_use "$PORT"; then
    die "port $PORT on 127.0.0.1 is already in use (Debian's own glewlwyd.service listens on 4593: sudo systemctl disable --now glewlwyd); stop it or set GLEWLWYD_PORT"
  fi

  # Fresh state every start; only our own files are removed.
  mkdir -p "$STATE_DIR"
  rm -f "$DB" "$DB-journal" "$CONF" "$LOG" "$PID_FILE" "$ENV_FILE" "$KEY" "$PUB" "$STATE_DIR"/cookies.*

  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$KEY" 2>/dev/null \
    || die "openssl could not generate an RSA key"
  openssl pkey -in "$KEY" -pubout -out "$PUB" 2>/dev/null || die "openssl could not write the public key"

  zcat "$SCHEMA" | sqlite3 "$DB" || die "could not create $DB from $SCHEMA"
  provision_sql | sqlite3 -bail "$DB" || die "provisioning SQL failed on $DB"
  write_config
  copy_webapp

  "$GLEWLWYD_BIN" --config-file="$CONF" </dev/null >"$LOG" 2>&1 &
  pid=$!
  echo "$pid" >"$PID_FILE"

  local deadline=$((SECONDS + 20))
  until discovery_ok "$url"; do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID_FILE"; fail_with_log "glewlwyd exited during start-up"; }
    if ((SECONDS >= deadline)); then
      kill "$pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      fail_with_log "glewlwyd did not answer on $url within 20 s"
    fi
    sleep 0.2
  done

  # The provisioned password must work (it is a hard-coded PBKDF2 string).
  local status
  status=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
    --data "{\"username\":\"$USERNAME\",\"password\":\"$PASSWORD\"}" "$url/api/auth/") || status=000
  if [[ $status != 200 ]]; then
    kill "$pid" 2>/dev/null || true
    rm -f "$PID_FILE"
    fail_with_log "login as $USERNAME failed (HTTP $status): provisioning is broken"
  fi

  write_env
  echo "glewlwyd.sh: started (pid $pid) on $url, state in $STATE_DIR" >&2
  cat "$ENV_FILE"
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PID_FILE"
    echo "glewlwyd.sh: not running" >&2
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID_FILE"; echo "glewlwyd.sh: stopped (pid $pid)" >&2; return 0; }
    sleep 0.1
  done
  die "pid $pid did not exit within 5 s after SIGTERM"
}

cmd_env() {
  [[ -f $ENV_FILE ]] || die "no env file at $ENV_FILE (run: scripts/glewlwyd.sh start)"
  cat "$ENV_FILE"
}

cmd_approve() {
  (($# == 1 || $# == 3)) || usage
  need curl
  local code=$1 user=${2:-$USERNAME} pass=${3:-$PASSWORD} url jar body status headers location
  url=$(base_url)
  jar=$(mktemp)
  headers=$(mktemp)
  body=$(mktemp)
  # shellcheck disable=SC2064
  trap "rm -f '$jar' '$headers' '$body'" RETURN

  login_session "$url" "$jar" "$user" "$pass" || return 1

  status=$(curl -sS -o "$body" -D "$headers" -w '%{http_code}' -c "$jar" -b "$jar" -G \
    --data-urlencode "code=$code" --data "g_continue" "$url/api/oidc/device") \
    || die "could not reach $url"
  location=$(tr -d '\r' <"$headers" | sed -n 's/^[Ll]ocation: //p' | tail -n 1)
  if [[ $status == 302 && $location == *prompt=deviceComplete* ]]; then
    echo "glewlwyd.sh: device code $code approved as $user" >&2
    return 0
  fi
  echo "glewlwyd.sh: device code $code NOT approved: HTTP $status Location: ${location:-<none>} $(cat "$body")" >&2
  return 1
}

# Log in as USER on Glewlwyd at URL (its origin), keeping the session cookie
# in JAR; returns 1 with a message if the login is refused.
login_session() { # URL JAR USER PASS
  local url=$1 jar=$2 user=$3 pass=$4 login_json body status
  body=$(mktemp)
  login_json=$(printf '{"username":"%s","password":"%s"}' "$(json_escape "$user")" "$(json_escape "$pass")")
  status=$(curl -sS -o "$body" -w '%{http_code}' -c "$jar" -b "$jar" \
    -H 'Content-Type: application/json' --data "$login_json" "$url/api/auth/") \
    || { rm -f "$body"; die "could not reach $url"; }
  if [[ $status != 200 ]]; then
    echo "glewlwyd.sh: login as $user failed: HTTP $status $(cat "$body")" >&2
    rm -f "$body"
    return 1
  fi
  rm -f "$body"
}

json_escape() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '%s' "$s"
}

cmd_revoke_refresh_tokens() {
  (($# <= 1)) || usage
  need sqlite3
  [[ -f $DB ]] || die "no database at $DB (run: scripts/glewlwyd.sh start)"
  local user n
  user=$(sql_quote "${1:-$USERNAME}")
  n=$(sqlite3 -bail "$DB" ".timeout 5000" \
    "UPDATE gpo_refresh_token SET gpor_enabled = 0 WHERE gpor_username = '$user' AND gpor_enabled = 1; SELECT changes();") \
    || die "could not update $DB"
  echo "glewlwyd.sh: disabled $n refresh token(s) of ${1:-$USERNAME}" >&2
}

cmd_register_redirect_uri() {
  (($# == 1)) || usage
  need sqlite3
  [[ -f $DB ]] || die "no database at $DB (run: scripts/glewlwyd.sh start)"
  local uri n
  [[ $1 =~ ^[a-zA-Z][a-zA-Z0-9+.-]*:[^[:space:]]+$ ]] || die "not an absolute URI: $1"
  uri=$(sql_quote "$1")
  # Glewlwyd reads clients on every request: the row takes effect at once.
  n=$(sqlite3 -bail "$DB" ".timeout 5000" "
    INSERT INTO g_client_property (gc_id, gcp_name, gcp_value)
      SELECT gc_id, 'redirect_uri', '$uri' FROM g_client
      WHERE gc_client_id = '$CLIENT_ID' AND NOT EXISTS (
        SELECT 1 FROM g_client_property p JOIN g_client c ON p.gc_id = c.gc_id
        WHERE c.gc_client_id = '$CLIENT_ID' AND p.gcp_name = 'redirect_uri' AND p.gcp_value = '$uri');
    SELECT changes();") || die "could not update $DB"
  if [[ $n == 1 ]]; then
    log "redirect URI $1 registered for $CLIENT_ID"
  else
    log "redirect URI $1 was already registered for $CLIENT_ID"
  fi
}

# Play the browser without one: log in, follow the authorization URL with
# g_continue (Glewlwyd's "the user pressed Continue"), print the redirect.
cmd_authorize_url_login() {
  (($# == 1 || $# == 3)) || usage
  need curl
  local auth_url=$1 user=${2:-$USERNAME} pass=${3:-$PASSWORD} origin jar headers status location
  [[ $auth_url =~ ^(https?://[^/?#]+)/[^[:space:]]*$ ]] || die "not an http(s) URL: $auth_url"
  origin=${BASH_REMATCH[1]}
  jar=$(mktemp)
  headers=$(mktemp)
  # shellcheck disable=SC2064
  trap "rm -f '$jar' '$headers'" EXIT # die exits: RETURN would not run

  login_session "$origin" "$jar" "$user" "$pass" || return 1
  [[ $auth_url == *\?* ]] || auth_url+="?"
  [[ $auth_url == *[?\&] ]] || auth_url+="&"
  status=$(curl -sS -o /dev/null -D "$headers" -w '%{http_code}' -c "$jar" -b "$jar" \
    "${auth_url}g_continue") || die "could not reach $origin"
  location=$(tr -d '\r' <"$headers" | sed -n 's/^[Ll]ocation: //p' | tail -n 1)
  if [[ $status != 302 || -z $location ]]; then
    die "authorization URL answered HTTP $status without a redirect (unregistered redirect_uri, unknown client or not an authorization URL?)"
  fi
  local query=${location#*\?}
  [[ $location == *\?* ]] || query=""
  query=${query%%#*}
  if [[ "&$query" == *"&code="* ]]; then
    echo "$location"
    return 0
  fi
  if [[ "&$query" == *"&error="* ]]; then
    # The error redirect goes to stdout too, so a test can deliver it.
    echo "$location"
    local err desc
    err=$(sed -E 's/.*[?&]error=([^&#]*).*/\1/' <<<"$location")
    desc=$(sed -nE 's/.*[?&]error_description=([^&#]*).*/\1/p' <<<"$location")
    die "authorization refused: error=$err${desc:+ error_description=$desc}"
  fi
  die "not redirected to the client (Location: ${location%%\?*}); login, consent or the URL's parameters are not enough"
}

main() {
  (($# >= 1)) || usage
  local sub=$1
  shift
  case $sub in
    install) cmd_install "$@" ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    env) cmd_env "$@" ;;
    approve) cmd_approve "$@" ;;
    revoke-refresh-tokens) cmd_revoke_refresh_tokens "$@" ;;
    register-redirect-uri) cmd_register_redirect_uri "$@" ;;
    authorize-url-login) cmd_authorize_url_login "$@" ;;
    -h | --help | help) usage ;;
    *) echo "glewlwyd.sh: unknown subcommand: $sub" >&2; usage ;;
  esac
}

main "$@"
