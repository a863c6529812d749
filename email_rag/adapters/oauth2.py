"""OAuth2 access tokens for IMAP and SMTP (SASL XOAUTH2 / OAUTHBEARER): the only module that
talks to a token endpoint.

Two sources, one interface (``TokenSource``: ``access_token()``, ``invalidate(token)``):

- ``ClientCredentialsSource``: app-only access (Microsoft 365): client id + secret -> token.
- ``RefreshTokenSource``: an admin authorized the mailbox once (``email-rag mailboxes
  authorize``); the refresh token is kept encrypted in MariaDB (``db.oauth_tokens``).

An access token is reused until ``skew`` seconds before it expires (in this process, and
across processes through MariaDB): never one refresh per poll. Refreshes of one mailbox are
serialized by a MariaDB named lock, so two processes never spend the same refresh token.

A refresh token the provider rotates is written to the journal (``oauth_journal_dir``,
fsync) the moment it arrives, then stored in MariaDB (conditional on the generation it
replaces), then the journal entry is removed. A crash between receiving and storing leaves
it in the journal; the next ``access_token()`` stores it first.

| situation | error | retry? | state known? | resume? |
|---|---|---|---|---|
| token endpoint 429 / 5xx with Retry-After | - | once, in-process, after Retry-After (at most ``max_retry_after`` s, ``RetryPolicy``), reported to ``on_wait`` (audited ``oauth_retry_after``) | stored tokens unchanged | then as below, the error carrying ``retry_after`` |
| token endpoint down / 5xx / timeout | OAuthUnavailableError (transient) | caller's backoff | stored tokens unchanged | next try |
| invalid_grant / invalid_client (revoked consent, expired secret) | OAuthGrantError (permanent) | caller's backoff; ALARM + audit ``oauth_refresh_failed`` | token row ``needs_authorization`` | after ``mailboxes authorize`` |
| not authorized yet | OAuthGrantError | same | no row | after ``mailboxes authorize`` |
| crash after a rotated token arrived, before MariaDB stored it | - | - | journal holds it | stored at the next call |
| MariaDB down while storing | DatabaseUnavailableError | caller | journal holds it | stored at the next call |
| refresh token unused for ``oauth_renew_idle_days`` (would expire from inactivity) | - | the scheduler refreshes it (``renew_idle_refresh_tokens``) | refreshed_at moves on | - |
"""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.errors import OAuthGrantError, OAuthUnavailableError
from ..core.redact import redact_text
from ..core.retry import RetryPolicy, parse_retry_after
from .files import write_durably

log = logging.getLogger(__name__)

# error codes of RFC 6749 5.2 that retrying will not fix
GRANT_ERRORS = {"invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope",
                "unsupported_grant_type", "access_denied", "expired_token"}


def sasl_xoauth2(user: str, token: str) -> str:
    """The XOAUTH2 initial client response (Google / Microsoft), before base64."""
    return f"user={user}\x01auth=Bearer {token}\x01\x01"


def sasl_oauthbearer(user: str, token: str) -> str:
    """The OAUTHBEARER initial client response (RFC 7628), before base64."""
    authzid = user.replace("=", "=3D").replace(",", "=2C")
    return f"n,a={authzid},\x01auth=Bearer {token}\x01\x01"


class TokenSource(Protocol):
    def access_token(self) -> str: ...

    def invalidate(self, token: str) -> None: ...


@dataclass(frozen=True)
class OAuthClient:
    """What a token request needs (the secret never shows in repr)."""

    token_url: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    scopes: tuple[str, ...] = ()
    timeout: float = 15.0


@dataclass(frozen=True)
class TokenAnswer:
    access_token: str = field(repr=False)
    expires_at: float  # epoch seconds
    refresh_token: str | None = field(default=None, repr=False)


def request_token(client: OAuthClient, params: dict[str, str]) -> TokenAnswer:
    """POST to the token endpoint; OAuthGrantError when it refuses the grant,
    OAuthUnavailableError when it cannot answer."""
    body = {**params, "client_id": client.client_id}
    if client.client_secret:
        body["client_secret"] = client.client_secret
    if client.scopes and "scope" not in body:
        body["scope"] = " ".join(client.scopes)
    request = urllib.request.Request(
        client.token_url, data=urllib.parse.urlencode(body).encode(), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded",
                 "Accept": "application/json"})
    where = _endpoint(client.token_url)
    started = time.time()
    try:
        with urllib.request.urlopen(request, timeout=client.timeout) as response:
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            answer = json.loads(e.read() or b"{}")
        except ValueError:
            answer = {}
        code = str(answer.get("error", "")) if isinstance(answer, dict) else ""
        text = str(answer.get("error_description", ""))[:300] if isinstance(answer, dict) else ""
        if code in GRANT_ERRORS or (e.code in (400, 401, 403) and code) or code in (
                "authorization_pending", "slow_down"):
            raise OAuthGrantError(redact_text(
                f"token endpoint {where} refused the {params.get('grant_type')} grant: "
                f"{code}: {text}".rstrip(": ")), error=code, status=e.code) from None
        unavailable = OAuthUnavailableError(f"token endpoint {where} answered HTTP {e.code}"
                                            f"{' ' + code if code else ''}", status=e.code)
        if e.code == 429 or e.code >= 500:
            unavailable.retry_after = parse_retry_after(e.headers)
        raise unavailable from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise OAuthUnavailableError(f"token endpoint {where} cannot be reached: "
                                    f"{type(e).__name__}: {reason}") from None
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not token:
        raise OAuthUnavailableError(f"token endpoint {where} answered without an access_token")
    lifetime = float(answer.get("expires_in") or 3600)
    return TokenAnswer(str(token), started + lifetime,
                       str(answer["refresh_token"]) if answer.get("refresh_token") else None)


