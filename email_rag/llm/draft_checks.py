"""Checks of a reply draft before staff see it as a draft.

Measured with a 1.5B model on 2 cores: about 2 of 12 drafts were sensible; the
others echoed the customer's mail, signed with "[Your Name]", refused, or were
cut off at max_tokens. A draft that fails a check is regenerated once (the
policy's adjusted prompt names the problem); if it fails again it is stored
FLAGGED with the reason, shown as such in the CLI and the web UI, and cannot be
approved unchanged.

Each check returns a problem in words or None; ``problems(...)`` runs them all.

| check | fails when |
|---|---|
| cut_off | the endpoint said ``finish_reason: length`` (checked by the policy), or the text stops mid-sentence (no closing punctuation or sign-off) |
| placeholder | any bracketed word (``[Your Support Team]``, ``[Kundenname]``, ``[Datum]``), ``<Name>``, ``{name}``, ``{{x}}``, ``%NAME%``, ``XXX``, ``TT.MM.JJJJ``, ``___``, a "Your Name"/"Ihr Name" line, "Max Mustermann" |
| refusal | "I'm sorry, but I can't", "As an AI", "Ich kann Ihnen dabei nicht helfen" ... |
| echo | 40 % or more of the draft's word 3-grams occur in the customer's mail (a copy, not a reply) |
| customer_voice | the draft speaks as the customer: "my order", "meine Rechnung", "ma commande", "mi pedido", "I ordered", "que pedí" ..., or repeats a first-person sentence or a request ("Bitte erstatten Sie ...") of the mail |
| referral | the draft sends the customer to "customer service", "den Kundenservice", "le service client", "atención al cliente" (that is us) |
| register | the customer wrote formally (Sie / vous / usted) and the draft uses the familiar form (du / tu / tú), or the reverse |
| claim | a fact nothing supports: an amount, date, deadline, order/invoice number, or a refund/correction/cancellation done or promised (``email_rag.llm.claims``) |
| language | the draft's language (``mail.language.identify``, when sure) differs from the mail's classified language |
| signed_as_customer | the draft ends with the customer's own name (the model wrote as the customer) |
"""

from __future__ import annotations

import re
from email.utils import parseaddr

from ..core.catalog import N_, Parts, read_back_list
from ..mail.language import OTHER, identify, written_in
from . import claims as claim_check
from .policy import CUT_AT_MAX_TOKENS
from .reply_frame import FORMAL, INFORMAL
from .reply_frame import register as register_of

# What each check says, in words staff read (stored with a FLAGGED draft in English; the
# web UI reads the stored text back with ``flag_parts`` and shows it in the reader's language)
CUT_OFF = N_("the draft stops mid-sentence (\"...%(end)s\"): it looks cut off")
PLACEHOLDER_FOUND = N_("the draft contains the placeholder %(found)s")
REFUSAL_FOUND = N_("the draft is a refusal or talks about itself (%(found)s)")
ECHOED = N_("the draft repeats the customer's mail (%(share)s of its phrases are copied from "
            "it) instead of answering it")
WRONG_LANGUAGE = N_("the draft is written in '%(found)s', the mail in '%(expected)s'")
SIGNED_AS_CUSTOMER = N_("the draft is signed with the customer's own name (%(line)s)")
REFERRAL_FOUND = N_("the draft sends the customer to customer service (%(found)s), which is us")
CUSTOMER_VOICE_FOUND = N_("the draft speaks as the customer (%(found)s)")
CUSTOMER_SENTENCE = N_("the draft repeats the customer's own sentence as ours (%(sentence)s)")
FAMILIAR_FORM = N_("the customer writes formally and the draft uses the familiar form "
                   "(%(found)s)")
FORMAL_FORM = N_("the customer writes informally and the draft uses the formal form")
UNSUPPORTED = N_("the draft states what nothing in this mail, this customer's history or the "
                 "team's replies supports: %(claims)s")
FINDINGS = (CUT_OFF, PLACEHOLDER_FOUND, REFUSAL_FOUND, ECHOED, WRONG_LANGUAGE, SIGNED_AS_CUSTOMER,
            REFERRAL_FOUND, CUSTOMER_VOICE_FOUND, CUSTOMER_SENTENCE, FAMILIAR_FORM, FORMAL_FORM,
            UNSUPPORTED, CUT_AT_MAX_TOKENS)
_FLAG_KIND = re.compile(r"\w+: ")


