"""The fields of a mailbox's settings, one list for the CLI flags and the web form.

``FIELDS`` is read off ``MailboxConfig`` (and its ``oauth``, ``smtp`` and ``service_level``
sections): one ``FieldSpec`` per setting, with its dotted key (``smtp.host``), its flag
(``--smtp-host``), its kind and its description. ``email-rag mailboxes add|edit`` makes one
flag of each, the web's mailbox page one input; both hand the values to ``apply``, which
builds the settings as entered (``raw``: what an admin set, the provider preset is applied
when the settings are read, so a later preset change reaches every mailbox that did not
override it).

Secrets (``password``, ``smtp.password``, ``oauth.client_secret``) are kept apart from
the rest (``split_secrets``): they are stored encrypted, never shown back, never written
to a log or an audit entry; ``public`` shows only whether each is set.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr

from .errors import ConfigError
from .settings import MailboxConfig

SECTIONS = {"oauth": "OAuth2", "smtp": "SMTP", "service_level": "service level"}
SKIPPED = {"name", "ssl"}  # the key itself; the older switch for security 'tls'


@dataclass(frozen=True)
class FieldSpec:
    key: str  # dotted: host, smtp.host, service_level.hours
    kind: str  # str | int | float | bool | list | secret | choice | datetime | dates
    description: str
    choices: tuple[str, ...] = ()
    required: bool = False  # within its section (smtp.host, service_level.first_response_hours)

    @property
    def flag(self) -> str:
        return "--" + self.key.replace(".", "-").replace("_", "-")

    @property
    def dest(self) -> str:
        return self.key.replace(".", "__")

    @property
    def section(self) -> str:
        return self.key.partition(".")[0] if "." in self.key else ""

    @property
    def secret(self) -> bool:
        return self.kind == "secret"


def _kind(annotation: Any) -> tuple[str, tuple[str, ...]]:
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return _kind(inner[0])
    if origin is Literal:
        return "choice", tuple(str(a) for a in get_args(annotation))
    if origin is list:
        return ("dates" if get_args(annotation)[0] is date else "list"), ()
    return {SecretStr: "secret", bool: "bool", int: "int", float: "float",
            datetime: "datetime"}.get(annotation, "str"), ()


def _fields(model: type[BaseModel], prefix: str = "") -> list[FieldSpec]:
    out: list[FieldSpec] = []
    for name, info in model.model_fields.items():
        if not prefix and name in SKIPPED:
            continue
        annotation = info.annotation
        inner = [a for a in get_args(annotation) if isinstance(a, type)
                 and issubclass(a, BaseModel)]
        if inner:
            out += _fields(inner[0], name + ".")
            continue
        kind, choices = _kind(annotation)
        out.append(FieldSpec(prefix + name, kind, info.description or "", choices,
                             bool(prefix) and info.is_required()))
    return out


FIELDS: tuple[FieldSpec, ...] = tuple(_fields(MailboxConfig))
BY_KEY = {f.key: f for f in FIELDS}
SECRET_KEYS = tuple(f.key for f in FIELDS if f.secret)


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED_NAMES = {"new", "check"}  # pages of the web admin


def check_name(name: str) -> str:
    """A mailbox's name: letters, digits, '.', '_', '-' (it is part of addresses)."""
    if not NAME.match(name or "") or name.lower() in RESERVED_NAMES:
        raise ConfigError(f"mailbox name {name!r}: use 1-64 letters, digits, '.', '_' or '-' "
                          f"(not {', '.join(sorted(RESERVED_NAMES))})")
    return name


def parse(spec: FieldSpec, text: str) -> Any:
    """A value typed at the CLI or in the form, as the settings JSON holds it; an empty
    one means "not set" (None: the default, or the provider preset's value)."""
    text = text if spec.kind == "secret" else text.strip()
    if not text:
        return None
    if spec.kind in ("str", "secret"):
        return text
    if spec.kind == "choice" and text in spec.choices:
        return text
    try:
        if spec.kind == "int":
            return int(text)
        if spec.kind == "float":
            return float(text)
        if spec.kind == "bool":
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if spec.kind in ("list", "dates"):
            items = [p.strip() for p in text.replace("\n", ",").split(",") if p.strip()]
            if spec.kind == "dates":
                return [date.fromisoformat(i).isoformat() for i in items]
            return items
        if spec.kind == "datetime":
            return datetime.fromisoformat(text).isoformat()
    except ValueError:
        pass
    wanted = {"choice": "one of " + ", ".join(c or '""' for c in spec.choices),
              "int": "a whole number", "float": "a number", "bool": "yes or no",
              "dates": "dates like 2026-12-24, separated by commas",
              "datetime": "an ISO date or time like 2026-11-01"}.get(spec.kind, "a value")
    raise ConfigError(f"{spec.flag}: {text!r} is not {wanted}")


def apply(raw: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with ``changes`` (dotted key -> value; None removes the key; a section whose
    keys are all gone is removed with them)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for key, value in changes.items():
        if key not in BY_KEY and key not in SECTIONS:
            raise ConfigError(f"unknown mailbox setting {key!r}")
        if key in SECTIONS:
            if value is None:
                out.pop(key, None)
            continue
        section, _, leaf = key.rpartition(".")
        target = out.setdefault(section, {}) if section else out
        if value is None:
            target.pop(leaf, None)
        else:
            target[leaf] = value
        if section and not target:
            out.pop(section, None)
    return out


def clean(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without the keys whose value is None (not set), sections included."""
    out = {k: clean(v) if isinstance(v, dict) else v for k, v in raw.items() if v is not None}
    return {k: v for k, v in out.items() if v != {}}


def get(raw: dict[str, Any], key: str) -> Any:
    section, _, leaf = key.rpartition(".")
    holder = raw.get(section) if section else raw
    return holder.get(leaf) if isinstance(holder, dict) else None


def split_secrets(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(the settings without secrets, the secrets by dotted key)."""
    secrets = {k: str(v) for k in SECRET_KEYS if (v := get(raw, k))}
    return apply(raw, dict.fromkeys(SECRET_KEYS)), secrets


def join_secrets(public_raw: dict[str, Any], secrets: dict[str, str]) -> dict[str, Any]:
    return apply(public_raw, {k: v for k, v in secrets.items() if k in SECRET_KEYS})


def build(name: str, raw: dict[str, Any]) -> MailboxConfig:
    """The mailbox's settings (preset applied, checked); ConfigError says what is wrong."""
    from pydantic import ValidationError

    try:
        return MailboxConfig.model_validate({**raw, "name": name})
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: "
                             f"{err['msg'].removeprefix('Value error, ')}"
                             for err in e.errors())
        raise ConfigError(f"mailbox {name}: {problems}") from None


def public(raw: dict[str, Any], secrets: set[str] | dict[str, str]) -> dict[str, Any]:
    """The settings as shown (``--json``, the form): every secret only as set / not set."""
    shown, _ = split_secrets(raw)
    shown["secrets_set"] = sorted(secrets)
    return shown


def changed_keys(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The dotted keys whose value differs (what an audit entry names; never the values)."""
    return [f.key for f in FIELDS if get(before, f.key) != get(after, f.key)]