def _endpoint(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{':' + str(parts.port) if parts.port else ''}{parts.path}"


# what a token endpoint that asked to wait is told: the wait, then one more request
OnWait = Callable[[dict[str, object]], None]


class _Asking:
    """Token requests of one source: a 429 / 5xx with Retry-After is waited (at most
    ``max_retry_after`` s: the ``RetryPolicy`` that honours the embeddings endpoint's
    Retry-After) and the request made once more; ``on_wait(detail)`` is told before the wait
    (endpoint, status, Retry-After, wait: never a token). ``sleep``: the wait itself."""

    def __init__(self, max_retry_after: float, on_wait: OnWait | None) -> None:
        self.policy = RetryPolicy(delays=(0.0,), max_attempts=2, jitter=0.0,
                                  max_delay=max_retry_after)
        self.on_wait = on_wait
        self.sleep: Callable[[float], None] = time.sleep

    def request(self, client: OAuthClient, params: dict[str, str]) -> TokenAnswer:
        attempt = 0
        while True:
            attempt += 1
            try:
                return request_token(client, params)
            except OAuthUnavailableError as e:
                if e.retry_after is None:
                    raise
                decision = self.policy.decide(attempt, e)
                if not decision.retry:
                    raise
                detail: dict[str, object] = {
                    "endpoint": _endpoint(client.token_url), "status": e.context.get("status"),
                    "retry_after_s": e.retry_after, "wait_s": round(decision.delay, 3)}
                log.warning("token endpoint %s answered %s with Retry-After %s s; asking again "
                            "in %.1f s", detail["endpoint"], detail["status"], e.retry_after,
                            decision.delay)
                if self.on_wait is not None:
                    self.on_wait(detail)
                self.sleep(decision.delay)


class _Cached:
    """An access token in this process, reused until ``skew`` s before it expires."""

    def __init__(self, skew: float) -> None:
        self.skew = skew
        self.token: str | None = None
        self.expires_at = 0.0

    def get(self) -> str | None:
        if self.token and self.expires_at - self.skew > time.time():
            return self.token
        return None

    def put(self, token: str, expires_at: float) -> str:
        self.token, self.expires_at = token, expires_at
        return token

    def drop(self, token: str) -> None:
        if self.token == token:
            self.token, self.expires_at = None, 0.0


class _WaitsRetryAfter:
    """A token source that waits a token endpoint's Retry-After through ``_asking``."""

    _asking: _Asking

    @property
    def sleep(self) -> Callable[[float], None]:
        """How a Retry-After is waited (``time.sleep``)."""
        return self._asking.sleep

    @sleep.setter
    def sleep(self, value: Callable[[float], None]) -> None:
        self._asking.sleep = value


class ClientCredentialsSource(_WaitsRetryAfter):
    """App-only tokens (client credentials grant); nothing stored."""

    def __init__(self, client: OAuthClient, skew: float = 300.0, max_retry_after: float = 60.0,
                 on_wait: OnWait | None = None) -> None:
        self.client = client
        self.cache = _Cached(skew)
        self.refreshes = 0
        self._asking = _Asking(max_retry_after, on_wait)

    def access_token(self) -> str:
        token = self.cache.get()
        if token:
            return token
        answer = self._asking.request(self.client, {"grant_type": "client_credentials"})
        self.refreshes += 1
        return self.cache.put(answer.access_token, answer.expires_at)

    def invalidate(self, token: str) -> None:
        self.cache.drop(token)


class RefreshJournal:
    """Refresh tokens received but not yet stored in MariaDB: one file per mailbox, written
    with fsync and renamed into place (never half a file), encrypted like the store."""

    def __init__(self, folder: Path, encrypt, decrypt) -> None:
        self.folder = Path(folder)
        self._encrypt, self._decrypt = encrypt, decrypt

    def _path(self, mailbox: str) -> Path:
        safe = base64.urlsafe_b64encode(mailbox.encode()).decode().rstrip("=")
        return self.folder / f"{safe}.json"

    def write(self, mailbox: str, generation: int, refresh_token: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(mailbox)
        data = json.dumps({"mailbox": mailbox, "replaces_generation": generation,
                           "refresh_token": self._encrypt(refresh_token).decode()})
        write_durably(path, data.encode())

    def read(self, mailbox: str) -> tuple[int, str] | None:
        try:
            data = json.loads(self._path(mailbox).read_text())
        except (OSError, ValueError):
            return None
        return int(data["replaces_generation"]), self._decrypt(data["refresh_token"].encode())

    def clear(self, mailbox: str) -> None:
        try:
            self._path(mailbox).unlink()
        except FileNotFoundError:
            pass


class RefreshTokenSource(_WaitsRetryAfter):
    """Tokens of a mailbox an admin authorized (refresh-token grant), stored in MariaDB."""

    def __init__(self, mailbox: str, client: OAuthClient, store, journal: RefreshJournal,
                 skew: float = 300.0, seed_refresh_token: str = "",
                 max_retry_after: float = 60.0, on_wait: OnWait | None = None) -> None:
        self.mailbox = mailbox
        self.client = client
        self.store = store  # db.oauth_tokens.TokenStore
        self.journal = journal
        self.cache = _Cached(skew)
        self.seed = seed_refresh_token
        self.refreshes = 0
        self._asking = _Asking(max_retry_after, on_wait)

    def __repr__(self) -> str:
        return f"RefreshTokenSource({self.mailbox!r}, {_endpoint(self.client.token_url)})"

    def access_token(self) -> str:
        token = self.cache.get()
        if token:
            return token
        self.settle_journal()
        stored = self._stored_access()
        if stored:
            return stored
        with self.store.refresh_lock(self.mailbox, self.client.timeout * 2):
            stored = self._stored_access()  # another process may have refreshed meanwhile
            if stored:
                return stored
            return self._refresh()

    def invalidate(self, token: str) -> None:
        self.cache.drop(token)
        self.store.drop_access_token(self.mailbox, token)

    def settle_journal(self) -> None:
        """A rotated refresh token that arrived but was not stored (a crash): store it."""
        pending = self.journal.read(self.mailbox)
        if pending is None:
            return
        generation, refresh_token = pending
        if self.store.rotate(self.mailbox, generation, refresh_token, None, 0.0):
            log.warning("mailbox %s: stored the rotated OAuth2 refresh token kept in the "
                        "journal (the process that received it stopped before storing it)",
                        self.mailbox)
        self.journal.clear(self.mailbox)

    def renew_if_idle(self, idle_seconds: float) -> bool:
        """Refresh now when the refresh token was last used over ``idle_seconds`` ago, even if
        no poll needed a new access token: a provider ends a refresh token unused for long
        (Microsoft: 90 days, AADSTS700082). True when it refreshed."""
        self.settle_journal()
        if not self.store.idle(self.mailbox, idle_seconds):
            return False
        with self.store.refresh_lock(self.mailbox, self.client.timeout * 2):
            if not self.store.idle(self.mailbox, idle_seconds):
                return False  # another process refreshed meanwhile
            self._refresh()
        return True

    def _stored_access(self) -> str | None:
        record = self.store.get(self.mailbox)
        if record and record.access_token and record.access_expires_at - self.cache.skew > time.time():
            return self.cache.put(record.access_token, record.access_expires_at)
        return None

    def _refresh(self) -> str:
        record = self.store.get(self.mailbox)
        if (record is None or not record.refresh_token) and self.seed:
            self.store.authorize(self.mailbox, self.seed, actor_detail="refresh_token_file")
            record = self.store.get(self.mailbox)
        if record is None or not record.refresh_token:
            raise OAuthGrantError(
                f"mailbox {self.mailbox} is not authorized for OAuth2 yet: run `email-rag "
                f"mailboxes authorize {self.mailbox}`", error="not_authorized")
        try:
            answer = self._asking.request(self.client, {"grant_type": "refresh_token",
                                                        "refresh_token": record.refresh_token})
        except OAuthGrantError as e:
            self.store.refresh_failed(self.mailbox, str(e), e.context.get("error", ""))
            raise OAuthGrantError(
                f"{e} - mailbox {self.mailbox} must be authorized again: run `email-rag "
                f"mailboxes authorize {self.mailbox}` (polling keeps retrying and resumes "
                "then; nothing is lost)", **e.context) from None
        self.refreshes += 1
        rotated = answer.refresh_token if answer.refresh_token != record.refresh_token else None
        if rotated:
            self.journal.write(self.mailbox, record.generation, rotated)
        self.store.rotate(self.mailbox, record.generation, rotated, answer.access_token,
                          answer.expires_at)
        if rotated:
            self.journal.clear(self.mailbox)
        return self.cache.put(answer.access_token, answer.expires_at)


def renew_idle_refresh_tokens(sources: Iterable[TokenSource | None],
                              idle_seconds: float) -> dict[str, str]:
    """The scheduler's periodic renewal: every refresh-token mailbox whose refresh token was
    last used over ``idle_seconds`` ago is refreshed (``renew_if_idle``). A refused refresh is
    the same ALARM + audit as in a poll; one mailbox's failure does not stop the others.
    Returns what happened per mailbox (renewed / not due / failed: reason)."""
    out: dict[str, str] = {}
    if idle_seconds <= 0:
        return out
    for source in sources:
        if not isinstance(source, RefreshTokenSource):
            continue
        try:
            out[source.mailbox] = "renewed" if source.renew_if_idle(idle_seconds) else "not due"
        except (OAuthGrantError, OAuthUnavailableError) as e:
            log.warning("mailbox %s: renewing the idle OAuth2 refresh token failed: %s",
                        source.mailbox, e)
            out[source.mailbox] = f"failed: {e}"
    return out


# --- the one-time authorization by an admin (``email-rag mailboxes authorize``) ---
def pkce_pair() -> tuple[str, str]:
    """(code_verifier, code_challenge) for PKCE S256 (RFC 7636)."""
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def authorization_url(authorize_url: str, client: OAuthClient, redirect_uri: str, state: str,
                      code_challenge: str, login_hint: str = "") -> str:
    """The page an admin opens to consent (authorization-code grant with PKCE)."""
    query = {"client_id": client.client_id, "response_type": "code",
             "redirect_uri": redirect_uri, "scope": " ".join(client.scopes), "state": state,
             "code_challenge": code_challenge, "code_challenge_method": "S256",
             "access_type": "offline", "prompt": "consent"}
    if login_hint:
        query["login_hint"] = login_hint
    sep = "&" if "?" in authorize_url else "?"
    return authorize_url + sep + urllib.parse.urlencode(query)


def code_from(pasted: str, state: str = "") -> str:
    """The code from what the admin pasted: the code itself, or the whole redirect URL
    (whose ``state`` must match)."""
    text = pasted.strip()
    if "code=" not in text:
        return text
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(text).query or text))
    if state and query.get("state") not in (None, state):
        raise OAuthGrantError("the pasted address belongs to another authorization (state "
                              "differs); start again", error="state_mismatch")
    if "error" in query:
        raise OAuthGrantError(f"the consent page answered {query['error']}: "
                              f"{query.get('error_description', '')}", error=query["error"])
    return query.get("code", "")