def flag_parts(flags: str) -> list[Parts] | None:
    """A FLAGGED draft's stored findings (``kind: finding; finding; ...``, as the draft step
    writes them) read back as wordings and values; None when a finding has no wording (a
    flag of an older version, or another error): shown as stored then."""
    m = _FLAG_KIND.match(flags or "")
    return read_back_list(flags[m.end():], FINDINGS) if m else None


PLACEHOLDER = re.compile(
    r"\[(?![^\]\n]*\]\()[^\]\n\d@/:]{2,60}\]"  # [Name], [Your Support Team], [Datum]
    r"|\[\s*(?:\.{3}|…|_+|x+)\s*\]"  # [...], [___]
    r"|<(?![^>\n]*[@/:.])[^<>\n\d]{2,40}>"  # <Name>, <Kundenname>
    r"|\{\{?\s*[^{}\n]{1,40}\s*\}?\}|%[A-Z_]{2,30}%"  # {name}, {{name}}, %NAME%
    r"|\bX{3,}\b|\b[xX]{2}[./][xX]{2}(?:[./][xX]{2,4})?\b|_{3,}"
    r"|\b(?:TT|DD|JJ|GG)[./](?:MM)[./](?:JJ|YY|AA){1,2}\b|\b(?:MM)/(?:DD)/(?:YY){1,2}\b"
    r"|^\s*(?:your name|ihr name|dein name|votre nom|ton nom|su nombre|tu nombre|il tuo nome|"
    r"uw naam|seu nome|name of (?:the )?agent|agent name|nombre del agente)\s*$"
    r"|\b(?:max|erika) mustermann\b|\b(?:john|jane) doe\b",
    re.IGNORECASE | re.MULTILINE)
REFERRAL = re.compile(
    r"\b(?:(?:contact|reach out to|call|get in touch with|write to|ask)\s+(?:our|the|your)\s+"
    r"(?:customer (?:service|support|care)|support team|help ?desk|service team)|"
    r"customer (?:service|support|care) (?:team )?(?:will|can|is able)|"
    r"(?:an|den|unseren|unser|ihren|das|dem|unserem) (?:kunden(?:service|dienst|support)|"
    r"support(?:-?team)?|service-?team)|kunden(?:service|dienst)\s+(?:kontaktieren|wenden|"
    r"anrufen|erreichen|schreiben|hilft|kann)|"
    r"(?:contactez|contacter|appelez|joindre|adressez-vous à|écrivez à)\s+(?:le|notre|votre|"
    r"au)\s+service(?: client(?:èle)?| après-vente| support)|service client(?:èle)? (?:pourra|"
    r"peut|vous)|"
    r"(?:contacte|contactar|contacta|llame|póngase en contacto|escriba|dirígase)\s+(?:con\s+)?"
    r"(?:el|nuestro|su|al)\s+(?:servicio|departamento|equipo) de (?:atención al cliente|"
    r"soporte|asistencia)|atención al cliente (?:podrá|puede|le)|"
    r"(?:contatti|contattare|contatta)\s+(?:il|il nostro)\s+servizio clienti|"
    r"(?:neem contact op met|bel)\s+(?:de|onze)\s+klantenservice|"
    r"(?:contacte|entre em contato com)\s+(?:o|nosso)\s+(?:serviço de )?atendimento)",
    re.IGNORECASE)
