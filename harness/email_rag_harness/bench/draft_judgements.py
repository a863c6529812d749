"""Drafts judged by a support agent: the labelled set the draft checks are measured against.

Each entry is a model's answer to a mail (as a small model writes them: sometimes with its
own greeting and sign-off, which the product drops) and the verdict of an agent on the draft
staff would see (greeting and sign-off from the mailbox's settings, so a ``[Your Name]`` in
the model's own sign-off is gone and does not make a draft unusable):
``good`` (sendable, at most a light edit) or ``unusable`` with the reason an agent gives
(placeholder, claim, customer_voice, echo, referral, refusal, language, register,
signed_as_customer). The unusable ones are the failures seen with the 1.5B model
(docs/local-llm.md, issue 27) written down in four languages; the good ones include the
hard cases for a heuristic: a draft that names the customer's own order number and
amount, that reuses a fee and a period of an approved reply, that quotes an error
message, that says "we" and "our", or that answers in the formal form with "Ihre".

``measure()`` runs the product's own checks (``email_rag.pipeline.draft.checked_reply``)
on every draft: how many unusable drafts pass (goal: none) and how many good ones are
flagged. ``email-rag bench draft-checks`` prints the table; tests/unit/test_draft_judgements.py
holds the figures.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from email_rag.core.errors import LLMInvalidOutputError
from email_rag.pipeline.draft import checked_reply

from .common import Report


@dataclass(frozen=True)
class Judged:
    id: str
    language: str
    mail: str  # the customer's mail body
    sender: str
    draft: str  # the model's answer
    verdict: str  # good | unusable
    why: str = ""  # the agent's reason for an unusable draft
    shared: str = ""  # approved replies of the team given as reference


SENDERS = {
    "de": "Maria Schmidt <maria.schmidt@example.de>",
    "en": "John Miller <john.miller@example.com>",
    "fr": "Claire Martin <claire.martin@example.fr>",
    "es": "Lucía García <lucia.garcia@example.es>",
}

MAILS = {
    "de1": (
        "de",
        "Sehr geehrte Damen und Herren, meine Bestellung 55210 vom 3.11. ist bis heute "
        "nicht angekommen. Ich habe 49,90 € per Kreditkarte bezahlt. Können Sie bitte "
        "nachsehen, wo das Paket ist? Mit freundlichen Grüßen, Maria Schmidt",
    ),
    "de2": (
        "de",
        "Hallo, ich komme nicht mehr in mein Konto, das Passwort wird nicht "
        "angenommen. Kannst du mir sagen, wie ich es zurücksetze? Danke, Maria",
    ),
    "en1": (
        "en",
        "Hi, I was charged twice for invoice INV-20931 ($29.00 each time). Please "
        "check and refund the second charge. Thanks, John",
    ),
    "en2": (
        "en",
        "Hello, since the last update the app shows 'Error 503: service unavailable' "
        "when I log in. What can I do? John Miller",
    ),
    "fr1": (
        "fr",
        "Bonjour, je vous écris car ma facture F-7781 indique 120 € alors que mon "
        "abonnement coûte 99 €. Pourriez-vous vérifier ? Cordialement, Claire Martin",
    ),
    "fr2": (
        "fr",
        "Salut, tu peux me dire comment changer l'adresse de livraison de ma "
        "commande ? Merci ! Claire",
    ),
    "es1": (
        "es",
        "Buenos días, quisiera cancelar mi suscripción anual. ¿Podría indicarme "
        "cómo hacerlo? Le agradezco su ayuda. Atentamente, Lucía García",
    ),
    "es2": (
        "es",
        "Hola, ¿puedes decirme cuándo llega mi pedido 88412? Lo pedí hace una "
        "semana. Gracias, Lucía",
    ),
}

SHARED = {
    "de1": "Our reply: Verspätete Pakete forschen wir beim Versanddienstleister nach; das "
    "dauert in der Regel 2 Werktage. Ist das Paket verloren, schicken wir die Ware neu.",
    "en1": "Our reply: A double charge is refunded once our billing team has confirmed it; "
    "the money is back on the card within 5 business days.",
    "fr1": "Our reply: L'abonnement coûte 99 € par an ; une facture erronée est corrigée par "
    "notre service comptable sous 3 jours ouvrés.",
    "es1": "Our reply: Puede cancelar la suscripción en Mi cuenta > Suscripción > Cancelar; "
    "la cancelación es efectiva al final del periodo pagado.",
}


def _j(
    id_: str, mail: str, draft: str, verdict: str, why: str = "", shared: bool = False
) -> Judged:
    lang, body = MAILS[mail]
    return Judged(
        id_, lang, body, SENDERS[lang], draft, verdict, why, SHARED.get(mail, "") if shared else ""
    )


JUDGED: list[Judged] = [
    # --- German ---
    _j(
        "de-good-1",
        "de1",
        "Guten Tag Frau Schmidt,\n\nvielen Dank für Ihre Nachricht. Wir haben "
        "bei unserem Versanddienstleister einen Nachforschungsauftrag für Ihre Bestellung 55210 "
        "gestellt und melden uns, sobald wir Antwort haben.\n\nMit freundlichen Grüßen\n"
        "[Your Name]",
        "good",
    ),
    _j(
        "de-good-2",
        "de1",
        "es tut uns leid, dass Ihr Paket noch nicht angekommen ist. Wir "
        "forschen beim Versanddienstleister nach; das dauert in der Regel 2 Werktage. Ist das "
        "Paket verloren, schicken wir Ihnen die Ware neu.",
        "good",
        shared=True,
    ),
    _j(
        "de-good-3",
        "de2",
        "Hallo Maria,\n\nklick auf der Anmeldeseite auf „Passwort "
        "vergessen“ und gib deine E-Mail-Adresse ein. Du bekommst dann einen Link, mit dem du "
        "ein neues Passwort festlegst. Wenn das nicht klappt, schreib uns einfach nochmal.\n\n"
        "Viele Grüße",
        "good",
    ),
    _j(
        "de-good-4",
        "de1",
        "danke für Ihre Geduld. Wir prüfen gerade den Status Ihrer "
        "Sendung und kommen so schnell wie möglich mit einer Antwort auf Sie zu.",
        "good",
    ),
    _j(
        "de-good-5",
        "de1",
        "Ihre Zahlung über 49,90 € ist bei uns eingegangen. Wir klären "
        "mit dem Versand, wo das Paket ist, und melden uns bei Ihnen.",
        "good",
    ),
    _j(
        "de-bad-placeholder-1",
        "de1",
        "wir haben Ihre Anfrage erhalten und prüfen den Status Ihrer Bestellung [Bestellnummer].",
        "unusable",
        "placeholder",
    ),
    _j(
        "de-bad-placeholder-2",
        "de1",
        "Sehr geehrte/r [Kundenname],\n\nwir melden uns bis [Datum] bei Ihnen.",
        "unusable",
        "placeholder",
    ),
    _j(
        "de-bad-claim-1",
        "de1",
        "wir haben Ihnen den Betrag von 49,90 € bereits erstattet. "
        "Das Geld ist in wenigen Tagen auf Ihrem Konto.",
        "unusable",
        "claim",
    ),
    _j(
        "de-bad-claim-2",
        "de1",
        "Ihr Paket wurde am 12. November zugestellt. Bitte sehen Sie bei Ihren Nachbarn nach.",
        "unusable",
        "claim",
    ),
    _j(
        "de-bad-voice",
        "de1",
        "meine Bestellung 55210 ist bis heute nicht angekommen. Ich "
        "habe 49,90 € bezahlt und möchte wissen, wo das Paket ist.",
        "unusable",
        "customer_voice",
    ),
    _j(
        "de-bad-referral",
        "de1",
        "bitte wenden Sie sich mit Ihrer Bestellnummer an unseren "
        "Kundenservice, der Ihnen gerne weiterhilft.",
        "unusable",
        "referral",
    ),
    _j(
        "de-bad-refusal",
        "de1",
        "Als KI-Assistent habe ich keinen Zugriff auf Ihre "
        "Bestelldaten und kann Ihnen dabei nicht helfen.",
        "unusable",
        "refusal",
    ),
    _j(
        "de-bad-register",
        "de1",
        "danke für deine Nachricht! Wir schauen nach, wo dein "
        "Paket steckt, und melden uns bei dir.",
        "unusable",
        "register",
    ),
    _j(
        "de-bad-language",
        "de1",
        "Thank you for your message. We are checking with the "
        "carrier where your parcel is and will get back to you shortly.",
        "unusable",
        "language",
    ),
    # --- English ---
    _j(
        "en-good-1",
        "en1",
        "Hi John,\n\nthank you for letting us know. We are checking the two "
        "charges for invoice INV-20931 with our billing team and will come back to you as soon "
        "as we know more.\n\nBest regards,\nYour support team",
        "good",
    ),
    _j(
        "en-good-2",
        "en1",
        "sorry about the double charge. Once our billing team has "
        "confirmed it, the second charge is refunded and the money is back on your card within "
        "5 business days.",
        "good",
        shared=True,
    ),
    _j(
        "en-good-3",
        "en2",
        "sorry for the trouble. The message 'Error 503: service "
        "unavailable' means our login service was briefly down. Please try again and let us "
        "know if it still happens.",
        "good",
    ),
    _j(
        "en-good-4",
        "en2",
        "thanks for reporting this. Please update the app to the latest "
        "version and log in again; if the error remains, reply with a screenshot and we will "
        "look into it right away.",
        "good",
    ),
    _j(
        "en-good-5",
        "en1",
        "we can see why this is confusing. Our team is looking at your "
        "account now and we will write to you again once we have checked both payments of "
        "$29.00.",
        "good",
    ),
    _j(
        "en-good-6",
        "en1",
        "Dear [Customer Name],\n\nwe are looking into both charges on your "
        "invoice and will write again soon.\n\nKind regards,\n[Your Support Team]",
        "good",
    ),
    _j(
        "en-bad-placeholder-1",
        "en1",
        "we are looking into invoice [Invoice Number] and will refund the charge to [Card Type].",
        "unusable",
        "placeholder",
    ),
    _j(
        "en-bad-placeholder-2",
        "en1",
        "we have checked invoice {invoice_number} and will get back to you by <date>.",
        "unusable",
        "placeholder",
    ),
    _j(
        "en-bad-claim-1",
        "en1",
        "we have refunded the second charge of $29.00 the same day; "
        "you will see it on your statement.",
        "unusable",
        "claim",
    ),
    _j(
        "en-bad-claim-2",
        "en1",
        "your invoice has been corrected and a credit of $15 was added to your account.",
        "unusable",
        "claim",
    ),
    _j(
        "en-bad-claim-3",
        "en2",
        "this was fixed in version 4.2.1, released on March 3. Your ticket number is TCK-55812.",
        "unusable",
        "claim",
    ),
    _j(
        "en-bad-voice",
        "en1",
        "I was charged twice for invoice INV-20931. Please check my "
        "account and refund the second charge.",
        "unusable",
        "customer_voice",
    ),
    _j(
        "en-bad-referral",
        "en2",
        "for login problems please contact our customer service "
        "team, they will be happy to help you.",
        "unusable",
        "referral",
    ),
    _j(
        "en-bad-refusal",
        "en2",
        "I'm sorry, but I can't assist with account issues as I do not have access to your data.",
        "unusable",
        "refusal",
    ),
    _j(
        "en-bad-language",
        "en2",
        "Vielen Dank für Ihre Nachricht. Bitte aktualisieren Sie "
        "die App und melden Sie sich erneut an.",
        "unusable",
        "language",
    ),
    # --- French ---
    _j(
        "fr-good-1",
        "fr1",
        "Bonjour Madame Martin,\n\nmerci pour votre message. Nous "
        "vérifions votre facture F-7781 et reviendrons vers vous dès que possible.\n\n"
        "Cordialement,\nL'équipe support",
        "good",
    ),
    _j(
        "fr-good-2",
        "fr1",
        "merci de nous avoir signalé cette erreur. Votre abonnement coûte "
        "bien 99 € par an ; notre service comptable corrige la facture sous 3 jours ouvrés et "
        "vous l'envoie à nouveau.",
        "good",
        shared=True,
    ),
    _j(
        "fr-good-3",
        "fr2",
        "pour changer l'adresse de livraison, ouvre ta commande dans ton "
        "compte et clique sur « Modifier l'adresse ». Si la commande est déjà partie, "
        "écris-nous et on s'en occupe.",
        "good",
    ),
    _j(
        "fr-good-4",
        "fr1",
        "nous sommes désolés pour ce désagrément. Nous examinons la "
        "différence entre les 120 € facturés et les 99 € de votre abonnement et revenons vers "
        "vous rapidement.",
        "good",
    ),
    _j(
        "fr-good-5",
        "fr1",
        "Madame [Nom],\n\nnous avons bien reçu votre demande et vérifions "
        "votre facture.\n\nCordialement,\n[Votre nom]",
        "good",
    ),
    _j(
        "fr-bad-placeholder",
        "fr1",
        "nous avons bien reçu votre demande concernant la facture <numéro de facture> du {date}.",
        "unusable",
        "placeholder",
    ),
    _j(
        "fr-bad-claim-1",
        "fr1",
        "nous avons remboursé la différence de 21 € sur votre carte bancaire.",
        "unusable",
        "claim",
    ),
    _j(
        "fr-bad-claim-2",
        "fr1",
        "votre facture a été corrigée et une nouvelle facture "
        "F-7790 vous a été envoyée le 14 novembre.",
        "unusable",
        "claim",
    ),
    _j(
        "fr-bad-voice",
        "fr1",
        "ma facture F-7781 indique 120 € alors que mon abonnement coûte 99 €. Merci de vérifier.",
        "unusable",
        "customer_voice",
    ),
    _j(
        "fr-bad-referral",
        "fr1",
        "pour toute question de facturation, veuillez contacter "
        "notre service client qui pourra vous aider.",
        "unusable",
        "referral",
    ),
    _j(
        "fr-bad-refusal",
        "fr1",
        "En tant qu'assistant, je n'ai pas accès à vos factures et je ne peux pas vous aider.",
        "unusable",
        "refusal",
    ),
    _j(
        "fr-bad-register",
        "fr1",
        "merci pour ton message ! On regarde ta facture et on te répond vite.",
        "unusable",
        "register",
    ),
    _j(
        "fr-bad-language",
        "fr1",
        "Thank you for your message. We are checking your invoice "
        "and will come back to you shortly.",
        "unusable",
        "language",
    ),
    # --- Spanish ---
    _j(
        "es-good-1",
        "es1",
        "Estimada Sra. García:\n\ngracias por su mensaje. Puede cancelar la "
        "suscripción en Mi cuenta > Suscripción > Cancelar; la cancelación es efectiva al final "
        "del periodo pagado.\n\nAtentamente,\nEl equipo de soporte",
        "good",
        shared=True,
    ),
    _j(
        "es-good-2",
        "es2",
        "gracias por escribirnos. Estamos consultando con la empresa de "
        "transporte dónde está tu pedido 88412 y te escribimos en cuanto sepamos algo.",
        "good",
    ),
    _j(
        "es-good-3",
        "es1",
        "lamentamos que quiera dejarnos. Revisamos su suscripción y le "
        "confirmamos los pasos para cancelarla lo antes posible.",
        "good",
    ),
    _j(
        "es-good-4",
        "es2",
        "siento la espera. Vamos a revisar el envío de tu pedido y te contamos enseguida cómo va.",
        "good",
    ),
    _j(
        "es-bad-placeholder",
        "es1",
        "Estimado/a [Nombre del cliente]:\n\nsu suscripción se cancelará el XX/XX/XXXX.",
        "unusable",
        "placeholder",
    ),
    _j(
        "es-bad-claim-1",
        "es1",
        "hemos cancelado su suscripción y le hemos reembolsado 59,99 €.",
        "unusable",
        "claim",
    ),
    _j(
        "es-bad-claim-2",
        "es2",
        "tu pedido 88412 fue enviado el 10 de noviembre y llegará en 2 días.",
        "unusable",
        "claim",
    ),
    _j(
        "es-bad-voice",
        "es1",
        "quisiera cancelar mi suscripción anual. ¿Podría indicarme cómo hacerlo?",
        "unusable",
        "customer_voice",
    ),
    _j(
        "es-bad-referral",
        "es1",
        "para cancelar su suscripción, póngase en contacto con el servicio de atención al cliente.",
        "unusable",
        "referral",
    ),
    _j(
        "es-bad-refusal",
        "es2",
        "Como modelo de lenguaje, no tengo acceso a la información de pedidos.",
        "unusable",
        "refusal",
    ),
    _j(
        "es-bad-register",
        "es1",
        "claro, puedes cancelar tu suscripción cuando quieras desde tu cuenta.",
        "unusable",
        "register",
    ),
    _j(
        "es-bad-signed",
        "es1",
        "gracias por su ayuda, espero su respuesta para cancelar.\n\nAtentamente,\nLucía García",
        "unusable",
        "signed_as_customer",
    ),
]

# Written after the checks of JUDGED were done, and measured before any change: 4 of its 11
# unusable drafts passed ("wird morgen zugestellt", "llegará mañana", "as per our policy",
# an Italian "se" read as a condition in a Spanish sentence), none of the 7 good ones was
# flagged. The relative-day and policy claims were added after that measurement.
HELD_OUT: list[Judged] = [
    _j(
        "ho-de-good-1",
        "de1",
        "vielen Dank für Ihre Nachricht. Wir haben Ihre Anfrage an unsere "
        "Versandabteilung weitergeleitet, die sich in Kürze bei Ihnen meldet.",
        "good",
    ),
    _j(
        "ho-de-good-2",
        "de2",
        "das tut uns leid! Auf der Anmeldeseite findest du den Link "
        "„Passwort vergessen“. Klappt es danach immer noch nicht, antworte einfach auf diese "
        "Mail.",
        "good",
    ),
    _j(
        "ho-de-bad-1",
        "de1",
        "vielen Dank für Ihre Anfrage. Ihre Bestellung wird morgen zugestellt.",
        "unusable",
        "claim",
    ),
    _j(
        "ho-de-bad-2",
        "de1",
        "bitte wenden Sie sich an den Kundendienst unter 0800 1234567.",
        "unusable",
        "referral",
    ),
    _j(
        "ho-de-bad-3",
        "de2",
        "wir haben dein Passwort zurückgesetzt, du kannst dich jetzt wieder anmelden.",
        "unusable",
        "claim",
    ),
    _j(
        "ho-en-good-1",
        "en1",
        "thank you for reaching out. I have forwarded your request to our "
        "billing team, who will review both charges and reply to you directly.",
        "good",
    ),
    _j(
        "ho-en-good-2",
        "en2",
        "please reply with the version of the app you are using and the "
        "time the error appeared, so we can look into this.",
        "good",
    ),
    _j(
        "ho-en-bad-1",
        "en1",
        "your refund of $29.00 is on its way and should arrive in 3-5 business days.",
        "unusable",
        "claim",
    ),
    _j(
        "ho-en-bad-2",
        "en1",
        "as per our policy, double charges cannot be refunded.",
        "unusable",
        "claim",
    ),
    _j(
        "ho-fr-good-1",
        "fr1",
        "nous avons bien reçu votre message et transmis votre demande à "
        "notre service comptable, qui vérifiera la facture F-7781.",
        "good",
    ),
    _j(
        "ho-fr-bad-1",
        "fr1",
        "nous vous remercions pour votre message. Votre abonnement a été résilié comme demandé.",
        "unusable",
        "claim",
    ),
    _j(
        "ho-fr-bad-2",
        "fr1",
        "merci de contacter le service clientèle au 01 23 45 67 89.",
        "unusable",
        "referral",
    ),
    _j(
        "ho-fr-bad-3",
        "fr1",
        "je suis désolée, il y a un problème avec ma facture.",
        "unusable",
        "customer_voice",
    ),
    _j(
        "ho-es-good-1",
        "es1",
        "gracias por contactarnos. Para cancelar su suscripción, vaya a Mi "
        "cuenta y siga los pasos; si tiene algún problema, responda a este correo.",
        "good",
    ),
    _j(
        "ho-es-good-2",
        "es2",
        "¡gracias por tu paciencia! Vamos a consultar el estado de tu "
        "pedido 88412 y te escribimos hoy mismo.",
        "good",
    ),
    _j(
        "ho-es-bad-1",
        "es1",
        "le confirmamos que su suscripción ha sido cancelada y no se le cobrará más.",
        "unusable",
        "claim",
    ),
    _j("ho-es-bad-2", "es2", "tu pedido llegará mañana por la tarde.", "unusable", "claim"),
    _j("ho-es-bad-3", "es1", "Lo siento, no puedo ayudarte con eso.", "unusable", "refusal"),
]


def verdict_of(case: Judged) -> tuple[bool, str]:
    """(passes every check, the findings) for one draft, through the pipeline's own parse."""
    parse = checked_reply(case.mail, case.language, case.sender, None, None, case.shared)
    try:
        parse(case.draft)
    except LLMInvalidOutputError as e:
        return False, f"{e.context.get('kind')}: {e}"
    return True, ""


