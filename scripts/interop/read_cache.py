#!/usr/bin/env python3
"""Reads a token cache JSON file with the real MSAL Python and prints what it finds, as JSON.

Usage: read_cache.py CACHE_JSON [REQUEST_JSON]

Without REQUEST_JSON: the cache's entries as msal.SerializableTokenCache reads them (accounts,
access and refresh tokens, via TokenCache.search), no application involved.

REQUEST_JSON (a JSON string, or @FILE) adds what an app would get from MSAL Python:
  {
    "now_epoch": 1700000600,             # time.time() is frozen here (default: real time)
    "domains": {"contoso.example": "<tenant id>"},   # tenant domain -> tenant id, for discovery
    "apps": [{"client_id": "...", "authority": "https://host/tenant"}],   # get_accounts() per app
    "queries": [{"name": "...", "client_id": "...", "authority": "...",
                 "home_account_id": "...", "scopes": ["..."]}]
  }
Each query runs PublicClientApplication.acquire_token_silent_with_error for the account with that
home_account_id. No network is used: sockets are disabled, and the application gets an HTTP
client stub that serves an OpenID discovery document for any tenant (token_endpoint names the
tenant, or the tenant id a domain maps to, as Entra does) and answers every token request with
400 invalid_grant. So a query's "source" is "cache" when MSAL Python served a cached access token
without a POST, "refresh_failed" when it tried the refresh token(s) (listed in "refresh_tokens_sent"),
or "no_account" when get_accounts() has no account with that home_account_id.

MSAL Python insists on https authorities; an http://127.0.0.1:PORT/... authority (the local
provider) is read as https://127.0.0.1:PORT/...: the cache's environment is the same "host:port".
"""
import json
import socket
import sys
import time
import urllib.parse

import msal


def _no_network(*args, **kwargs):
    raise OSError("read_cache.py: network access is disabled")


socket.socket = _no_network  # type: ignore[assignment, misc]
socket.create_connection = _no_network  # type: ignore[assignment]


class _Response:
    def __init__(self, status_code, body):
        self.status_code = status_code
        self.text = json.dumps(body)
        self.headers = {"Content-Type": "application/json"}

    def raise_for_status(self):
        if self.status_code >= 400:
            raise RuntimeError("HTTP %d" % self.status_code)


class StubHttp:
    """Serves discovery documents; refuses token requests with invalid_grant and records them."""

    def __init__(self, domains):
        self.domains = {k.lower(): v for k, v in (domains or {}).items()}
        self.posts = []

    def get(self, url, params=None, headers=None, **kwargs):
        parsed = urllib.parse.urlparse(url)
        segments = [s for s in parsed.path.split("/") if s]
        if segments and parsed.path.endswith("/.well-known/openid-configuration"):
            tenant = self.domains.get(segments[0].lower(), segments[0])
            base = "https://%s/%s" % (parsed.netloc, tenant)
            issuer_tenant = "{tenantid}" if tenant.lower() in ("common", "organizations", "consumers") else tenant
            return _Response(200, {
                "issuer": "https://%s/%s/v2.0" % (parsed.netloc, issuer_tenant),
                "authorization_endpoint": base + "/oauth2/v2.0/authorize",
                "token_endpoint": base + "/oauth2/v2.0/token",
                "device_authorization_endpoint": base + "/oauth2/v2.0/devicecode",
            })
        return _Response(404, {"error": "not_found", "error_description": "read_cache.py stub: GET " + url})

    def post(self, url, params=None, data=None, headers=None, **kwargs):
        self.posts.append({"url": url, "data": dict(data or {})})
        return _Response(400, {"error": "invalid_grant", "error_description": "read_cache.py stub refuses token requests"})

    def close(self):
        pass


def _https(authority):
    parsed = urllib.parse.urlparse(authority)
    return urllib.parse.urlunparse(parsed._replace(scheme="https"))


def _entries(cache, credential_type, fields):
    # now=0: search() deletes the access tokens it finds expired; a listing must not.
    return sorted(
        ({f: e.get(f) for f in fields} for e in cache.search(credential_type, now=0)),
        key=lambda e: json.dumps(e, sort_keys=True))


def read(cache_path, request):
    if request and request.get("now_epoch") is not None:
        frozen = float(request["now_epoch"])
        time.time = lambda: frozen  # MSAL Python reads "now" from time.time()
    cache = msal.SerializableTokenCache()
    with open(cache_path, encoding="utf-8") as f:
        cache.deserialize(f.read())
    ct = msal.TokenCache.CredentialType
    out = {
        "msal_version": msal.__version__,
        "cache": {
            "accounts": _entries(cache, ct.ACCOUNT, [
                "home_account_id", "environment", "realm", "local_account_id", "username",
                "authority_type", "account_source"]),
            "access_tokens": _entries(cache, ct.ACCESS_TOKEN, [
                "secret", "home_account_id", "environment", "realm", "client_id", "target",
                "token_type", "cached_at", "expires_on", "extended_expires_on"]),
            "refresh_tokens": _entries(cache, ct.REFRESH_TOKEN, [
                "secret", "home_account_id", "environment", "client_id", "target", "family_id"]),
            "id_tokens": _entries(cache, ct.ID_TOKEN, [
                "home_account_id", "environment", "realm", "client_id"]),
        },
    }
    if not request:
        return out

    http = StubHttp(request.get("domains"))

    def app(client_id, authority):
        return msal.PublicClientApplication(
            client_id, authority=_https(authority), token_cache=cache,
            http_client=http, instance_discovery=False)

    out["apps"] = []
    for spec in request.get("apps", []):
        accounts = app(spec["client_id"], spec["authority"]).get_accounts()
        out["apps"].append({
            "client_id": spec["client_id"], "authority": spec["authority"],
            "accounts": sorted(accounts, key=lambda a: a.get("home_account_id") or ""),
        })

    out["queries"] = []
    for query in request.get("queries", []):
        application = app(query["client_id"], query["authority"])
        account = next(
            (a for a in application.get_accounts() if a.get("home_account_id") == query["home_account_id"]),
            None)
        answer = {"name": query.get("name"), "source": "no_account", "access_token": None,
                  "refresh_tokens_sent": [], "error": None}
        if account is not None:
            before = len(http.posts)
            result = application.acquire_token_silent_with_error(query["scopes"], account)
            posts = http.posts[before:]
            answer["refresh_tokens_sent"] = [p["data"].get("refresh_token") for p in posts]
            answer["scope_sent"] = [sorted(p["data"].get("scope", "").split()) for p in posts]
            if result and "access_token" in result:
                answer["access_token"] = result["access_token"]
                answer["source"] = "cache" if not posts else "identity_provider"
                answer["token_source"] = result.get("token_source")
            else:
                answer["source"] = "refresh_failed" if posts else "miss"
                answer["error"] = (result or {}).get("error")
        out["queries"].append(answer)
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    request = None
    if len(argv) == 3:
        text = argv[2]
        if text.startswith("@"):
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        request = json.loads(text)
    json.dump(read(argv[1], request), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
