"""A seeded corpus of realistic support mail with its ground truth.

Used by the chaos harness, the benchmarks and the demo. Every generated mail
says what it is (support request, follow-up in a thread, thanks, newsletter,
auto-reply, bounce, malformed), whether a reply draft is expected, and how
often it is delivered (duplicates are delivered twice with the same
Message-ID). Nothing here is used by the production pipeline.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

DOMAIN = "customer.example"

REQUESTS = {
    "en": [
        ("Invoice {n} charged twice", "Hello,\nmy invoice {n} was charged twice on my card. "
         "Could you please refund the second payment?\nThanks, {name}"),
        ("Order {n} has not arrived", "Hi,\nI placed order {n} two weeks ago and the delivery "
         "has still not arrived. The tracking page shows nothing. Where is my parcel?\n{name}"),
        ("Login does not work", "Hello support,\nsince yesterday the login does not work, I get "
         "an error 'invalid session' every time. What can I do?\nBest, {name}"),
        ("Cancel my subscription", "Hello,\nplease cancel my subscription for account {n} at the "
         "end of the month and confirm it in writing.\nRegards, {name}"),
    ],
    "de": [
        ("Rechnung {n} doppelt abgebucht", "Guten Tag,\ndie Rechnung {n} wurde zweimal "
         "abgebucht. Bitte erstatten Sie die zweite Zahlung.\nMit freundlichen Grüßen\n{name}"),
        ("Bestellung {n} nicht angekommen", "Hallo,\nmeine Bestellung {n} ist seit zwei Wochen "
         "unterwegs und die Lieferung ist nicht angekommen. Wo ist mein Paket?\n{name}"),
        ("Passwort funktioniert nicht", "Hallo,\nich kann mich nicht anmelden, das Passwort "
         "funktioniert nicht mehr und ich bekomme einen Fehler. Was soll ich tun?\n{name}"),
    ],
    "fr": [
        ("Facture {n} payée deux fois", "Bonjour,\nla facture {n} a été payée deux fois. "
         "Pouvez-vous me rembourser le second paiement ?\nCordialement, {name}"),
        ("Commande {n} pas livrée", "Bonjour,\nma commande {n} n'est pas arrivée, la livraison "
         "est en retard. Où est mon colis ?\n{name}"),
    ],
    "es": [
        ("Factura {n} cobrada dos veces", "Hola,\nla factura {n} se cobró dos veces. ¿Pueden "
         "devolverme el segundo pago, por favor?\nSaludos, {name}"),
        ("Pedido {n} no ha llegado", "Hola,\nmi pedido {n} no ha llegado y la entrega lleva "
         "dos semanas de retraso. ¿Dónde está?\n{name}"),
    ],
}
THANKS = [("Thanks for the quick help", "Hello,\nthank you so much, everything works now.\n{name}"),
          ("Vielen Dank", "Hallo,\nvielen Dank für die schnelle Hilfe, alles funktioniert.\n{name}")]
NAMES = ["Alice Martin", "Bernd Schulz", "Chloé Dubois", "Diego García", "Emma Brown",
         "Fritz Keller", "Giulia Rossi", "Hanna Novak"]


@dataclass
class GeneratedMail:
    key: str  # stable id within the corpus, e.g. "m0042"
    kind: str  # support, followup, thanks, newsletter, auto_reply, bounce, malformed
    message_id: str | None
    raw: bytes
    language: str
    expects_draft: bool  # ground truth: a reply draft should be made for it
    deliveries: int = 1  # 2 = delivered twice (duplicate)
    thread_root: str | None = None  # key of the first mail of its thread
    race: bool = False  # a follow-up delivered the moment staff approve its root's draft


def _msg(rng: random.Random, key: str, subject: str, body: str, sender: str,
         when: datetime, headers: dict[str, str] | None = None,
         attachment: bytes | None = None) -> tuple[str, bytes]:
    msg = EmailMessage()
    message_id = f"<{key}.{rng.getrandbits(40):x}@{DOMAIN}>"
    msg["Message-ID"] = message_id
    msg["From"] = sender
    msg["To"] = "support@example.com"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(when)
    for k, v in (headers or {}).items():
        msg[k] = v
    msg.set_content(body)
    if attachment is not None:
        msg.add_attachment(attachment, maintype="application", subtype="pdf",
                           filename=f"{key}.pdf")
    return message_id, bytes(msg)


def generate(n: int, seed: int = 1, duplicate_rate: float = 0.05, auto_rate: float = 0.06,
             malformed_rate: float = 0.03, followup_rate: float = 0.12,
             attachment_rate: float = 0.05, race_rate: float = 0.0) -> list[GeneratedMail]:
    """``race_rate``: share of support mails that get a follow-up the chaos staff deliver
    right when they approve the first mail's draft (an approval racing a newer inbound mail
    of the thread); ``deliveries`` leaves these out."""
    rng = random.Random(seed)
    race_rng = random.Random(f"race:{seed}")  # the other mails stay what they were
    start = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
    mails: list[GeneratedMail] = []
    supports: list[GeneratedMail] = []
    for i in range(n):
        key = f"m{i:05d}"
        when = start + timedelta(minutes=7 * i)
        name = rng.choice(NAMES)
        sender = f"{name} <{name.split()[0].lower()}.{i}@{DOMAIN}>"
        roll = rng.random()
        if roll < malformed_rate:
            mails.append(_malformed(rng, key, i))
            continue
        roll -= malformed_rate
        if roll < auto_rate:
            mails.append(_automatic(rng, key, when))
            continue
        roll -= auto_rate
        if roll < followup_rate and supports:
            root = rng.choice(supports)
            orig = root.raw.split(b"Subject: ", 1)[1].split(b"\n", 1)[0].decode().strip()
            body = f"Hello again,\nany news about my request? It is urgent.\n{name}"
            mid, raw = _msg(rng, key, f"Re: {orig}", body, sender, when,
                            {"In-Reply-To": root.message_id or "",
                             "References": root.message_id or ""})
            mails.append(GeneratedMail(key, "followup", mid, raw, "en", True,
                                       thread_root=root.thread_root or root.key))
            continue
        if rng.random() < 0.08:
            subject, body = rng.choice(THANKS)
            mid, raw = _msg(rng, key, subject, body.format(name=name), sender, when)
            mails.append(GeneratedMail(key, "thanks", mid, raw, "en", False))
            continue
        lang = rng.choice(["en", "en", "de", "de", "fr", "es"])
        subject, body = rng.choice(REQUESTS[lang])
        number = 10000 + i
        attachment = (bytes(rng.getrandbits(8) for _ in range(rng.randint(2000, 30000)))
                      if rng.random() < attachment_rate else None)
        mid, raw = _msg(rng, key, subject.format(n=number),
                        body.format(n=number, name=name), sender, when, attachment=attachment)
        mail = GeneratedMail(key, "support", mid, raw, lang, True,
                             deliveries=2 if rng.random() < duplicate_rate else 1)
        mails.append(mail)
        supports.append(mail)
        if race_rng.random() < race_rate:
            mid, raw = _msg(race_rng, f"{key}r", f"Re: {subject.format(n=number)}",
                            f"Hello,\none more detail: it concerns {number} only.\n{name}",
                            sender, when + timedelta(minutes=3),
                            {"In-Reply-To": mail.message_id or "",
                             "References": mail.message_id or ""})
            mails.append(GeneratedMail(f"{key}r", "followup", mid, raw, lang, True,
                                       thread_root=key, race=True))
    return mails


def _automatic(rng: random.Random, key: str, when: datetime) -> GeneratedMail:
    kind = rng.choice(["newsletter", "auto_reply", "bounce"])
    if kind == "newsletter":
        mid, raw = _msg(rng, key, "Our November newsletter", "News of the month. To unsubscribe "
                        "click the link below.", "News <newsletter@shop.example>", when,
                        {"Precedence": "bulk", "List-Unsubscribe": "<mailto:u@shop.example>"})
    elif kind == "auto_reply":
        mid, raw = _msg(rng, key, "Out of office", "I am out of office until Monday.",
                        f"Bob <bob@{DOMAIN}>", when, {"Auto-Submitted": "auto-replied"})
    else:
        mid, raw = _msg(rng, key, "Undelivered Mail Returned to Sender",
                        "This is the mail system. Your message could not be delivered.",
                        "MAILER-DAEMON@mx.example", when,
                        {"Auto-Submitted": "auto-generated"})
    return GeneratedMail(key, kind, mid, raw, "en", False)


def _malformed(rng: random.Random, key: str, i: int) -> GeneratedMail:
    variant = i % 3
    if variant == 0:  # no Message-ID, broken multipart boundary, wrong charset
        raw = (f"From: x{i}@{DOMAIN}\r\nSubject: =?utf-8?q?broken_=C3=A4?=\r\n"
               "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"zzz\"\r\n\r\n"
               "--zzz\r\nContent-Type: text/plain; charset=klingon-8\r\n\r\n"
               f"My order {i} does not work \xe4\xf6\r\n--zz").encode("latin-1")
        return GeneratedMail(key, "malformed", None, raw, "en", False)
    if variant == 1:  # binary garbage with a Message-ID line
        mid = f"<{key}.garbage@{DOMAIN}>"
        raw = f"Message-ID: {mid}\r\n".encode() + bytes(rng.getrandbits(8) for _ in range(600))
        return GeneratedMail(key, "malformed", mid, raw, "en", False)
    mid = f"<{key}.nodate@{DOMAIN}>"  # no Date, latin-1 body declared as utf-8
    raw = (f"Message-ID: {mid}\r\nFrom: y{i}@{DOMAIN}\r\nSubject: Problem\r\n"
           "Content-Type: text/plain; charset=utf-8\r\n\r\n"
           "Die Rechnung ist falsch, bitte prüfen Sie das.\r\n").encode("latin-1")
    return GeneratedMail(key, "malformed", mid, raw, "de", False)


def deliveries(mails: list[GeneratedMail]) -> list[bytes]:
    """Raw messages in delivery order (duplicates delivered again a little later)."""
    out: list[bytes] = []
    again: list[bytes] = []
    for m in mails:
        if m.race:
            continue  # delivered by the chaos staff when they approve the root's draft
        out.append(m.raw)
        if m.deliveries > 1:
            again.append(m.raw)
        if len(again) >= 3:
            out.extend(again)
            again = []
    return out + again