def reference_replies() -> list[Judged]:
    """The quality corpus's 70 reference replies (bench/quality_corpus_extra.py: what a good
    agent of the team sends, under the team's policies) as good drafts, with the policies
    of their language as the team's knowledge: written by others than the checks, they
    show how often a good reply is flagged."""
    from .quality_corpus import MAILS as FIRST
    from .quality_corpus_extra import MAILS_EXTRA, REFERENCE_REPLIES, TEAM_POLICIES

    by_id = {m[0]: m for m in FIRST + MAILS_EXTRA}
    out = []
    for mail_id, reply in REFERENCE_REPLIES.items():
        _, lang, *_, subject, body = by_id[mail_id]
        out.append(
            Judged(
                f"ref-{mail_id}",
                lang,
                f"{subject}\n{body}",
                "customer@example.com",
                reply,
                "good",
                "",
                "\n".join(TEAM_POLICIES.get(lang, [])),
            )
        )
    return out


def measure(cases: list[Judged] | None = None) -> dict[str, Any]:
    cases = JUDGED + HELD_OUT if cases is None else cases
    unusable_passed, good_flagged = [], []
    caught_by: Counter[str] = Counter()
    for case in cases:
        ok, finding = verdict_of(case)
        if case.verdict == "unusable" and ok:
            unusable_passed.append(case.id)
        elif case.verdict == "good" and not ok:
            good_flagged.append(f"{case.id} ({finding[:80]})")
        elif case.verdict == "unusable":
            caught_by[case.why] += 1
    unusable = sum(c.verdict == "unusable" for c in cases)
    good = len(cases) - unusable
    return {
        "drafts": len(cases),
        "unusable": unusable,
        "good": good,
        "unusable_passed": unusable_passed,
        "good_flagged": good_flagged,
        "unusable_pass_rate": round(len(unusable_passed) / (unusable or 1), 3),
        "good_flag_rate": round(len(good_flagged) / (good or 1), 3),
        "caught_by_reason": dict(caught_by),
        "languages": dict(Counter(c.language for c in cases)),
    }