# the customer's own things, said in the first person: an agent writes "your order"
CUSTOMER_VOICE = re.compile(
    r"\b(?:my (?:order|invoice|account|parcel|package|payment|subscription|card|refund|bill|"
    r"delivery|money|contract|password)|"
    r"(?:meine?[nmrs]?) (?:bestellung|rechnung|konto|paket|zahlung|abo|abonnement|karte|"
    r"lieferung|geld|vertrag|passwort|kundennummer|erstattung)|"
    r"(?:ma|mon|mes) (?:commande|facture|compte|colis|paiement|abonnement|carte|livraison|"
    r"argent|contrat|mot de passe|remboursement)|"
    r"(?:mi|mis) (?:pedido|factura|cuenta|paquete|pago|suscripción|tarjeta|entrega|dinero|"
    r"contrato|contraseña|reembolso)|"
    r"(?:il mio|la mia|mio|mia) (?:ordine|fattura|account|pacco|pagamento|abbonamento|carta)|"
    r"mijn (?:bestelling|factuur|account|pakket|betaling|abonnement)|"
    r"(?:meu|minha) (?:pedido|fatura|conta|encomenda|pagamento|assinatura)|"
    # the customer's purchase told in the first person: "I ordered", "que pedí"
    r"i (?:ordered|bought|purchased|paid for)|"
    r"ich habe\b[^.!?\n]{0,40}\b(?:bestellt|gekauft|bezahlt)|"
    r"j'ai (?:commandé|acheté|payé)|"
    r"(?:pedí|compré|pagué)|"
    r"ho (?:ordinato|comprato|pagato)|ik heb\b[^.!?\n]{0,40}\b(?:besteld|gekocht|betaald))\b",
    re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(?:i|my|me|ich|mein\w*|mir|mich|je|j'|mon|ma|mes|moi|yo|mi|mis|"
                          r"me|io|il mio|la mia|ik|mijn|eu|meu|minha)\b", re.IGNORECASE)
# a request to the reader: the customer's own request, repeated, asks the customer to do it
REQUEST = re.compile(r"\b(?:please|pls|bitte|veuillez|merci de|s'il vous pla[iî]t|por favor|"
                     r"per favore|alstublieft|graag)\b", re.IGNORECASE)
FAMILIAR = {
    "de": re.compile(r"\b(?:du|dich|dir|dein\w*|euch|euer|eure\w*)\b", re.IGNORECASE),
    "fr": re.compile(r"\b(?:tu|toi|ton|ta|tes|t'as|t'es)\b", re.IGNORECASE),
    "es": re.compile(r"\b(?:tú|tu|tus|contigo|puedes|tienes|quieres|sabes)\b", re.IGNORECASE),
    "it": re.compile(r"\b(?:tu|ti|tuo|tua|tuoi|puoi)\b", re.IGNORECASE),
    "nl": re.compile(r"\b(?:jij|jou|jouw)\b", re.IGNORECASE),
}
POLITE = {
    "de": re.compile(r"\b(?:Sie|Ihnen|Ihre[mnrs]?|Ihr)\b"),
    "fr": re.compile(r"\b(?:vous|votre|vos)\b", re.IGNORECASE),
    "es": re.compile(r"\b(?:usted(?:es)?|su|sus)\b", re.IGNORECASE),
}
REFUSAL = re.compile(
    r"\b(?:as an ai|as a language model|as (?:a|your) (?:support )?assistant|"
    r"i (?:do not|don't) have access to|en tant qu'assistant|je n'ai pas accès|"
    r"como asistente|no tengo acceso|als (?:support-?)?assistent|ich habe keinen zugriff|i(?:'m| am) (?:sorry|afraid),? (?:but )?i (?:can(?:not|'t)"
    r"|am unable)|i can(?:not|'t) (?:help|assist) with|i am not able to (?:help|assist)|"
    r"als (?:ki|sprachmodell)|ich kann (?:ihnen )?(?:dabei |hierbei )?nicht helfen|"
    r"en tant qu'(?:ia|intelligence artificielle)|je ne peux pas vous aider|"
    r"como (?:ia|modelo de lenguaje)|no puedo ayudar|"
    r"(?:es tut mir leid|je suis désolée?|lo siento|mi dispiace),? (?:aber|mais|pero|ma) "
    r"(?:ich kann|je ne (?:peux|suis pas en mesure)|no puedo|non posso)|"
    r"i (?:do not|don't) have (?:any )?(?:information|details) (?:about|on) (?:your|this))",
    re.IGNORECASE)
_WORDS = re.compile(r"\w+", re.UNICODE)
ECHO_SHARE = 0.4  # share of the draft's 3-grams found in the mail from which it is an echo
ENDS_CLEANLY = re.compile(r"[.!?…)\]\"'»“”:]\s*$|^\s*\S.{0,60}$")


def cut_off(draft: str) -> str | None:
    last = (draft or "").rstrip().splitlines()[-1] if (draft or "").strip() else ""
    if last and not ENDS_CLEANLY.search(last) and len(draft) > 200:
        return CUT_OFF % {"end": last[-40:]}
    return None


def placeholder(draft: str) -> str | None:
    m = PLACEHOLDER.search(draft or "")
    return PLACEHOLDER_FOUND % {"found": repr(m.group(0))} if m else None


def refusal(draft: str) -> str | None:
    m = REFUSAL.search(draft or "")
    return REFUSAL_FOUND % {"found": repr(m.group(0))} if m else None


def _grams(text: str, n: int = 3) -> list[tuple[str, ...]]:
    words = _WORDS.findall((text or "").lower())
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def echo(draft: str, mail_body: str) -> str | None:
    grams = _grams(draft)
    if len(grams) < 4:
        return None
    mail = set(_grams(mail_body))
    share = sum(1 for g in grams if g in mail) / len(grams)
    if share >= ECHO_SHARE:
        return ECHOED % {"share": f"{share:.0%}"}
    return None


def language(draft: str, expected: str | None) -> str | None:
    if not expected or expected == OTHER or written_in(draft, expected):
        return None
    found = identify(draft)
    if not found.sure or found.code in (OTHER, expected):
        return None
    return WRONG_LANGUAGE % {"found": found.code, "expected": expected}


def signed_as_customer(draft: str, sender: str | None) -> str | None:
    """Seen in the demo: 'Ich habe die Rechnung zweimal abgebucht ... Maria Schmidt'."""
    name = " ".join(parseaddr(sender or "")[0].split()).lower()
    lines = [ln.strip().lower() for ln in (draft or "").splitlines() if ln.strip()]
    if len(name) >= 3 and lines and name in lines[-1]:
        return SIGNED_AS_CUSTOMER % {"line": repr(lines[-1][:60])}
    return None


def referral(draft: str) -> str | None:
    m = REFERRAL.search(draft or "")
    return REFERRAL_FOUND % {"found": repr(m.group(0))} if m else None


def _ui_label(text: str, start: int, end: int) -> bool:
    """"Mi cuenta > Suscripción", "„Mein Konto“": the name of a menu or page, not the
    customer's voice (capitalised mid-sentence, quoted, or followed by a menu arrow)."""
    before = text[:start].rstrip()
    quoted = before.endswith(("\"", "'", "„", "“", "«", "‘"))
    mid_sentence = bool(before) and before[-1] not in ".!?:\n"
    arrow = text[end:].lstrip().startswith((">", "→", "»", "\"", "“", "'"))
    return quoted or arrow or (mid_sentence and text[start].isupper())


def customer_voice(draft: str, mail_body: str, others: str = "") -> str | None:
    """The draft speaks as the customer: their things in the first person, or a
    first-person sentence or a request of the mail (or of ``others``: the customers' mails
    in the reference material) repeated (most of its words) as ours."""
    for m in CUSTOMER_VOICE.finditer(draft or ""):
        if not _ui_label(draft, m.start(), m.end()):
            return CUSTOMER_VOICE_FOUND % {"found": repr(m.group(0))}

    def customers(sentence: str) -> bool:
        return bool(FIRST_PERSON.search(sentence) or REQUEST.search(sentence))

    mail_sentences = [set(_WORDS.findall(s.lower()))
                      for s in claim_check._sentences(f"{mail_body}\n{others}") if customers(s)]
    for sentence in claim_check._sentences(draft):
        words = set(_WORDS.findall(sentence.lower()))
        if len(words) < 5 or not customers(sentence):
            continue
        for mail_words in mail_sentences:
            if len(words & mail_words) >= 0.7 * len(words):
                return CUSTOMER_SENTENCE % {"sentence": repr(sentence[:60])}
    return None


def register(draft: str, mail_body: str, expected_language: str | None) -> str | None:
    """The customer's form of address not kept: formal mail, familiar draft (or the
    reverse, only where the polite forms are unambiguous)."""
    wanted = register_of(mail_body, expected_language)
    familiar, polite = FAMILIAR.get(expected_language or ""), POLITE.get(expected_language or "")
    if wanted == FORMAL and familiar is not None:
        m = familiar.search(draft or "")
        if m:
            return FAMILIAR_FORM % {"found": repr(m.group(0))}
    if wanted == INFORMAL and polite is not None and familiar is not None:
        if polite.search(draft or "") and not familiar.search(draft or ""):
            return FORMAL_FORM
    return None


def claim(draft: str, own: str, shared: str = "") -> str | None:
    found = claim_check.unsupported(draft, own, shared)
    if not found:
        return None
    return UNSUPPORTED % {"claims": "; ".join(str(c) for c in found[:4])}


def problems(draft: str, mail_body: str, expected_language: str | None,
             sender: str | None = None, *, own: str | None = None,
             shared: str = "", others: str = "") -> list[tuple[str, str]]:
    """(kind, problem in words) of every check the draft fails. ``own``/``shared``: the
    evidence of the claim check (``email_rag.llm.claims``); ``own`` defaults to the mail;
    ``others``: the other customers' mails the model saw as reference material."""
    found = [("cut_off", cut_off(draft)), ("placeholder", placeholder(draft)),
             ("refusal", refusal(draft)), ("echo", echo(draft, mail_body)),
             ("customer_voice", customer_voice(draft, mail_body, others)),
             ("referral", referral(draft)),
             ("register", register(draft, mail_body, expected_language)),
             ("claim", claim(draft, mail_body if own is None else own, shared)),
             ("language", language(draft, expected_language)),
             ("signed_as_customer", signed_as_customer(draft, sender))]
    return [(kind, text) for kind, text in found if text]
