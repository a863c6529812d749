"""A small real OAuth2 authorization server for tests and chaos runs, and the Dovecot
``oauth2`` passdb settings that check bearer tokens against it.

``TokenServer`` serves RFC 6749 token requests and RFC 7662 introspection on a free loopback
port, in a thread of the calling process. Dovecot's ``oauth2`` passdb (``OAUTH2_CONF``, its
``introspection_url`` = ``TokenServer.url + "/introspect"``) asks it whether a bearer token
presented by XOAUTH2 / OAUTHBEARER is valid and whose it is. Every token request is logged
(``requests``: grant type, user, time) so a run can count refreshes.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OAUTH2_CONF = """\
introspection_mode = post
introspection_url = {introspect}
force_introspection = yes
username_attribute = username
active_attribute = active
active_value = true
"""



@dataclass
class Grant:
    """One user's consent: a refresh token and the access tokens issued from it."""

    username: str
    refresh_token: str
    revoked: bool = False


@dataclass
class TokenServer:
    """A small real OAuth2 authorization server (RFC 6749 token endpoint, RFC 7662
    introspection) on a free loopback port, in a thread.

    ``POST /token``: grant_type=refresh_token (rotating the refresh token when ``rotate``),
    client_credentials, authorization_code (codes made by ``issue_code``). ``POST
    /introspect``: token=... -> {"active": ..., "username": ...} (what Dovecot's oauth2
    passdb asks). ``strict_rotation``: a rotated refresh token is dead at once (the
    strictest provider). ``lifetime``: access-token seconds. ``down``: answer 503.
    ``throttle``: the next token requests answer these ``(status, Retry-After)`` first, one
    each, before looking at the grant (a provider that asks to wait).
    """

    client_id: str = "email-rag-test-client"
    client_secret: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    lifetime: int = 3600
    rotate: bool = False
    strict_rotation: bool = False
    down: bool = False
    throttle: list[tuple[int, str]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # grant_type, at, user
    on_token: Any = None  # called(params) when a token request arrives, before answering
    grants: dict[str, Grant] = field(default_factory=dict)  # refresh token -> grant
    access: dict[str, tuple[str, float]] = field(default_factory=dict)  # token -> (user, exp)
    codes: dict[str, str] = field(default_factory=dict)
    devices: dict[str, list[str]] = field(default_factory=dict)  # device_code -> [user_code, user]
    app_users: set[str] = field(default_factory=set)  # mailboxes granted to the app (IMAP)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> TokenServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                params = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    cid, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
                    params.setdefault("client_id", urllib.parse.unquote(cid))
                    params.setdefault("client_secret", urllib.parse.unquote(secret))
                status, body, headers = server.answer(self.path, params)
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    # --- what the test sets up ---
    def consent(self, username: str) -> str:
        """An admin consented for ``username``: returns the refresh token."""
        token = "rt-" + secrets.token_urlsafe(16)
        with self.lock:
            self.grants[token] = Grant(username, token)
        return token

    def issue_code(self, username: str) -> str:
        code = "code-" + secrets.token_urlsafe(8)
        with self.lock:
            self.codes[code] = username
        return code

    def approve_device(self, user_code: str, username: str) -> None:
        """The user typed ``user_code`` at the verification page and consented."""
        with self.lock:
            for entry in self.devices.values():
                if entry[0] == user_code:
                    entry[1] = username

    def revoke(self, username: str) -> None:
        with self.lock:
            for g in self.grants.values():
                if g.username == username:
                    g.revoked = True
            for t, (user, _exp) in list(self.access.items()):
                if user == username:
                    self.access[t] = (user, 0.0)

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access = {t: (u, 0.0) for t, (u, _) in self.access.items()}

    def refreshes(self, since: float = 0.0, until: float = float("inf"),
                  user: str = "") -> int:
        """Refresh-token requests that arrived between ``since`` and ``until`` (epoch s)."""
        return sum(1 for r in list(self.requests) if r.get("grant_type") == "refresh_token"
                   and since <= float(r["at"]) <= until and (not user or r["user"] == user))

    def valid(self, token: str) -> str | None:
        """Whose the access token is ("app:CLIENT_ID" for an app-only token; None: unknown or
        expired)."""
        with self.lock:
            user, exp = self.access.get(token, ("", 0.0))
        return user if user and exp > time.time() else None

    def introspected(self, token: str) -> str | None:
        """The user introspection answers for the token. An app-only token (client
        credentials) stands for the one mailbox granted to the app (``app_users``, like an
        Exchange mailbox permission of the app's service principal): Dovecot's introspection
        request does not carry the login name (a URL variable such as ``%u`` crashes the
        auth process of Dovecot 2.3.19), so one mailbox per app here."""
        user = self.valid(token)
        if user and user.startswith("app:"):
            return next(iter(self.app_users)) if len(self.app_users) == 1 else None
        return user

    # --- the endpoints ---
    def answer(self, path: str, params: dict[str, str]
               ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """``handle``, after the ``throttle`` answers are used up."""
        if path == "/token" and self.throttle:
            with self.lock:
                status, retry_after = self.throttle.pop(0)
            grant = self.grants.get(params.get("refresh_token", ""))
            self.requests.append({"grant_type": params.get("grant_type", ""),
                                  "at": time.time(), "user": grant.username if grant else "",
                                  "throttled": status})
            return status, {"error": "temporarily_unavailable"}, {"Retry-After": retry_after}
        return (*self.handle(path, params), {})

    def handle(self, path: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path.startswith("/introspect"):
            user = self.introspected(params.get("token", ""))
            return 200, ({"active": "true", "username": user} if user
                         else {"active": "false"})
        if path == "/device":
            device, user_code = secrets.token_urlsafe(12), secrets.token_hex(3).upper()
            with self.lock:
                self.devices[device] = [user_code, ""]
            return 200, {"device_code": device, "user_code": user_code, "interval": 0.2,
                         "verification_uri": self.url + "/devicelogin", "expires_in": 30}
        if path != "/token":
            return 404, {"error": "not_found"}
        grant = self.grants.get(params.get("refresh_token", ""))
        self.requests.append({"grant_type": params.get("grant_type", ""), "at": time.time(),
                              "user": grant.username if grant else ""})
        if self.on_token is not None:
            self.on_token(params)
        if self.down:
            return 503, {"error": "temporarily_unavailable"}
        if (params.get("client_id"), params.get("client_secret")) != (self.client_id,
                                                                       self.client_secret):
            return 401, {"error": "invalid_client", "error_description": "bad client secret"}
        grant_type = params.get("grant_type")
        with self.lock:
            if grant_type == "refresh_token":
                grant = self.grants.get(params.get("refresh_token", ""))
                if grant is None or grant.revoked:
                    return 400, {"error": "invalid_grant",
                                 "error_description": "AADSTS70000: the refresh token was "
                                 "revoked or has expired"}
                body = self._access(grant.username)
                if self.rotate:
                    new = "rt-" + secrets.token_urlsafe(16)
                    self.grants[new] = Grant(grant.username, new)
                    if self.strict_rotation:
                        grant.revoked = True
                    body["refresh_token"] = new
                return 200, body
            if grant_type == "authorization_code":
                user = self.codes.pop(params.get("code", ""), None)
                if user is None:
                    return 400, {"error": "invalid_grant", "error_description": "bad code"}
                token = "rt-" + secrets.token_urlsafe(16)
                self.grants[token] = Grant(user, token)
                return 200, {**self._access(user), "refresh_token": token}
            if grant_type == "urn:ietf:params:oauth:grant-type:device_code":
                entry = self.devices.get(params.get("device_code", ""))
                if entry is None:
                    return 400, {"error": "invalid_grant"}
                if not entry[1]:
                    return 400, {"error": "authorization_pending"}
                token = "rt-" + secrets.token_urlsafe(16)
                self.grants[token] = Grant(entry[1], token)
                return 200, {**self._access(entry[1]), "refresh_token": token}
            if grant_type == "client_credentials":
                return 200, self._access("app:" + self.client_id)
        return 400, {"error": "unsupported_grant_type"}

    def _access(self, username: str) -> dict[str, Any]:
        token = "at-" + secrets.token_urlsafe(16)
        self.access[token] = (username, time.time() + self.lifetime)
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}