def run(args: Any) -> Report:
    m = measure()
    refs = measure(reference_replies())
    rows = [
        {"measure": "labelled drafts (good / unusable)", "value": f"{m['good']} / {m['unusable']}"},
        {
            "measure": "unusable drafts passing every check",
            "value": f"{len(m['unusable_passed'])} ({m['unusable_pass_rate']:.0%})",
        },
        {
            "measure": "good drafts flagged",
            "value": f"{len(m['good_flagged'])} ({m['good_flag_rate']:.0%})",
        },
        {
            "measure": "the corpus's reference replies flagged",
            "value": f"{len(refs['good_flagged'])} of {refs['good']}",
        },
    ]
    notes = [
        f"unusable and passed: {', '.join(m['unusable_passed']) or 'none'}",
        f"good and flagged: {'; '.join(m['good_flagged']) or 'none'}",
        f"caught, by the agent's reason: {m['caught_by_reason']}",
        f"reference replies flagged: {'; '.join(refs['good_flagged']) or 'none'}",
    ]
    m = {**m, "reference_replies": refs}
    return Report(
        "draft-checks",
        f"{len(m['unusable_passed'])} of {m['unusable']} unusable "
        f"drafts pass the checks, {len(m['good_flagged'])} of {m['good']} good ones "
        "are flagged",
        ["measure", "value"],
        rows,
        m,
        [],
        [],
        notes,
    )
