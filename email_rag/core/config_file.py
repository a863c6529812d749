"""The settings file (TOML) beside the environment, and where each setting came from.

One rule of precedence, highest first (docs/settings.md):

1. the process environment (``EMAIL_RAG_DB_HOST=...``),
2. the ``.env`` file in the working directory,
3. the settings file: ``$EMAIL_RAG_CONFIG_FILE``, else ``email-rag.toml`` in the working
   directory when there is one,
4. the default in ``email_rag/core/settings.py``.

The environment wins because it is what a container, a unit file or a test sets for one
process (and where orchestrators put secrets); the file is the site's base. The file's keys
are the settings' names without the prefix, in lower case (``db_host = "mariadb"``;
``[[mailboxes]]`` tables for the mailbox list). A key the settings do not know is refused
(a typo would otherwise change nothing, silently); so is a file that does not parse, and a
``EMAIL_RAG_CONFIG_FILE`` naming no file.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| no file, no ``EMAIL_RAG_CONFIG_FILE`` | - | yes: environment and defaults | - |
| ``EMAIL_RAG_CONFIG_FILE`` names no readable file | no | yes: nothing started | ``ConfigError`` naming the path; fix it |
| the file is not TOML | no | yes: nothing started | ``ConfigError`` with the line and column |
| a key of the file is no setting | no | yes: nothing started | ``ConfigError`` naming it (and the setting it resembles) |
| a value of the file is invalid | no | yes: nothing started | pydantic's error names the setting, as for the environment |
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource
from pydantic_settings.sources import DotEnvSettingsSource, EnvSettingsSource

from .errors import ConfigError
from .redact import redact_text

CONFIG_FILE_ENV = "EMAIL_RAG_CONFIG_FILE"
DEFAULT_FILE = Path("email-rag.toml")
MASKED = "**********"  # how a secret that is set is shown (pydantic's JSON of a SecretStr)


def config_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The settings file in force: the one ``EMAIL_RAG_CONFIG_FILE`` names (it must exist),
    else ``email-rag.toml`` in the working directory, else none."""
    environ = os.environ if environ is None else environ
    named = environ.get(CONFIG_FILE_ENV, "").strip()
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"{CONFIG_FILE_ENV}={named}: no such file (the settings file "
                              "it names must exist; unset it to use the environment alone)")
        return path
    return DEFAULT_FILE if DEFAULT_FILE.is_file() else None


def read(path: Path, known: set[str]) -> dict[str, Any]:
    """The file's settings, every key checked against ``known``."""
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"settings file {path}: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"settings file {path} is not valid TOML: {e}") from e
    unknown = sorted(set(data) - known)
    if unknown:
        hints = [f"{k} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(
            k, known, n=1)) else k for k in unknown]
        raise ConfigError(f"settings file {path}: unknown setting(s) {', '.join(hints)}; "
                          "keys are the settings' names without EMAIL_RAG_, in lower case")
    return data


class FileSource(PydanticBaseSettingsSource):
    """The settings file as a pydantic-settings source (below the environment and .env)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self.path = path
        self.data = read(path, set(settings_cls.model_fields)) if path else {}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class Entry:
    """One effective setting: its name, variable, value as shown (secrets masked) and where
    it came from (``env``, ``.env``, ``file`` or ``default``)."""

    key: str
    variable: str
    value: Any
    source: str
    secret: bool

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "variable": self.variable, "value": self.value,
                "source": self.source, "secret": self.secret}


def origins(settings_cls: type[BaseSettings], env_file: Path = Path(".env")) -> dict[str, str]:
    """Where each setting that is set came from, by the precedence above (the others: the
    default)."""
    env = EnvSettingsSource(settings_cls)()
    dotenv = DotEnvSettingsSource(settings_cls, env_file=env_file)() \
        if env_file.is_file() else {}
    path = config_file()
    file = FileSource(settings_cls, path)() if path else {}
    found: dict[str, str] = {}
    for name in settings_cls.model_fields:
        for label, values in (("env", env), (".env", dotenv), ("file", file)):
            if name in values:
                found[name] = label
                break
    return found


def effective(settings: BaseSettings, found: Mapping[str, str]) -> list[Entry]:
    """Every setting of ``settings`` as shown to an operator: its value (a secret masked,
    credentials in a URL masked, nested secrets such as a mailbox's password masked) and
    its origin."""
    prefix = type(settings).model_config.get("env_prefix", "")
    shown = settings.model_dump(mode="json")  # a SecretStr that is set: **********
    entries = []
    for name, field in type(settings).model_fields.items():
        secret = "SecretStr" in str(field.annotation)
        entries.append(Entry(name, f"{prefix}{name}".upper(), _masked(shown[name]),
                             found.get(name, "default"), secret))
    return entries


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    return value
