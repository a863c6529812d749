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

from ..core.catalog import N_, read_back

_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?]*\?=")
_VALID = re.compile(r"^[^\s@<>()\[\],;:\"\\]+@[^\s@<>()\[\],;:\"\\]+\.[^\s@<>()\[\],;:\"\\]+$")
_NO_REPLY = re.compile(r"^(no[-_.]?reply|do[-_.]?not[-_.]?reply|donotreply|mailer-daemon|"
                       r"postmaster)([-+_.].*)?@", re.I)
_EMPTY_ADDR = re.compile(r"<\s*>")
NO_REPLY_SENDER = "no-reply sender"


# The rule's wordings, with their values as %(name)s: stored in English (``reply_rule``),
# read back by ``rule_parts`` and shown translated on the draft and mail pages. ``why_not``
# is itself one of the wordings (why a Reply-To was not used).
NOT_USED_NO_ADDRESS = N_("Reply-To %(value)s names no address")
NOT_USED_INVALID = N_("Reply-To %(addr)s is not a valid address")
NOT_USED_OURS = N_("Reply-To %(addr)s is our own address")
NOT_USED_NO_REPLY = N_("Reply-To %(addr)s is a no-reply address")
EMPTY_FROM = N_("no-reply sender: From %(value)s names an empty address (<>): nobody can be "
                "answered")
NO_SENDER = N_("no sender address in From: nobody to reply to")
SEVERAL_SENDERS = N_("From names %(n)s sender addresses (%(addrs)s): a human decides whom to "
                     "answer")
SEVERAL_REPLY_TO = N_("Reply-To names %(n)s addresses (%(addrs)s): a human decides whom to "
                      "answer")
SAME_ADDRESS = N_("From (Reply-To names the same address)")
REPLY_TO = N_("Reply-To: the sender %(sender)s asks for replies to %(addr)s")
INVALID_SENDER = N_("sender address %(sender)s is not a valid address: a human decides whom "
                    "to answer")
INVALID_SENDER_WHY = N_("sender address %(sender)s is not a valid address; %(why_not)s: a "
                        "human decides whom to answer")
NO_REPLY_FROM = N_("no-reply sender: From %(sender)s is a no-reply address and there is no "
                   "Reply-To: nobody can be answered")
NO_REPLY_FROM_WHY = N_("no-reply sender: From %(sender)s is a no-reply address and "
                       "%(why_not)s: nobody can be answered")
FROM_WHY = N_("From (%(why_not)s, ignored)")
FROM_NO_REPLY_TO = N_("From (no Reply-To)")
FROM_BEFORE_RULE = N_("From (stored before the reply rule existed)")
# read back in this order: a wording with a reason before the same without one, and "there
# is no Reply-To" before a reason (that could read as one)
RULES = (NOT_USED_NO_ADDRESS, NOT_USED_INVALID, NOT_USED_OURS, NOT_USED_NO_REPLY, EMPTY_FROM,
         NO_SENDER, SEVERAL_SENDERS, SEVERAL_REPLY_TO, SAME_ADDRESS, REPLY_TO,
         INVALID_SENDER_WHY, INVALID_SENDER, NO_REPLY_FROM, NO_REPLY_FROM_WHY, FROM_WHY,
         FROM_NO_REPLY_TO, FROM_BEFORE_RULE)
def rule_parts(rule: str) -> tuple[str, dict[str, str]] | None:
    """A stored rule read back as its wording and values (``wording % values == rule``);
    None when it has none of the wordings (a rule stored by an older version)."""
    return read_back(rule, RULES)


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
            return ReplyChoice(None, EMPTY_FROM % {"value": repr(from_field[:100])})
        return ReplyChoice(None, NO_SENDER)
    if len(senders) > 1:
        return ReplyChoice(None, SEVERAL_SENDERS % {"n": len(senders),
                                                    "addrs": ", ".join(senders[:5])})
    sender = senders[0]
    replies = list(dict.fromkeys(a for a in reply_to if a))
    if len(replies) > 1:
        return ReplyChoice(None, SEVERAL_REPLY_TO % {"n": len(replies),
                                                     "addrs": ", ".join(replies[:5])})
    why_not = ""
    if not replies and reply_to_field and reply_to_field.strip():
        why_not = NOT_USED_NO_ADDRESS % {"value": repr(reply_to_field.strip()[:100])}
    if replies:
        r = replies[0]
        if not valid_address(r):
            why_not = NOT_USED_INVALID % {"addr": repr(r)}
        elif r.lower() in own:
            why_not = NOT_USED_OURS % {"addr": r}
        elif no_reply_address(r):
            why_not = NOT_USED_NO_REPLY % {"addr": r}
        elif r.lower() == sender.lower():
            return ReplyChoice(r, SAME_ADDRESS)
        else:
            return ReplyChoice(r, REPLY_TO % {"sender": sender, "addr": r})
    if not valid_address(sender):
        return ReplyChoice(None, (INVALID_SENDER_WHY if why_not else INVALID_SENDER) % {
            "sender": repr(sender), "why_not": why_not})
    if no_reply_address(sender):
        return ReplyChoice(None, (NO_REPLY_FROM_WHY if why_not else NO_REPLY_FROM) % {
            "sender": sender, "why_not": why_not})
    if why_not:
        return ReplyChoice(sender, FROM_WHY % {"why_not": why_not})
    return ReplyChoice(sender, FROM_NO_REPLY_TO)


def stored_reply(mail: dict) -> ReplyChoice:
    """The reply decision stored with a mail row: the one place the draft step, the
    approval, the send path and the draft page read it from. Rows stored before the rule
    existed (``reply_rule`` NULL) are answered to their From address."""
    if mail.get("reply_rule") is not None:
        return ReplyChoice(mail.get("reply_addr") or None, str(mail["reply_rule"]))
    addr = (mail.get("from_addr") or "").strip()
    if "@" in addr and " " not in addr:
        return ReplyChoice(addr, FROM_BEFORE_RULE)
    return ReplyChoice(None, NO_SENDER)
