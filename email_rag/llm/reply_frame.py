"""Greeting and sign-off of a reply: written by code, never by the model.

The model writes only the body of a reply. ``ReplyFrame`` puts the greeting in front
of it and the sign-off with the mailbox's signature under it, in the mail's language
and in the register the customer wrote in:

- ``register(text, language)``: "formal" when the customer addresses us formally
  (Sie / vous / usted / Lei / u / o senhor), "informal" when only the familiar forms
  occur (du / tu / tú / jij / você), ``None`` when the mail says nothing (short mails,
  English): the formal form is then used (a support team's default);
- ``strip_frame(text)``: the body without a greeting line the model wrote anyway and
  without its own sign-off and everything under it (``[Your Name]`` included);
- ``ReplyFrame.compose(body)``: greeting, body, sign-off and signature.

The signature comes from the mailbox's settings (``MailboxConfig.signature``: the lines
under the sign-off, e.g. a name and a phone number; else ``team_name``; else "the
support team" in the mail's language).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import parseaddr

FORMAL, INFORMAL = "formal", "informal"

# (formal markers, informal markers) per language; words, case-sensitive where the
# capital is the marker (German "Sie"/"Ihnen" mid-sentence).
_REGISTER: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "de": (
        re.compile(r"\b(?:Sie|Ihnen|Ihre[mnrs]?|Ihr|[Ss]ehr geehrte[rn]?)\b"),
        re.compile(
            r"\b(?:du|dich|dir|dein|deine[mnrs]?|euch|euer|eure[mnrs]?|hast du|"
            r"kannst du)\b",
            re.IGNORECASE,
        ),
    ),
    "fr": (
        re.compile(r"\b(?:vous|votre|vos)\b", re.IGNORECASE),
        re.compile(r"\b(?:tu|toi|ton|ta|tes|t'as)\b", re.IGNORECASE),
    ),
    "es": (
        re.compile(r"\b(?:usted(?:es)?|su|sus|le ruego|podría|estimad[oa]s?)\b", re.IGNORECASE),
        re.compile(r"\b(?:tú|tu|tus|contigo|puedes|podrías|sabes|tienes|quieres)\b", re.IGNORECASE),
    ),
    "it": (
        re.compile(r"\b(?:Lei|Suo|Sua|Suoi|La prego|gentile|egregi[oa])\b"),
        re.compile(r"\b(?:tu|ti|tuo|tua|tuoi|puoi|ciao)\b", re.IGNORECASE),
    ),
    "nl": (
        re.compile(r"\b(?:u|uw|geachte)\b", re.IGNORECASE),
        re.compile(r"\b(?:jij|je|jou|jouw|kun je|hoi)\b", re.IGNORECASE),
    ),
    "pt": (
        re.compile(r"\b(?:o senhor|a senhora|prezad[oa]s?|vossa)\b", re.IGNORECASE),
        re.compile(r"\b(?:tu|teu|tua|você|oi)\b", re.IGNORECASE),
    ),
}

# language -> register -> (greeting with a name, greeting without, sign-off phrase)
_WORDS: dict[str, dict[str, tuple[str, str, str]]] = {
    "de": {
        FORMAL: ("Guten Tag {name},", "Guten Tag,", "Mit freundlichen Grüßen"),
        INFORMAL: ("Hallo {first},", "Hallo,", "Viele Grüße"),
    },
    "en": {
        FORMAL: ("Dear {name},", "Hello,", "Kind regards"),
        INFORMAL: ("Hi {first},", "Hi,", "Best regards"),
    },
    "fr": {
        FORMAL: ("Bonjour {name},", "Bonjour,", "Cordialement"),
        INFORMAL: ("Bonjour {first},", "Bonjour,", "À bientôt"),
    },
    "es": {
        FORMAL: ("Estimado/a {name}:", "Buenos días:", "Atentamente"),
        INFORMAL: ("Hola, {first}:", "Hola:", "Un saludo"),
    },
    "it": {
        FORMAL: ("Gentile {name},", "Buongiorno,", "Cordiali saluti"),
        INFORMAL: ("Ciao {first},", "Ciao,", "A presto"),
    },
    "nl": {
        FORMAL: ("Beste {name},", "Geachte heer/mevrouw,", "Met vriendelijke groet"),
        INFORMAL: ("Hoi {first},", "Hoi,", "Groeten"),
    },
    "pt": {
        FORMAL: ("Prezado/a {name},", "Bom dia,", "Com os melhores cumprimentos"),
        INFORMAL: ("Olá {first},", "Olá,", "Abraço"),
    },
}
# language -> register -> the reply's first words, written for the model where the endpoint
# continues an answer (``LLMTask.prefill``): the body starts in our voice, as the team,
# in the mail's language and register - not as the customer, not as a refusal
OPENINGS: dict[str, dict[str, str]] = {
    "de": {FORMAL: "Vielen Dank für Ihre Nachricht. Unser Team",
           INFORMAL: "Danke für deine Nachricht. Unser Team"},
    "en": {FORMAL: "Thank you for your message. Our team",
           INFORMAL: "Thanks for your message. Our team"},
    "fr": {FORMAL: "Merci pour votre message. Notre équipe",
           INFORMAL: "Merci pour ton message. Notre équipe"},
    "es": {FORMAL: "Gracias por su mensaje. Nuestro equipo",
           INFORMAL: "Gracias por tu mensaje. Nuestro equipo"},
    "it": {FORMAL: "Grazie per il Suo messaggio. Il nostro team",
           INFORMAL: "Grazie per il tuo messaggio. Il nostro team"},
    "nl": {FORMAL: "Hartelijk dank voor uw bericht. Ons team",
           INFORMAL: "Bedankt voor je bericht. Ons team"},
    "pt": {FORMAL: "Obrigado pela sua mensagem. Nossa equipe",
           INFORMAL: "Obrigado pela sua mensagem. Nossa equipe"},
}
TEAM: dict[str, str] = {
    "de": "Ihr Support-Team",
    "en": "Your support team",
    "fr": "L'équipe support",
    "es": "El equipo de soporte",
    "it": "Il team di assistenza",
    "nl": "Het supportteam",
    "pt": "A equipe de suporte",
}

# A greeting line the model wrote (first line of its answer) and a sign-off line (the
# model's closing: it and everything under it are dropped), in every supported language.
GREETING_LINE = re.compile(
    r"^\s*(?:dear|hello|hi|hey|good (?:morning|afternoon|evening)|sehr geehrte[rn]?|"
    r"liebe[rs]?|hallo|guten (?:tag|morgen|abend)|moin|servus|bonjour|bonsoir|salut|"
    r"madame|monsieur|cher|chère|estimad[oa]s?|hola|buen(?:os|as) (?:días|tardes|noches)|"
    r"gentile|egregi[oa]|ciao|buongiorno|buonasera|salve|beste|geachte|hoi|dag|"
    r"prezad[oa]s?|olá|oi|bom dia|boa tarde|car[oa])\b[^\n]{0,80}[,:!.]?\s*$",
    re.IGNORECASE,
)
SIGN_OFF_LINE = re.compile(
    r"^\s*(?:(?:with )?(?:kind|best|warm|many)? ?(?:regards|wishes)|sincerely|yours(?: "
    r"sincerely| truly| faithfully)?|best|cheers|thanks(?: again)?|thank you|"
    r"mit (?:freundlichen|besten|herzlichen|vielen) grü(?:ß|ss)en|(?:viele|beste|liebe|herzliche|"
    r"freundliche) grü(?:ß|ss)e|grü(?:ß|ss)e|gru(?:ß|ss)|mfg|cordialement|bien (?:cordialement|à vous)|"
    r"(?:meilleures|sincères) salutations|salutations|à bientôt|atentamente|"
    r"(?:un )?(?:cordial )?saludo(?:s)?(?: cordiales)?|saludos cordiales|cordiali saluti|"
    r"distinti saluti|a presto|un saluto|met vriendelijke groet(?:en)?|(?:hartelijke )?"
    r"groet(?:en)?|atenciosamente|cumprimentos|com os melhores cumprimentos|abraços?|"
    r"your support team|ihr support-?team|das support-?team|l'équipe(?: support)?|"
    r"el equipo(?: de soporte)?)(?:[\s,.!;:-]*$|,?\s+\S[^\n]{0,30}$)",
    re.IGNORECASE,
)
SIGN_OFF_LINES = 6  # a sign-off is looked for only this near the end


def register(text: str, language: str | None) -> str | None:
    """FORMAL or INFORMAL by how the customer addresses us; None when the text does not
    say (no marker, or English). Formal wins a tie: formal markers are rarer by chance."""
    markers = _REGISTER.get(language or "")
    if not markers or not text:
        return None
    formal, informal = (len(p.findall(text)) for p in markers)
    if not formal and not informal:
        return None
    return INFORMAL if informal > formal else FORMAL


def customer_name(sender: str | None) -> str:
    """The display name of the sender, if it looks like a person's name ("" otherwise)."""
    raw = sender or ""
    display = raw.split("<")[0] if "<" in raw else parseaddr(raw)[0]
    name = " ".join(display.replace('"', "").split())
    if not name or "@" in name or any(ch.isdigit() for ch in name) or len(name) > 60:
        return ""
    if "," in name:  # "Schmidt, Maria"
        last, _, first = name.partition(",")
        name = f"{first.strip()} {last.strip()}".strip()
    return name


