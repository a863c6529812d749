"""A real OAuth2 / OpenID Connect authorization server for tests: panva's ``oidc-provider``
(npm, pinned in ``harness/oidc/package-lock.json``, installed by scripts/bootstrap.sh with
``npm ci``), run by the machine's node on a free loopback port.

Its own development pages ask for a login (any name: the account id, use the mailbox's
address) and the consent. The desk's OAuth2 sign-in goes through them in a real browser;
Dovecot's ``oauth2`` passdb checks the access tokens at its introspection endpoint
(``dovecot_introspection_url``: RFC 7662 with the client's credentials); ``revoke`` revokes
a refresh token (RFC 7009), which ends its whole grant (the user withdrew the consent).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from email_rag.core.errors import ConfigError

from .dovecot import free_port

OIDC_DIR = Path(__file__).resolve().parents[2] / "oidc"
NODE = shutil.which("node") or "/usr/bin/node"


class OidcServer:
    def __init__(self, redirect_uris: list[str], client_id: str = "email-rag-desk",
                 client_secret: str | None = None, access_ttl: int = 3600,
                 log_dir: Path | None = None) -> None:
        self.redirect_uris = list(redirect_uris)
        self.client_id = client_id
        self.client_secret = client_secret or secrets.token_urlsafe(24)
        self.access_ttl = access_ttl
        self.log_path = Path(log_dir or "/tmp") / f"oidc-{os.getpid()}-{secrets.token_hex(3)}.log"
        self.port = 0
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> OidcServer:
        if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
            raise ConfigError(f"oidc-provider is not installed in {OIDC_DIR}: run "
                              "scripts/bootstrap.sh (npm ci there)")
        self.port = free_port()
        config = {"port": self.port, "access_ttl": self.access_ttl,
                  "clients": [{"client_id": self.client_id, "client_secret": self.client_secret,
                               "redirect_uris": self.redirect_uris}]}
        log = self.log_path.open("w")
        self._proc = subprocess.Popen([NODE, str(OIDC_DIR / "server.mjs")], cwd=OIDC_DIR,
                                      env={**os.environ, "OIDC_CONFIG": json.dumps(config)},
                                      stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout  # a hang, not a slow start on a busy machine
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url + "/.well-known/openid-configuration",
                                            timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise ConfigError(f"oidc-provider did not start: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)

    def __enter__(self) -> OidcServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def authorize_url(self) -> str:
        return self.url + "/auth"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    @property
    def dovecot_introspection_url(self) -> str:
        """The introspection endpoint with the client's credentials (HTTP Basic), as
        Dovecot's oauth2 passdb calls it."""
        user = urllib.parse.quote(self.client_id, safe="")
        secret = urllib.parse.quote(self.client_secret, safe="")
        return f"http://{user}:{secret}@127.0.0.1:{self.port}/token/introspection"

    def _post(self, path: str, params: dict[str, str]) -> tuple[int, bytes]:
        auth = base64.b64encode(f"{urllib.parse.quote(self.client_id, safe='')}:"
                                f"{urllib.parse.quote(self.client_secret, safe='')}".encode())
        request = urllib.request.Request(self.url + path, method="POST",
                                         data=urllib.parse.urlencode(params).encode(),
                                         headers={"Authorization": "Basic " + auth.decode()})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def introspect(self, token: str) -> dict:
        return json.loads(self._post("/token/introspection", {"token": token})[1] or b"{}")

    def revoke(self, refresh_token: str) -> None:
        """The user withdrew the consent: the refresh token and its whole grant (the access
        tokens issued from it) are revoked."""
        status, body = self._post("/token/revocation", {"token": refresh_token,
                                                        "token_type_hint": "refresh_token"})
        if status != 200:
            raise ConfigError(f"revocation answered {status}: {body[:200]!r}")
