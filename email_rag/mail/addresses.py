"""Address lists of untrusted headers, and the rule that says whom a reply goes to.

``parse_addresses(value)`` splits a From/To/Cc/Reply-To value into (display name,
address) pairs the way mail clients do: commas inside quotes, comments, angle brackets
and RFC 2047 encoded-words do not split; the address is the angle-addr when there is
one - text in the display name is never taken as the address
(``alice@example.com <bob@example.com>`` is bob) - and display names are decoded.

``choose_reply`` is the reply rule staff see on the draft page before approving
(stored on the mail as ``reply_addr`` and ``reply_rule``):

  situation                                           | reply goes to | draft?
  ----------------------------------------------------|---------------|------------------
  From names no usable address                        | nobody        | no: manual
  From names several addresses                        | nobody        | no: manual
  Reply-To names several addresses                    | nobody        | no: manual
  Reply-To names one plausible address                | Reply-To      | yes
  Reply-To is unusable (invalid, empty ``<>``, no     | From          | yes (rule says why)
  address at all), ours, or a no-reply address        |               |
  no Reply-To                                         | From          | yes
  the address a reply would go to is a no-reply       | nobody        | no: the no-reply
  address, or From names an empty address (``<>``)    |               | list (below)

"Plausible": one syntactically valid address (local@domain.tld, no spaces or
brackets), not one of our own mailbox addresses, not a no-reply address.
"No-reply": local parts no-reply / noreply / no_reply / donotreply / do-not-reply /
mailer-daemon / postmaster (with any +tag or suffix). A rule starting with
``NO_REPLY_SENDER`` (``ReplyChoice.no_reply_sender``) is a sender that takes no replies:
the classify step puts the mail on the no-reply list staff confirm
(``no_reply_suggested``, ``review.no_reply``), never a draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?]*\?=")
_VALID = re.compile(r"^[^\s@<>()\[\],;:\"\\]+@[^\s@<>()\[\],;:\"\\]+\.[^\s@<>()\[\],;:\"\\]+$")
_NO_REPLY = re.compile(r"^(no[-_.]?reply|do[-_.]?not[-_.]?reply|donotreply|mailer-daemon|"
                       r"postmaster)([-+_.].*)?@", re.I)
_EMPTY_ADDR = re.compile(r"<\s*>")
NO_REPLY_SENDER = "no-reply sender"
_SIMPLE = re.compile(r"^\s*(?:([^\"<>,;:@()\\=]*?)\s*<([^<>\s,;:\"()\\]+@[^<>\s,;:\"()\\]+)>"
                     r"|([^<>\s,;:\"()\\]+@[^<>\s,;:\"()\\]+))\s*$")


def _split(value: str) -> list[str]:
    """Split an address list at commas/semicolons outside quotes, comments, angle
    brackets and encoded-words."""
    out, cur = [], []
    quoted, depth, angle, i = False, 0, False, 0
    while i < len(value):
        c = value[i]
        if c == "\\" and (quoted or depth):
            cur.append(value[i:i + 2])
            i += 2
            continue
        if not quoted and not depth and c == "=" and value.startswith("=?", i):
            m = _ENCODED_WORD.match(value, i)
            if m:
                cur.append(m.group(0))
                i = m.end()
                continue
        if c == '"' and not depth:
            quoted = not quoted
        elif not quoted and c == "(":
            depth += 1
        elif not quoted and c == ")" and depth:
            depth -= 1
        elif not quoted and not depth and c == "<":
            angle = True
        elif not quoted and not depth and c == ">":
            angle = False
        elif c in ",;" and not (quoted or depth or angle):
            out.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def _one(part: str, decode) -> tuple[str, str] | None:
    # a group's display name ("Team: a@b, c@d;") is not part of the first address
    colon = re.match(r'^[^"<>@(]*:\s*', part)
    if colon and "<" not in part[:colon.end()]:
        part = part[colon.end():]
    lt = part.rfind("<")
    if lt != -1 and part.find(">", lt) != -1:
        addr = part[lt + 1:part.find(">", lt)].strip()
        display = part[:lt] + part[part.find(">", lt) + 1:]
    else:
        display, addr = "", re.sub(r"\([^)]*\)", " ", part).strip()
        comment = re.search(r"\(([^)]*)\)", part)
        display = comment.group(1) if comment else ""
        if " " in addr:  # "bob@example.com extra words": no single address
            words = [w for w in addr.split() if "@" in w]
            addr = words[0] if len(words) == 1 else addr
    addr = addr.strip().strip("<>").strip()
    if addr.lower().startswith("mailto:"):
        addr = addr[7:]
    if "@" not in addr:
        return None
    display = display.strip().strip('"').strip()
    display = display.replace('\\"', '"')
    return (decode(display) if display else "", addr)


def parse_addresses(value: str, decode=lambda s: s) -> list[tuple[str, str]]:
    """(display name, address) pairs of one header value (``decode``: RFC 2047 decoding of
    display names). Parts without an ``@`` (group debris, "undisclosed-recipients:;") are
    dropped."""
    if not value:
        return []
    if '"' not in value and "(" not in value and "=?" not in value:
        simple = [_SIMPLE.match(p) for p in value.split(",")]
        if all(simple):
            return [((decode(m.group(1)) if m.group(1) else ""), m.group(2) or m.group(3))
                    for m in simple if m]
    parts = _split(value) if ("," in value or ";" in value) else [value.strip()]
    return [pair for p in parts if (pair := _one(p, decode))]


def valid_address(addr: str | None) -> bool:
    return bool(addr) and bool(_VALID.match(addr or "")) and len(addr or "") <= 320


def no_reply_address(addr: str) -> bool:
    return bool(_NO_REPLY.match(addr or ""))


@dataclass(frozen=True)
class ReplyChoice:
    addr: str | None  # None: nobody can be answered automatically (the mail goes to a human)
    rule: str  # why, in words staff read on the draft page

    @property
    def ok(self) -> bool:
        return self.addr is not None

    @property
    def no_reply_sender(self) -> bool:
        """The sender takes no replies (a no-reply or empty address): no draft, staff see
        the mail on the no-reply list."""
        return self.addr is None and self.rule.startswith(NO_REPLY_SENDER)


def choose_reply(from_addrs: list[str], reply_to: list[str],
                 own: frozenset[str] | set[str] = frozenset(), *,
                 reply_to_field: str | None = None,
                 from_field: str | None = None) -> ReplyChoice:
    """Whom a reply to this mail goes to, and why (the rule in the module docstring).

    ``reply_to_field`` / ``from_field``: the decoded header values when the header is
    present (``MailHeaders``), so a header that names no address is told apart from a
    missing one."""
    own = {a.lower() for a in own}
    senders = list(dict.fromkeys(a for a in from_addrs if a))
    if not senders:
        if from_field and _EMPTY_ADDR.search(from_field):
            return ReplyChoice(None, f"{NO_REPLY_SENDER}: From {from_field[:100]!r} names an "
                                     "empty address (<>): nobody can be answered")
        return ReplyChoice(None, "no sender address in From: nobody to reply to")
    if len(senders) > 1:
        return ReplyChoice(None, f"From names {len(senders)} sender addresses "
                                 f"({', '.join(senders[:5])}): a human decides whom to answer")
    sender = senders[0]
    replies = list(dict.fromkeys(a for a in reply_to if a))
    if len(replies) > 1:
        return ReplyChoice(None, f"Reply-To names {len(replies)} addresses "
                                 f"({', '.join(replies[:5])}): a human decides whom to answer")
    why_not = ""
    if not replies and reply_to_field and reply_to_field.strip():
        why_not = f"Reply-To {reply_to_field.strip()[:100]!r} names no address"
    if replies:
        r = replies[0]
        if not valid_address(r):
            why_not = f"Reply-To {r!r} is not a valid address"
        elif r.lower() in own:
            why_not = f"Reply-To {r} is our own address"
        elif no_reply_address(r):
            why_not = f"Reply-To {r} is a no-reply address"
        elif r.lower() == sender.lower():
            return ReplyChoice(r, "From (Reply-To names the same address)")
        else:
            return ReplyChoice(r, f"Reply-To: the sender {sender} asks for replies to {r}")
    if not valid_address(sender):
        return ReplyChoice(None, f"sender address {sender!r} is not a valid address"
                                 + (f"; {why_not}" if why_not else "")
                                 + ": a human decides whom to answer")
    if no_reply_address(sender):
        return ReplyChoice(None, f"{NO_REPLY_SENDER}: From {sender} is a no-reply address"
                                 + (f" and {why_not}" if why_not else " and there is no "
                                    "Reply-To") + ": nobody can be answered")
    if why_not:
        return ReplyChoice(sender, f"From ({why_not}, ignored)")
    return ReplyChoice(sender, "From (no Reply-To)")


def stored_reply(mail: dict) -> ReplyChoice:
    """The reply decision stored with a mail row: the one place the draft step, the
    approval, the send path and the draft page read it from. Rows stored before the rule
    existed (``reply_rule`` NULL) are answered to their From address."""
    if mail.get("reply_rule") is not None:
        return ReplyChoice(mail.get("reply_addr") or None, str(mail["reply_rule"]))
    addr = (mail.get("from_addr") or "").strip()
    if "@" in addr and " " not in addr:
        return ReplyChoice(addr, "From (stored before the reply rule existed)")
    return ReplyChoice(None, "no sender address in From: nobody to reply to")