def strip_frame(text: str) -> str:
    """The body of a model's answer: a greeting on its first line and a sign-off (with
    everything under it: name, placeholder, team) are dropped."""
    lines = (text or "").strip().splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and GREETING_LINE.match(lines[0]) and len(lines) > 1:
        lines.pop(0)
    for i in range(max(1, len(lines) - SIGN_OFF_LINES), len(lines)):
        if SIGN_OFF_LINE.match(lines[i]):
            lines = lines[:i]
            break
    return "\n".join(lines).strip()


@dataclass(frozen=True)
class ReplyFrame:
    """Greeting and sign-off of one reply."""

    language: str
    register: str  # FORMAL or INFORMAL
    name: str = ""  # the customer's display name
    signature: str = ""  # the mailbox's signature lines (else team_name, else TEAM)
    team_name: str = ""

    @classmethod
    def for_mail(
        cls,
        body: str,
        sender: str | None,
        language: str | None,
        signature: str = "",
        team_name: str = "",
    ) -> ReplyFrame:
        lang = language if language in _WORDS else "en"
        return cls(
            lang,
            register(body, lang) or FORMAL,
            customer_name(sender),
            signature.strip(),
            team_name.strip(),
        )

    @property
    def greeting(self) -> str:
        with_name, without, _ = _WORDS[self.language][self.register]
        if not self.name:
            return without
        return with_name.format(name=self.name, first=self.name.split()[0])

    @property
    def opening(self) -> str:
        """The body's first words (``OPENINGS``), for an endpoint that continues an answer."""
        return OPENINGS[self.language][self.register]

    @property
    def closing(self) -> str:
        phrase = _WORDS[self.language][self.register][2]
        return f"{phrase}\n{self.signature or self.team_name or TEAM[self.language]}"

    def compose(self, answer: str) -> str:
        """The reply staff see: greeting, the model's body (its own greeting and
        sign-off dropped), sign-off and signature."""
        return f"{self.greeting}\n\n{strip_frame(answer)}\n\n{self.closing}"
