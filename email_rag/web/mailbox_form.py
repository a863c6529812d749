"""The mailbox form of the web admin: one input per setting (``core.mailbox_fields.FIELDS``,
the same list as the CLI's flags), grouped in sections, with the labels in the admin's
language. A secret is never put back into the page: its input stays empty ("set" or "not
set" beside it) and an empty one keeps the stored secret."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import mailbox_fields as mf
from ..sending.outcome import N_

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (N_("Mailbox"), ("provider", "username", "password", "auth", "address")),
    (N_("IMAP server"), ("host", "port", "security", "ca_file", "folders", "sent_folder",
                         "provider_files_sent")),
    (N_("Sign-in with OAuth2 (Microsoft 365, Google, another provider)"), tuple(
        f.key for f in mf.FIELDS if f.section == "oauth")),
    (N_("SMTP server of the replies (empty: the global relay)"), tuple(
        f.key for f in mf.FIELDS if f.section == "smtp")),
    (N_("Replies"), ("team_name", "signature")),
    (N_("History and retention"), ("history_cutoff", "retention_days")),
    (N_("Service level (empty: no due times)"), tuple(
        f.key for f in mf.FIELDS if f.section == "service_level")),
)

LABELS = {
    "provider": N_("Provider"), "username": N_("User name (login)"), "password": N_("Password"),
    "auth": N_("Sign-in method"), "address": N_("Reply address (From)"),
    "host": N_("Host"), "port": N_("Port"), "security": N_("Security"),
    "ca_file": N_("CA file (a private CA)"), "folders": N_("Folders polled"),
    "sent_folder": N_("Sent folder"), "provider_files_sent": N_("The server files sent mail itself"),
    "oauth.grant": N_("Grant"), "oauth.client_id": N_("Client ID"),
    "oauth.client_secret": N_("Client secret"),
    "oauth.client_secret_file": N_("Client secret file"), "oauth.tenant": N_("Tenant"),
    "oauth.token_url": N_("Token URL"), "oauth.authorize_url": N_("Authorization URL"),
    "oauth.device_url": N_("Device-code URL"), "oauth.scopes": N_("Scopes"),
    "oauth.redirect_uri": N_("Redirect URI of the command line"),
    "oauth.refresh_token_file": N_("Refresh token file"),
    "smtp.host": N_("Host"), "smtp.port": N_("Port"), "smtp.security": N_("Security"),
    "smtp.ca_file": N_("CA file (a private CA)"), "smtp.username": N_("User name (login)"),
    "smtp.password": N_("Password"), "smtp.auth": N_("Sign-in method"),
    "team_name": N_("Team name under the sign-off"), "signature": N_("Signature"),
    "history_cutoff": N_("History cut-off (older mail is history)"),
    "retention_days": N_("Retention in days (0: keep)"),
    "service_level.time_zone": N_("Time zone"), "service_level.days": N_("Working days"),
    "service_level.hours": N_("Working hours"),
    "service_level.first_response_hours": N_("First reply due after (business hours)"),
    "service_level.holidays": N_("Holidays"),
}
PLACEHOLDERS = {
    "host": "127.0.0.1", "port": "143 / 993", "security": "auto, tls, starttls, plain",
    "folders": "INBOX", "oauth.scopes": "offline_access, ...", "smtp.port": "587",
    "smtp.security": "auto, tls, starttls, plain", "history_cutoff": "2026-11-01",
    "service_level.time_zone": "Europe/Berlin", "service_level.days": "mon-fri",
    "service_level.hours": "08:00-17:00", "service_level.holidays": "2026-12-24, 2026-12-25",
}
CHOICE_NAMES = {"": N_("(default)"), "microsoft365": "Microsoft 365", "gmail": "Gmail / Google",
                "password": N_("password"), "xoauth2": "OAuth2 (XOAUTH2)",
                "oauthbearer": "OAuth2 (OAUTHBEARER)", "refresh_token": N_("a person signs in"),
                "client_credentials": N_("app-only (client credentials)")}


@dataclass(frozen=True)
class FormField:
    key: str
    label: str
    kind: str
    value: str
    choices: tuple[tuple[str, str], ...] = ()
    placeholder: str = ""
    secret_set: bool = False

    @property
    def secret(self) -> bool:
        return self.kind == "secret"

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def multiline(self) -> bool:
        return self.key == "signature"


SIGN_IN = {"microsoft365": N_("Sign in with Microsoft"), "gmail": N_("Sign in with Google")}


def sign_in_label(config: Any) -> str | None:
    """The sign-in button's text of a mailbox a person consents for (None: no button)."""
    if config is None or config.oauth is None or config.oauth.grant != "refresh_token":
        return None
    return SIGN_IN.get(config.provider, N_("Sign in with the OAuth2 provider"))


def sections(raw: dict[str, Any], secrets_set: set[str] | tuple[str, ...] = ()) -> list[
        tuple[str, list[FormField]]]:
    """The form's sections with each input's current value (as entered; never a secret)."""
    out = []
    for title, keys in SECTIONS:
        fields = []
        for key in keys:
            spec = mf.BY_KEY[key]
            value = "" if spec.secret else _text(mf.get(raw, key))
            choices: tuple[tuple[str, str], ...] = ()
            if spec.kind == "choice":
                choices = tuple((c, CHOICE_NAMES.get(c, c))
                                for c in dict.fromkeys(("", *spec.choices)))
            elif spec.kind == "bool":
                choices = (("", CHOICE_NAMES[""]), ("true", N_("yes")), ("false", N_("no")))
            fields.append(FormField(key, LABELS[key], spec.kind, value, choices,
                                    PLACEHOLDERS.get(key, ""), key in secrets_set))
        out.append((title, fields))
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def changes(form: Any) -> dict[str, Any]:
    """The form's values as changes (dotted key -> value; empty: back to the default); a
    secret left empty is not a change (the stored one stays)."""
    out: dict[str, Any] = {}
    for spec in mf.FIELDS:
        text = form.get(spec.key)
        if not isinstance(text, str):
            continue
        if spec.secret and not text:
            continue
        out[spec.key] = mf.parse(spec, text)
    return out
