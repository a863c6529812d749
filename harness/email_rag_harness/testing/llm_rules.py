"""Deterministic answers of the scripted LLM server (a test double, not a model).

Classification from keywords (multilingual, content-based only: nothing in the
mail is obeyed), the language from stop words, reply drafts from templates in
the mail's language, embeddings from hashed words. Same input, same output.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

from email_rag.classification.values import Category, Language, Priority

# The double's own crude language guess (a stand-in for an LLM's answer; the product
# takes the language from email_rag.mail.language).
STOP_WORDS: dict[Language, frozenset[str]] = {
    Language.DE: frozenset("der die das und ist nicht ich sie wir ein eine mit für auf bitte "
                           "ihre ihr den dem von zu hallo danke meine mein haben wurde".split()),
    Language.EN: frozenset("the and is not you we i a an with for on please your my of to "
                           "hello thanks have was this that".split()),
    Language.FR: frozenset("le la les et est pas je vous nous un une avec pour sur merci "
                           "votre mon ma de du bonjour ai été".split()),
    Language.ES: frozenset("el la los las y es no yo usted nosotros un una con para por "
                           "gracias su mi de del hola he sido".split()),
}

# (category, keywords). First match wins, in this order.
CATEGORY_KEYWORDS: list[tuple[Category, tuple[str, ...]]] = [
    (Category.SPAM, ("lottery", "lotto", "you have won", "sie haben gewonnen", "viagra",
                     "casino", "bitcoin", "crypto", "click here", "hier klicken",
                     "gagné", "ganado")),
    (Category.NOTIFICATION, ("newsletter", "unsubscribe", "abmelden", "do not reply",
                             "nicht antworten", "noreply", "no-reply", "automatic notification",
                             "automatische benachrichtigung", "ne pas répondre",
                             "no responda")),
    (Category.COMPLAINT, ("complaint", "beschwerde", "unacceptable", "inakzeptabel",
                          "unverschämt", "angry", "verärgert", "réclamation", "inacceptable",
                          "queja", "reclamación", "inaceptable")),
    (Category.BILLING, ("invoice", "rechnung", "payment", "zahlung", "refund", "erstattung",
                        "gutschrift", "charged", "abgebucht", "facture", "paiement",
                        "remboursement", "factura", "pago", "reembolso")),
    (Category.TECHNICAL, ("error", "fehler", "bug", "crash", "login", "log in", "password", "passwort",
                          "does not work", "doesn't work", "funktioniert nicht", "erreur",
                          "ne fonctionne pas", "mot de passe", "no funciona", "contraseña")),
    (Category.ORDER, ("order", "bestellung", "delivery", "lieferung", "shipping", "versand",
                      "paket", "parcel", "tracking", "commande", "livraison", "pedido",
                      "envío", "entrega")),
    (Category.ACCOUNT, ("account", "konto", "cancel", "kündigen", "kündigung", "subscription",
                        "abonnement", "vertrag", "contract", "compte", "résilier", "cuenta",
                        "suscripción")),
    (Category.FEEDBACK, ("thank you", "thanks", "vielen dank", "danke", "great service",
                         "toller service", "merci", "gracias", "lob", "compliment")),
]
URGENT = ("urgent", "dringend", "asap", "sofort", "immediately", "umgehend", "urgente",
          "lo antes posible", "immédiatement")
HIGH = ("important", "wichtig", "frist", "deadline", "important", "importante")
NO_REPLY_CATEGORIES = {Category.SPAM, Category.NOTIFICATION}


def detect_language(text: str) -> Language:
    words = re.findall(r"[a-zà-ÿäöüßñ]+", (text or "").lower())
    scores = {lang: sum(1 for w in words if w in sw) for lang, sw in STOP_WORDS.items()}
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] > 0 else Language.OTHER


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![a-zäöüß]){re.escape(w)}", text) for w in words)


def classify(subject: str, body: str) -> dict[str, Any]:
    """A classification dict (valid for ``email_rag.classification.values.Classification``)."""
    text = f"{subject}\n{body}".lower()
    category = next((c for c, words in CATEGORY_KEYWORDS if _has(text, words)), Category.OTHER)
    if category is Category.FEEDBACK and "?" in text:
        category = Category.OTHER  # thanks plus a question: a question
    if _has(text, URGENT):
        priority = Priority.URGENT
    elif category is Category.COMPLAINT or _has(text, HIGH):
        priority = Priority.HIGH
    elif category in NO_REPLY_CATEGORIES:
        priority = Priority.LOW
    else:
        priority = Priority.NORMAL
    needs_reply = category not in NO_REPLY_CATEGORIES and category is not Category.FEEDBACK
    subject_line = " ".join(subject.split())[:120] or "(no subject)"
    return {
        "category": category.value,
        "priority": priority.value,
        "language": detect_language(f"{subject} {body}").value,
        "summary": f"{category.value.capitalize()} mail: {subject_line}",
        "needs_reply": needs_reply,
    }


DRAFT_TEMPLATES = {
    Language.DE: ("Guten Tag,\n\nvielen Dank für Ihre Nachricht zu „{subject}“. Wir haben Ihr "
                  "Anliegen geprüft und kümmern uns darum; Sie hören in Kürze von uns.\n\n"
                  "Mit freundlichen Grüßen\nIhr Support-Team"),
    Language.EN: ("Hello,\n\nthank you for your message about \"{subject}\". We have looked into "
                  "your request and are taking care of it; you will hear from us shortly.\n\n"
                  "Kind regards\nYour support team"),
    Language.FR: ("Bonjour,\n\nmerci pour votre message concernant « {subject} ». Nous avons "
                  "examiné votre demande et nous nous en occupons ; vous aurez bientôt de nos "
                  "nouvelles.\n\nCordialement\nVotre équipe support"),
    Language.ES: ("Hola:\n\ngracias por su mensaje sobre «{subject}». Hemos revisado su "
                  "solicitud y nos estamos ocupando de ella; pronto tendrá noticias nuestras."
                  "\n\nAtentamente\nSu equipo de soporte"),
}


def asked_language(prompt: str) -> Language | None:
    """The language the draft prompt asks for ("Write the whole reply in German."), as a
    model follows its instructions; None when the prompt names none."""
    from email_rag.classification.values import LANGUAGE_NAMES

    m = re.search(r"Write the whole reply in ([A-Za-z ]+?)\.", prompt)
    if m:
        for lang, name in LANGUAGE_NAMES.items():
            if name == m.group(1).strip() and lang in DRAFT_TEMPLATES:
                return lang
    return None


def draft(subject: str, body: str, prompt: str = "") -> str:
    """A short reply that mentions the subject: in the language the prompt asks for, else
    in the mail's language (the double's own guess)."""
    lang = asked_language(prompt) or detect_language(f"{subject} {body}")
    template = DRAFT_TEMPLATES.get(lang, DRAFT_TEMPLATES[Language.EN])
    clean = re.sub(r"^((re|aw|wg|fwd?|tr)\s*:\s*)+", "", " ".join(subject.split()), flags=re.I)
    return template.format(subject=clean or "(no subject)")


def adapt(prompt: str) -> list[str]:
    """The numbered lines of an adaptation's ``<lines>`` block, as they were given (the double
    does not translate: a test sees the source's facts carried into the draft)."""
    block = re.search(r"<lines>\n(.*?)\n</lines>", prompt, re.DOTALL)
    return [re.sub(r"^\d+\.\s", "", line) for line in block.group(1).splitlines()] \
        if block else []


def fill_schema(schema: dict[str, Any], facts: dict[str, Any], key: str | None = None) -> Any:
    """A value that satisfies ``schema``, taken from ``facts`` where a key matches."""
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        usable = [o for o in options if o.get("type") != "null"] or options
        return fill_schema(usable[0], facts, key) if usable else None
    fact = facts.get(key) if key else None
    if "enum" in schema:
        return fact if fact in schema["enum"] else schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: fill_schema(sub, facts, k) for k, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return fact if isinstance(fact, list) else []
    if kind == "boolean":
        return fact if isinstance(fact, bool) else True
    if kind in ("integer", "number"):
        return fact if isinstance(fact, int | float) and not isinstance(fact, bool) else 0
    if isinstance(fact, str):
        return fact
    return str(facts.get("text", "")) if key in ("body", "reply", "draft", "text") else "-"


def embedding(text: str, dim: int) -> list[float]:
    """A unit vector from hashed words: equal texts equal vectors, shared words closer."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", (text or "").lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


def encode_base64(vec: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