def exchange_code(client: OAuthClient, code: str, redirect_uri: str,
                  code_verifier: str) -> TokenAnswer:
    answer = request_token(client, {"grant_type": "authorization_code", "code": code,
                                    "redirect_uri": redirect_uri,
                                    "code_verifier": code_verifier})
    if not answer.refresh_token:
        raise OAuthGrantError("the token endpoint granted no refresh token: add the "
                              "offline_access scope (Microsoft) or access_type=offline consent "
                              "(Google), then authorize again", error="no_refresh_token")
    return answer


@dataclass(frozen=True)
class DeviceCode:
    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    interval: float
    expires_at: float
    message: str = ""


def start_device_flow(client: OAuthClient, device_url: str) -> DeviceCode:
    """Device-authorization request (RFC 8628): the code the admin types at the URL."""
    body = {"client_id": client.client_id, "scope": " ".join(client.scopes)}
    request = urllib.request.Request(device_url, data=urllib.parse.urlencode(body).encode(),
                                     method="POST", headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=client.timeout) as response:
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise OAuthGrantError(f"device authorization at {_endpoint(device_url)} refused: "
                              f"HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise OAuthUnavailableError(f"device authorization at {_endpoint(device_url)} cannot "
                                    f"be reached: {e}") from None
    return DeviceCode(str(answer["device_code"]), str(answer["user_code"]),
                      str(answer.get("verification_uri") or answer.get("verification_url")),
                      float(answer.get("interval") or 5),
                      time.time() + float(answer.get("expires_in") or 900),
                      str(answer.get("message") or ""))


def finish_device_flow(client: OAuthClient, device: DeviceCode, sleep=time.sleep) -> TokenAnswer:
    """Poll the token endpoint until the admin consented (or the code expired)."""
    interval = device.interval
    while time.time() < device.expires_at:
        sleep(interval)
        try:
            return request_token(client, {
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": device.device_code})
        except OAuthGrantError as e:
            code = e.context.get("error")
            if code == "authorization_pending":
                continue
            if code == "slow_down":
                interval += 5
                continue
            raise
    raise OAuthGrantError("the device code expired before the consent was given; start "
                          "again", error="expired_token")
