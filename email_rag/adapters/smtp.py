"""SMTP adapter (smtplib): the only module that talks SMTP.

It sends one message and says which of three things happened, because the
caller must treat them differently:

| situation | error | sent? |
|---|---|---|
| connection refused / lost before DATA, 4xx at MAIL/RCPT/DATA | SmtpTransientError | no (known) |
| 5xx at MAIL/RCPT/DATA or after the body | SmtpPermanentError | no (known) |
| 4xx after the body | SmtpTransientError | no (known) |
| timeout or connection lost after the body was sent, before the reply | SmtpOutcomeUnknownError | maybe |
| 250 after the body | (returns the reply) | yes |

One call is one try: the adapter never retries by itself. A transient error is retried by
the send job's cycle, four attempts in all by default (the first one and three retries,
``EMAIL_RAG_MAX_ATTEMPTS``, ``core.retry``); an unknown outcome is reconciled, never
retried blindly (``sending.sender``).
"""

from __future__ import annotations

import re
import smtplib
from dataclasses import dataclass

from ..core.errors import SmtpOutcomeUnknownError, SmtpPermanentError, SmtpTransientError


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    user: str = ""
    password: str = ""
    starttls: bool = False
    timeout: float = 30.0

    def __repr__(self) -> str:
        return f"SmtpConfig({self.host}:{self.port}, user={self.user!r})"

    @classmethod
    def from_settings(cls, s) -> SmtpConfig:
        return cls(s.smtp_host, s.smtp_port, s.smtp_user, s.smtp_password.get_secret_value(),
                   s.smtp_starttls, s.smtp_timeout)


def _reply_error(stage: str, code: int, text: bytes | str) -> Exception:
    msg = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    answer = f"{code} {msg}".strip()
    if 500 <= code < 600:
        return SmtpPermanentError(f"relay refused at {stage}: {answer}", code=code, answer=answer)
    return SmtpTransientError(f"relay deferred at {stage}: {answer}", code=code, answer=answer)


class SmtpSender:
    def __init__(self, config: SmtpConfig) -> None:
        self.config = config

    def send(self, message: bytes, mail_from: str, rcpt_to: list[str]) -> str:
        """Send one message; returns the relay's final answer (e.g. '250 2.0.0 Ok')."""
        c = self.config
        try:
            smtp = smtplib.SMTP(c.host, c.port, timeout=c.timeout)
        except (OSError, smtplib.SMTPException) as e:
            raise SmtpTransientError(f"cannot connect to {c.host}:{c.port}: {e}") from e
        body_sent = False
        try:
            smtp.ehlo()
            if c.starttls:
                smtp.starttls()
                smtp.ehlo()
            if c.user:
                smtp.login(c.user, c.password)
            code, text = smtp.mail(mail_from)
            if code != 250:
                raise _reply_error("MAIL FROM", code, text)
            for rcpt in rcpt_to:
                code, text = smtp.rcpt(rcpt)
                if code not in (250, 251):
                    raise _reply_error(f"RCPT TO {rcpt}", code, text)
            code, text = smtp.docmd("DATA")
            if code != 354:
                raise _reply_error("DATA", code, text)
            body_sent = True
            smtp.send(_dot_stuffed(message))
            code, text = smtp.getreply()
            if code != 250:
                raise _reply_error("end of data", code, text)
            return f"{code} {text.decode(errors='replace')}"
        except smtplib.SMTPAuthenticationError as e:
            raise SmtpPermanentError(f"SMTP login refused for user {c.user!r}: {e.smtp_code}") from e
        except (SmtpTransientError, SmtpPermanentError):
            raise
        except (TimeoutError, OSError, smtplib.SMTPException) as e:
            if body_sent:
                raise SmtpOutcomeUnknownError(
                    f"connection lost or timed out after the message body was sent ({e}); "
                    "the relay may have accepted it") from e
            raise SmtpTransientError(f"SMTP conversation failed before DATA: {e}") from e
        finally:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()


def _dot_stuffed(message: bytes) -> bytes:
    """CRLF line ends and leading dots doubled, as smtplib.SMTP.data() does."""
    data = re.sub(rb"(?:\r\n|\n|\r(?!\n))", b"\r\n", message)
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"
