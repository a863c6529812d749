"""More labelled support mails for ``bench quality`` (issue 27), written by a helper.

Same row format and label definitions as quality_corpus.py (bench quality merges both):
(id, language, category, priority, needs_reply, subject, body).

Label rules applied consistently here:
- category follows CATEGORY_MEANING; complaint takes precedence over the topic when the
  sender is clearly angry/dissatisfied and wants it put right.
- priority: urgent = money lost right now, a service completely down, a legal deadline,
  or the sender says it is urgent; high = a blocked customer (cannot log in / work, an
  order needed by a personal date) or an angry complaint; normal = ordinary request;
  low = feedback, notifications, spam.
- needs_reply: false only for automated notices, newsletters, spam and thanks that ask
  nothing; true otherwise (praise with a question is feedback/low/true).
- other = job applications, press, partnership, general questions: normal, true.

MAILS_EXTRA: 220 new mails (55 per language).
REFERENCE_REPLIES: mail id -> the reply a good agent of the team would send, following
TEAM_POLICIES (identical facts in every language).
PARAPHRASES_EXTRA: (mail id, paraphrase) for retrieval tests, 20 per language.
HELD_OUT: 120 ids (30 per language, old and new mails, stratified by category) that the
learning curve never learns from.
"""

from __future__ import annotations

MAILS_EXTRA_EN: list[tuple[str, str, str, str, bool, str, str]] = [
    # billing (7)
    ("en29", "en", "billing", "urgent", True, "URGENT - second direct debit + late fee",
     "Hi, you collected my electricity bill twice this morning and the second debit bounced. "
     "My bank charged me 35 GBP for that and now your portal shows a 15 GBP late fee on top. "
     "My rent goes out tomorrow at 6am and I am short because of this. Please reverse the "
     "second debit and the fee today. Account EL-20931.\nTom Hargreaves"),
    ("en30", "en", "billing", "normal", True, "Re: Refund for booking HX-5521",
     "Any update?\n\n> On 12 May, Example Support wrote:\n> We have forwarded your refund "
     "request for the cancelled hotel booking HX-5521 to our billing team."),
    ("en31", "en", "billing", "normal", True, "phone bill",
     "hi why did my phone bill go from 20 to 27.50 this month?? i didnt change anything on "
     "my plan. number ends in 4471"),
    ("en32", "en", "billing", "normal", True, "Card declined at checkout - can we pay by transfer?",
     "Hello,\n\nI am trying to pay invoice INV-3390 for our team plan, but your checkout keeps "
     "saying 'card declined'. The card works everywhere else. Could you send us your bank "
     "details so we can pay by bank transfer instead?\n\nKind regards,\nPriya Nair\nFinance, "
     "Lumen Studio"),
    ("en33", "en", "billing", "normal", True, "Invoice in company name for hotel booking",
     "Could I get an invoice in my company's name for the hotel booking BK-77812 (Lisbon, "
     "3 nights)? Company: Harrow Consulting Ltd, 4 King Street, Bristol BS1 4EF. The "
     "confirmation only shows my private name. Thanks, Ben"),
    ("en34", "en", "billing", "normal", True, "Credit after downgrading?",
     "Hello there, sorry this is a bit long. Back in February we were on the Business plan "
     "with 25 seats, then two people left and we downgraded to the Starter plan in the middle "
     "of March, I think around the 14th. I assumed we would get some kind of credit for the "
     "rest of the month since we paid for the Business plan upfront, but the April invoice "
     "looks like the full Starter price and no credit anywhere. Maybe I missed it? Our "
     "accountant is asking me about it and I honestly don't know how your pro-rata works, or "
     "whether it works at all. Could you explain how the downgrade was billed and whether "
     "there is a credit we should see? Cheers, Martin (Fenwick Design)"),
    ("en35", "en", "billing", "normal", True, "Invoice 2026-0456 received twice with different amounts",
     "Hello,\n\nwe received invoice 2026-0456 twice, once by post and once by email, but with "
     "different amounts (EUR 118.00 and EUR 128.00). Which one is correct and which one "
     "should we pay?\n\nMit freundlichen Grüßen\nJonas Keller\nBuchhaltung\nKeller & Sohn "
     "GmbH\nTel. +49 89 1234567"),
    # order (7)
    ("en36", "en", "order", "high", True, "Suit for my wedding stuck - wedding is Saturday",
     "The suit for my wedding (order 40917) was supposed to arrive on Tuesday. Tracking now "
     "says 'exception - address not found', but the address is correct, I have had parcels "
     "from you there before. The wedding is on Saturday. What can you do?\n\nDaniel Okafor"),
    ("en37", "en", "order", "normal", True, "order 66310",
     "still not shipped? ordered 9 days ago"),
    ("en38", "en", "order", "normal", True, "Re: Returning the kettle",
     "Hi, the label you sent me is for a different order (55102 instead of 55190), so the "
     "post office would not take it. Could you send the right one?\n\nThanks\nGwen\n\n> Please "
     "print the attached return label and drop the parcel at any post office.\n> Kind "
     "regards, Support"),
    ("en39", "en", "order", "normal", True, "Please cancel order 90012",
     "Please cancel order 90012, I found the same blender cheaper locally. Your website still "
     "says 'processing', so I hope it has not been dispatched."),
    ("en40", "en", "order", "normal", True, "Name misspelt on flight booking",
     "Good afternoon, on flight booking FL-3321 (Manchester - Malaga, 14 June) I typed my "
     "wife's name as 'Catherine' but her passport says 'Katherine'. Can this be corrected, "
     "and is there a fee? Regards, Stuart Bell"),
    ("en41", "en", "order", "normal", True, "Screws missing",
     "Hi! The oak bookshelf from order 71133 arrived today, looks lovely, but the bag of "
     "screws and dowels is not in the box. Could you post one to me? Same address as the "
     "order. Thanks a lot, Aisha"),
    ("en42", "en", "order", "normal", True, "Delivery to Ireland?",
     "Hello, do you deliver to Ireland (Cork)? How long would a sofa take and is there an "
     "extra charge?"),
    # technical (8)
    ("en43", "en", "technical", "urgent", True, "All 14 stores: payment API gateway timeout",
     "Since 09:10 all 14 of our stores get 'HTTP 504 Gateway Timeout' from your payments API "
     "on every card payment. Customers are walking out, we are losing sales right now. Our "
     "merchant ID is M-44019. Please escalate immediately and call me on 0161 555 0199.\n\n"
     "Rachel Moore, IT Manager, Northway Pharmacies"),
    ("en44", "en", "technical", "high", True, "Locked out - lost phone with authenticator",
     "I lost my phone with the authenticator app on Sunday and now I can't log in at all, "
     "it keeps asking for the 6-digit code. I never got any backup codes. All my client "
     "projects are in your app and I have a presentation at 3pm today. How do I get back in?"),
    ("en45", "en", "technical", "normal", True, "Internet drops every evening",
     "Hi, for about a week my broadband has been dropping out every evening between 8 and "
     "10pm, the router light goes orange and comes back after a few minutes. I have already "
     "restarted the router. Customer number 8830215. Can you check the line?"),
    ("en46", "en", "technical", "normal", True, "CSV import fails",
     "Hello, importing our contacts from a CSV file fails with 'Unexpected column: Datum'. The "
     "file was exported from our old German system. Do I need to rename the columns, and is "
     "there a template somewhere?"),
    ("en47", "en", "technical", "normal", True, "Outlook sync creates duplicate events",
     "Hi team, since I connected my Outlook calendar every appointment shows up twice in the "
     "planner, once with a blue and once with a grey dot. Deleting one deletes both. Windows "
     "11, Outlook 365. Any idea?"),
    ("en48", "en", "technical", "normal", True, "app",
     "app wont open on my iphone since the update, just a white screen then it closes"),
    ("en49", "en", "technical", "normal", True, "Connecting my own domain",
     "Hello, I bought the domain bakerybythesea.co.uk elsewhere and want to use it for my shop "
     "built with your website builder. Which DNS records do I need to enter and where?"),
    ("en50", "en", "technical", "normal", True, "Customers don't get order confirmation emails",
     "Hi, since last Thursday the order confirmation emails from our shop don't reach our "
     "customers, two of them checked their spam folders. The orders themselves show up fine "
     "in the dashboard. Did something change in the email settings?\n\nBest, Oliver"),
    # account (6)
    ("en51", "en", "account", "normal", True, "Name change after marriage",
     "Dear Sir or Madam, I recently got married and would like to change the name on my "
     "account from Emily Carter to Emily Lawson. Do you need a copy of the marriage "
     "certificate? Yours faithfully, Emily Lawson"),
    ("en52", "en", "account", "normal", True, "Ending my broadband contract - moving abroad",
     "Hello, I am moving to Canada and need to end my broadband contract on 31 March. "
     "Customer no. 5530021. Could you confirm the end date, and what do I do with the "
     "router?"),
    ("en53", "en", "account", "normal", True, "Transfer our workspace to a colleague",
     "Hi, I am leaving the company at the end of the month. Can the owner role of our "
     "workspace 'Brightline Ops' be transferred to my colleague Sam Patel "
     "(sam.patel@brightline.io) so nothing gets lost?"),
    ("en54", "en", "account", "normal", True, "Copy of my personal data",
     "Under Article 15 GDPR I request a copy of all personal data you hold about me, "
     "including the purposes of processing and who you have shared it with. My customer "
     "number is 104-55821."),
    ("en55", "en", "account", "normal", True, "new number",
     "pls update my phone number on the account to 07700 900123. thx, Kev"),
    ("en56", "en", "account", "normal", True, "Pause membership for the summer?",
     "Hello, I will be travelling from June to August. Is it possible to pause my gym app "
     "membership for those three months instead of cancelling it? Thank you, Hannah"),
    # complaint (5)
    ("en57", "en", "complaint", "high", True, "Fourth time writing about the same overcharge",
     "This is the FOURTH time I am writing about the same 49.99 charge for a service I "
     "cancelled in January. Every time I get a friendly email saying it will be sorted and "
     "every month the money is taken again. I am sick of it. Refund all of it and stop "
     "charging me or I will go to the ombudsman."),
    ("en58", "en", "complaint", "high", True, "Engineer didn't turn up - again",
     "I took an unpaid day off work for the engineer appointment between 8 and 12. Nobody "
     "came, nobody called. When I rang at 1pm I was on hold for 50 minutes. This is the "
     "second missed appointment. I want compensation for my lost day and a firm appointment, "
     "not another 'window'."),
    ("en59", "en", "complaint", "high", True, "YOUR COURIER",
     "YOUR COURIER THREW MY PARCEL OVER THE GARDEN FENCE IN THE RAIN. THE TV INSIDE IS "
     "SMASHED. I HAVE A VIDEO FROM MY DOORBELL CAMERA. I WANT A NEW TV AND AN APOLOGY."),
    ("en60", "en", "complaint", "high", True, "Hotel overbooked - ruined our anniversary",
     "We booked the Seaview Hotel in Brighton through you months ago for our 10th wedding "
     "anniversary (booking BK-61290). When we arrived at 9pm on Friday they told us the room "
     "had been given away and sent us to a motel next to the motorway. Your emergency number "
     "just rang out. We paid 420 pounds for a sea-view suite and got a room that smelled of "
     "smoke. I am absolutely furious and I expect a full refund plus compensation for a "
     "weekend you completely ruined. I also want to know why nobody told us before we "
     "drove three hours."),
    ("en61", "en", "complaint", "high", True, "Formal complaint - repeated billing errors",
     "Dear Sir or Madam,\n\nI wish to make a formal complaint. For the third consecutive "
     "month my invoice has been wrong, and each correction has taken several weeks and "
     "numerous calls. This is not acceptable for a service I pay for. I expect a written "
     "explanation, a corrected account and a goodwill credit.\n\nYours faithfully,\nMargaret "
     "Doyle"),
    # feedback (6)
    ("en62", "en", "feedback", "low", False, "Re: Password reset",
     "Thanks, that worked!"),
    ("en63", "en", "feedback", "low", False, "Six years and still happy",
     "I don't usually write these, but I have been a customer for six years now and every "
     "time something went wrong you fixed it quickly and without fuss. Last week's router "
     "swap was the smoothest yet. Just wanted you to know it is appreciated. Regards, Peter"),
    ("en64", "en", "feedback", "low", False, "The new dashboard",
     "Kudos for the new dashboard, finally I can see all my invoices and bookings on one "
     "page. Nice work!"),
    ("en65", "en", "feedback", "low", True, "Love the app - widget for Android?",
     "Love the new version of the app, the budgeting view is brilliant. Is there a way to "
     "get the home screen widget on Android too, or is that iPhone only for now?"),
    ("en66", "en", "feedback", "low", True, "Idea: pickup points",
     "Hi, a suggestion: could you add delivery to a parcel pickup point at checkout? I'm never "
     "home during the day. Is anything like that planned?"),
    ("en67", "en", "feedback", "low", True, "Great help from Dave at the Leeds store",
     "Dave at your Leeds store spent half an hour helping my dad set up his new phone and was "
     "incredibly patient. He deserves to hear it from his manager. Who can I send this to?"),
    # notification (6)
    ("en68", "en", "notification", "low", False, "Your order #A-99120 has shipped",
     "Good news! Your order #A-99120 is on its way. Carrier: DPD. Tracking number "
     "15501234567890. Estimated delivery: Thursday. This is an automated message, please do "
     "not reply."),
    ("en69", "en", "notification", "low", False, "Your password was changed",
     "The password for your account was changed on 28 November at 14:02 (UTC). If you made "
     "this change, no further action is needed. This email was sent automatically."),
    ("en70", "en", "notification", "low", False, "Automatic reply: Re: Invoice 4411",
     "Thank you for your email. I am on parental leave until 3 March and will not be "
     "reading my messages. For accounts payable questions please write to "
     "ap@harrowconsulting.co.uk."),
    ("en71", "en", "notification", "low", False, "Black Friday: 40% off every plan - 72 hours only",
     "Our biggest sale of the year is here! Upgrade to Pro or Business with 40% off for the "
     "first year. Offer ends Monday at midnight. Manage your email preferences or unsubscribe "
     "here."),
    ("en72", "en", "notification", "low", False, "Undeliverable: Your request #4471",
     "Delivery has failed to these recipients or groups: m.jones@northwaypharm.co.uk. The "
     "recipient's mailbox is full and can't accept messages now. Diagnostic information for "
     "administrators: 552 5.2.2 Mailbox full."),
    ("en73", "en", "notification", "low", False, "The Logistics Weekly - Issue 112",
     "In this issue: why last-mile delivery costs keep rising, five warehouse tools we "
     "tested, and an interview with a returns manager. You receive this newsletter because "
     "you signed up at a trade fair. Unsubscribe at any time."),
    # spam (5)
    ("en74", "en", "spam", "low", False, "0.84 BTC pending in your wallet - withdraw now",
     "Your Bitcoin wallet has 0.84 BTC (approx. 52,000 USD) from cloud mining waiting for "
     "withdrawal. Log in within 24 hours and pay the 0.002 BTC network fee to release "
     "your funds, or they will be forfeited."),
    ("en75", "en", "spam", "low", False, "Invoice INV-88213 overdue - final notice",
     "Dear customer, your invoice INV-88213 of 2,340.00 USD is overdue. Open the attached "
     "secure document and sign in with your email password to view it. Pay within 48 hours "
     "to the new bank account below to avoid legal action."),
    ("en76", "en", "spam", "low", False, "Your account will be closed in 24 hours",
     "We detected unusual activity. Your account will be closed in 24 hours unless you "
     "verify your identity. Click here and confirm your card number, expiry date and CVV."),
    ("en77", "en", "spam", "low", False, "Guest post on your blog?",
     "Hi there, I love your website! We'd like to publish a guest post with two do-follow "
     "backlinks for only $49. We also sell packages of 100 high-authority links. Interested?"),
    ("en78", "en", "spam", "low", False, "Dear Beneficiary",
     "Dear Beneficiary, I am Barrister James Kofi. A late client of mine left an unclaimed "
     "sum of 4.5 million US dollars and you share his surname. Send your full name, address "
     "and phone number so we can transfer the funds to you."),
    # other (5)
    ("en79", "en", "other", "normal", True, "Application: part-time customer support agent",
     "Dear hiring team, I saw your advert for a part-time customer support agent and would "
     "like to apply. I have three years of experience in a call centre and speak English and "
     "Polish. My CV is attached. Could you let me know the next steps? Kind regards, "
     "Agnieszka Nowak"),
    ("en80", "en", "other", "normal", True, "Podcast interview request",
     "Hi, I host 'Small Shop Stories', a podcast for independent retailers. We would love to "
     "have someone from your team on a 30-minute episode about how you handle returns. Would "
     "anyone be available in January?"),
    ("en81", "en", "other", "normal", True, "Sponsorship for a charity fun run",
     "Hello, I'm organising a 5k charity fun run in Harrogate for the local hospice in May. "
     "Would your company consider sponsoring a water station or donating a prize for the "
     "raffle? Many thanks, Linda Shaw"),
    ("en82", "en", "other", "normal", True, "Student survey about online shopping",
     "Dear support team, I am a marketing student at the University of Leeds writing my "
     "dissertation on customer service in online shops. Would someone from your team be "
     "willing to fill in a 10-minute questionnaire?"),
    ("en83", "en", "other", "normal", True, "Left my umbrella in your showroom",
     "Hi, I think I left a green umbrella in your Manchester showroom on Saturday afternoon, "
     "near the sofas. Has anyone found it? Can I pick it up this week?"),
]

MAILS_EXTRA_DE: list[tuple[str, str, str, str, bool, str, str]] = [
    # billing (7)
    ("de29", "de", "billing", "urgent", True, "DRINGEND: 3.480 Euro statt 348 Euro abgebucht",
     "Sehr geehrte Damen und Herren,\n\nheute wurden von unserem Geschäftskonto 3.480,00 Euro "
     "statt der vereinbarten 348,00 Euro abgebucht (Kundennummer 60-1177). Dadurch ist unser "
     "Konto im Minus und die Gehälter können morgen nicht rausgehen. Bitte buchen Sie den "
     "Differenzbetrag heute noch zurück.\n\nMit freundlichen Grüßen\nSabine Vogt\nVogt "
     "Haustechnik GmbH"),
    ("de30", "de", "billing", "normal", True, "Re: Gutschrift Rechnung 2026-318",
     "Gibt es schon was Neues?\n\n> Am 04.11. schrieb Ihr Support-Team:\n> Wir haben Ihre "
     "Anfrage zur Gutschrift an die Buchhaltung weitergeleitet."),
    ("de31", "de", "billing", "normal", True, "Handyrechnung viel zu hoch",
     "hallo warum ist meine handyrechnung diesen monat 64 euro?? normal sind 19,99. ich war "
     "nicht im ausland und hab auch nix gebucht. rufnummer endet auf 8812"),
    ("de32", "de", "billing", "normal", True, "Lastschrift statt Rechnung",
     "Hi, ich zahle bisher jede Rechnung per Überweisung und vergesse es ständig. Kann ich "
     "auf SEPA-Lastschrift umstellen? Meine IBAN schicke ich dann gern. LG Jonas"),
    ("de33", "de", "billing", "normal", True, "Rechnung auf Firma ausstellen",
     "Guten Tag,\nkönnten Sie die Rechnung zur Buchung RB-55710 (Hotel in Wien, 12.-14.10.) "
     "bitte auf unsere Firma ausstellen? Firmenname: Lechner Consulting GmbH, "
     "Marienplatz 3, 80331 München, USt-IdNr. DE298765432.\nVielen Dank\nKarin Lechner"),
    ("de34", "de", "billing", "normal", True, "Preiserhöhung nachvollziehen",
     "Hallo liebes Team, ich hab da mal eine Frage, die mich schon länger beschäftigt. Im "
     "Sommer kam eine Mail, dass sich die Preise ändern, ich habe sie ehrlich gesagt nur "
     "überflogen. Jetzt zahle ich für den Stromtarif 'Öko Plus' statt 82 Euro auf einmal 97 "
     "Euro Abschlag im Monat. Mein Verbrauch ist eher gesunken, wir sind nur noch zu zweit "
     "seit meine Tochter ausgezogen ist. Ist die Erhöhung nur wegen des neuen Arbeitspreises "
     "oder wurde der Abschlag auch an einen höheren Verbrauch angepasst? Und kann ich den "
     "Abschlag selbst senken, wenn ich einen aktuellen Zählerstand schicke? Danke schon mal "
     "und viele Grüße, Renate Albers"),
    ("de35", "de", "billing", "normal", True, "Erstattung Rücksendung fehlt",
     "Guten Tag, ich habe die Jacke aus Bestellung 58230 vor drei Wochen zurückgeschickt, "
     "laut Sendungsverfolgung ist sie am 2.11. bei Ihnen angekommen. Das Geld (129,95 Euro) "
     "ist aber noch nicht auf meiner Kreditkarte. Wann wird erstattet?\nGruß, M. Schuster"),
    # order (7)
    ("de36", "de", "order", "high", True, "Geburtstagsgeschenk kommt nicht rechtzeitig",
     "Hallo, ich habe am Montag ein Fahrrad als Geburtstagsgeschenk für meinen Sohn bestellt "
     "(Bestellung 81150), Expressversand, bezahlt. Es steht immer noch 'in Bearbeitung'. Der "
     "Geburtstag ist am Samstag! Bitte sagen Sie mir, ob es noch klappt, sonst muss ich "
     "stornieren und woanders kaufen."),
    ("de37", "de", "order", "normal", True, "Bestellung 22871",
     "wo bleibt meine bestellung"),
    ("de38", "de", "order", "normal", True, "AW: Rücksendung Kaffeemaschine",
     "Hallo,\ndas Rücksendeetikett im Anhang ist leider für DHL, hier gibt es aber nur eine "
     "Hermes-Station. Könnt ihr mir ein Hermes-Etikett schicken?\nDanke, Lea\n\n> Bitte "
     "drucken Sie das beigefügte Rücksendeetikett aus.\n> Ihr Support-Team"),
    ("de39", "de", "order", "normal", True, "Zweiten Artikel hinzufügen",
     "Guten Tag, kann ich zu meiner Bestellung 66012 (Gartenstuhl, anthrazit) noch einen "
     "zweiten Stuhl hinzufügen, damit beides zusammen kommt? Vielen Dank, Heinz Müller"),
    ("de40", "de", "order", "normal", True, "Umbuchung Flug",
     "Sehr geehrte Damen und Herren, ist es möglich, unseren Flug FB-2291 von Frankfurt nach "
     "Palma vom 3. auf den 10. Juni umzubuchen? Wir reisen zu zweit. Was würde das kosten? "
     "Mit freundlichen Grüßen, Familie Brandt"),
    ("de41", "de", "order", "normal", True, "Teil fehlt im Paket",
     "Hey, im Paket mit dem Kinderbett (Bestellung 70412) fehlt die Lattenrost-Halterung, "
     "Teil Nummer 14 laut Anleitung. Könnt ihr das nachschicken? Gruß Timo"),
    ("de42", "de", "order", "normal", True, "Lieferung in die Schweiz",
     "Grüezi, liefern Sie auch in die Schweiz? Wie hoch sind Versandkosten und Zoll für "
     "einen Esstisch? Freundliche Grüsse, Urs Meier"),
    # technical (8)
    ("de43", "de", "technical", "urgent", True, "Kassensystem in allen Filialen ausgefallen",
     "Seit 8:30 Uhr funktioniert Ihr Kassensystem in allen sechs Filialen nicht mehr. Die "
     "Kassen zeigen nur 'Connection refused: api.kasse-cloud.example:443'. Wir können nichts "
     "verkaufen, der Samstag ist unser umsatzstärkster Tag. Bitte sofort zurückrufen: "
     "0421 555 1290.\nBäckerei Lohmann, Filialleitung"),
    ("de44", "de", "technical", "high", True, "Kein Zugang mehr - Konto gesperrt?",
     "Hallo, nach dreimal falschem Passwort steht beim Login jetzt 'Your account has been "
     "temporarily locked. Please try again later.' Das steht da aber schon seit gestern Abend. "
     "Ich brauche heute die Angebote für meine Kunden aus dem Programm. Was kann ich tun?"),
    ("de45", "de", "technical", "normal", True, "WLAN bricht ständig ab",
     "Guten Tag, seit etwa einer Woche bricht unser WLAN mehrmals am Tag ab, die Box blinkt "
     "dann rot. Ein Neustart hilft nur kurz. Kundennummer 4471230. Können Sie die Leitung "
     "prüfen?"),
    ("de46", "de", "technical", "normal", True, "Fehler beim Export",
     "Hallo zusammen, wenn ich meine Buchungen als DATEV-Datei exportieren will, kommt die "
     "Meldung \"Export failed: invalid date format in row 12\". In Zeile 12 steht aber ein "
     "ganz normales Datum (01.10.2026). Woran liegt das?\nViele Grüße\nPetra"),
    ("de47", "de", "technical", "normal", True, "Kalender synchronisiert doppelt",
     "Moin, seit ich den Google-Kalender verbunden habe, taucht jeder Termin doppelt auf. "
     "Wenn ich einen lösche, sind beide weg. Android 14. Habt ihr eine Idee?"),
    ("de48", "de", "technical", "normal", True, "app stürzt ab",
     "app stürzt beim öffnen sofort ab seit dem update gestern. samsung a54"),
    ("de49", "de", "technical", "normal", True, "Eigene Domain verbinden",
     "Guten Tag, ich habe die Domain tischlerei-berger.de bei einem anderen Anbieter. Wie "
     "verbinde ich sie mit meiner Website in Ihrem Baukasten? Welche DNS-Einträge brauche "
     "ich?\nMit freundlichen Grüßen\nAndreas Berger"),
    ("de50", "de", "technical", "normal", True, "Zwei-Faktor-Code kommt nicht per SMS",
     "Hallo, ich habe die Zwei-Faktor-Anmeldung aktiviert, aber die SMS mit dem Code kommt "
     "nur manchmal an, meistens erst nach 10 Minuten. Kann ich stattdessen eine App nutzen?"),
    # account (6)
    ("de51", "de", "account", "normal", True, "Namensänderung nach Heirat",
     "Sehr geehrte Damen und Herren, nach meiner Heirat heiße ich nicht mehr Julia Schmitt, "
     "sondern Julia Kaya. Bitte ändern Sie den Namen in meinem Kundenkonto. Benötigen Sie "
     "eine Kopie der Heiratsurkunde?\nMit freundlichen Grüßen\nJulia Kaya"),
    ("de52", "de", "account", "normal", True, "Sonderkündigung wegen Umzug",
     "Hallo, ich ziehe zum 1. Februar nach Spanien und möchte meinen Internetvertrag "
     "(Kundennummer 5502218) deshalb kündigen. Geht das vorzeitig? Und wohin schicke ich den "
     "Router?"),
    ("de53", "de", "account", "normal", True, "Konto an Kollegin übertragen",
     "Hallo, ich verlasse die Firma Ende des Monats. Könnt ihr die Admin-Rechte unseres "
     "Teamkontos an meine Kollegin Sarah Wolff (s.wolff@hanse-logistik.de) übertragen?\n"
     "Danke & Gruß, Felix"),
    ("de54", "de", "account", "normal", True, "Auskunft nach Art. 15 DSGVO",
     "Sehr geehrte Damen und Herren,\nhiermit verlange ich gemäß Art. 15 DSGVO Auskunft über "
     "alle zu meiner Person gespeicherten Daten, die Zwecke der Verarbeitung und die "
     "Empfänger. Kundennummer 33-90817.\nHochachtungsvoll\nDr. Klaus Reinhardt"),
    ("de55", "de", "account", "normal", True, "neue handynummer",
     "bitte meine neue nummer eintragen: 0176 44556677. danke"),
    ("de56", "de", "account", "normal", True, "Mitgliedschaft pausieren",
     "Hallo, ich bin von Juli bis September im Ausland. Kann ich meine Mitgliedschaft für "
     "die drei Monate pausieren statt zu kündigen? Viele Grüße, Nina"),
    # complaint (5)
    ("de57", "de", "complaint", "high", True, "Zum vierten Mal: falsche Abbuchung",
     "Ich schreibe Ihnen jetzt zum VIERTEN Mal wegen derselben Abbuchung von 39,99 Euro für "
     "ein Abo, das ich im Januar gekündigt habe. Jedes Mal heißt es, das wird erledigt, und "
     "jeden Monat wird wieder abgebucht. Mir reicht es. Ich will mein Geld zurück, sonst "
     "schalte ich einen Anwalt ein."),
    ("de58", "de", "complaint", "high", True, "Techniker wieder nicht gekommen",
     "Ich habe mir extra Urlaub genommen, weil der Techniker zwischen 8 und 12 Uhr kommen "
     "sollte. Niemand kam, niemand hat angerufen, und in der Hotline hing ich 45 Minuten in "
     "der Warteschleife. Das ist jetzt das zweite Mal. Ich erwarte eine Entschädigung und "
     "einen festen Termin!"),
    ("de59", "de", "complaint", "high", True, "PAKET ZERSTÖRT",
     "IHR PAKETBOTE HAT MEIN PAKET EINFACH ÜBER DEN ZAUN GEWORFEN. DER MONITOR IST KAPUTT. "
     "ICH HABE ES AUF VIDEO. ICH WILL SOFORT ERSATZ!!!"),
    ("de60", "de", "complaint", "high", True, "Ferienwohnung war eine Zumutung",
     "Wir haben über Sie eine Ferienwohnung an der Ostsee gebucht (Buchung FW-40218), "
     "angeblich 'frisch renoviert, mit Meerblick'. Vor Ort: Schimmel im Bad, kaputte "
     "Heizung, Blick auf einen Parkplatz. Der Vermieter war nicht erreichbar und Ihre "
     "Notfallnummer auch nicht. Wir sind nach zwei Nächten abgereist und haben für den Rest "
     "der Woche ein Hotel bezahlt. Ich bin maßlos enttäuscht und verlange die Erstattung "
     "des vollen Reisepreises und der Hotelkosten."),
    ("de61", "de", "complaint", "high", True, "Förmliche Beschwerde",
     "Sehr geehrte Damen und Herren,\n\nhiermit lege ich förmlich Beschwerde ein. Bereits "
     "zum dritten Mal in Folge ist meine Monatsrechnung fehlerhaft, und jede Korrektur hat "
     "Wochen und zahlreiche Anrufe gekostet. Ich erwarte eine schriftliche Stellungnahme, "
     "eine korrigierte Rechnung und eine Kulanzgutschrift.\n\nMit freundlichen Grüßen\n"
     "Gerda Hoffmann"),
    # feedback (6)
    ("de62", "de", "feedback", "low", False, "AW: Passwort zurücksetzen",
     "Danke!"),
    ("de63", "de", "feedback", "low", False, "Einfach mal danke",
     "Ich bin seit acht Jahren Kundin bei Ihnen und wollte einfach mal sagen: Jedes Mal, "
     "wenn etwas nicht geklappt hat, wurde mir schnell und freundlich geholfen. Zuletzt beim "
     "Routertausch, das lief perfekt. Weiter so! Herzliche Grüße, Ingrid Sommer"),
    ("de64", "de", "feedback", "low", False, "Neues Kundenportal",
     "Das neue Kundenportal ist super übersichtlich, endlich finde ich alle Rechnungen auf "
     "einen Blick. Großes Lob an euch!"),
    ("de65", "de", "feedback", "low", True, "Tolle App - gibt es ein Widget?",
     "Hallo, die neue App-Version gefällt mir richtig gut, vor allem die Haushaltsbuch-"
     "Ansicht. Gibt es das Widget für den Startbildschirm auch für Android oder nur fürs "
     "iPhone?"),
    ("de66", "de", "feedback", "low", True, "Vorschlag: Packstation",
     "Hallo, ein Vorschlag: Könntet ihr beim Bestellen die Lieferung an eine Packstation "
     "anbieten? Ich bin tagsüber nie zu Hause. Ist so etwas geplant?"),
    ("de67", "de", "feedback", "low", True, "Lob für Herrn Yilmaz",
     "Guten Tag, Herr Yilmaz in Ihrer Filiale in Köln hat meiner Mutter eine halbe Stunde "
     "lang geduldig ihr neues Handy eingerichtet. Das verdient ein Lob von oben. An wen kann "
     "ich das schicken?\nFreundliche Grüße\nStefan Krüger"),
    # notification (6)
    ("de68", "de", "notification", "low", False, "Ihre Bestellung 10-77821 wurde versandt",
     "Gute Nachrichten! Ihre Bestellung 10-77821 ist unterwegs. Versanddienstleister: DHL, "
     "Sendungsnummer 00340434161234567890. Voraussichtliche Zustellung: Mittwoch. Dies ist "
     "eine automatisch erstellte Nachricht, bitte antworten Sie nicht darauf."),
    ("de69", "de", "notification", "low", False, "Ihr Passwort wurde geändert",
     "Das Passwort für Ihr Kundenkonto wurde am 29.11.2026 um 09:41 Uhr geändert. Wenn Sie "
     "diese Änderung selbst vorgenommen haben, ist nichts weiter zu tun. Diese E-Mail wurde "
     "automatisch versendet."),
    ("de70", "de", "notification", "low", False, "Automatische Antwort: AW: Rechnung 2026-113",
     "Vielen Dank für Ihre Nachricht. Ich befinde mich bis einschließlich 6. Januar in "
     "Elternzeit. Ihre E-Mail wird nicht weitergeleitet. Bei Fragen zur Buchhaltung wenden "
     "Sie sich bitte an buchhaltung@vogt-haustechnik.de."),
    ("de71", "de", "notification", "low", False, "Nur heute: 30 % auf alle Tarife",
     "Black Week bei uns: Jetzt auf Premium wechseln und im ersten Jahr 30 % sparen. Das "
     "Angebot gilt bis Sonntag, 23:59 Uhr. Sie möchten keine Angebote mehr erhalten? Hier "
     "abmelden."),
    ("de72", "de", "notification", "low", False, "Unzustellbar: Ihre Anfrage #5520",
     "Die Zustellung an folgende Empfänger ist fehlgeschlagen: t.berg@example-kunde.de. "
     "Das Postfach des Empfängers ist voll. Diagnoseinformationen für Administratoren: "
     "552 5.2.2 Mailbox full"),
    ("de73", "de", "notification", "low", False, "Handel aktuell - Ausgabe 48",
     "In dieser Ausgabe: Warum die Versandkosten weiter steigen, fünf Kassensysteme im Test "
     "und ein Interview mit einer Filialleiterin. Sie erhalten diesen Newsletter, weil Sie "
     "sich auf der Messe angemeldet haben. Abmeldung jederzeit möglich."),
    # spam (5)
    ("de74", "de", "spam", "low", False, "Ihr Krypto-Guthaben wartet: 0,91 BTC",
     "Auf Ihrem Bitcoin-Wallet liegen 0,91 BTC (ca. 54.000 Euro) aus Cloud-Mining zur "
     "Auszahlung bereit. Melden Sie sich innerhalb von 24 Stunden an und zahlen Sie die "
     "Netzwerkgebühr von 0,002 BTC, sonst verfällt das Guthaben."),
    ("de75", "de", "spam", "low", False, "Letzte Mahnung Rechnung Nr. 2026-88213",
     "Sehr geehrter Kunde, Ihre Rechnung über 1.870,00 Euro ist überfällig. Öffnen Sie das "
     "angehängte Dokument und melden Sie sich mit Ihrem E-Mail-Passwort an. Zahlen Sie "
     "innerhalb von 48 Stunden auf unsere neue Bankverbindung, sonst leiten wir rechtliche "
     "Schritte ein."),
    ("de76", "de", "spam", "low", False, "Ihr Konto wird gesperrt",
     "Wir haben ungewöhnliche Aktivitäten festgestellt. Ihr Konto wird in 24 Stunden "
     "gesperrt, wenn Sie Ihre Identität nicht bestätigen. Klicken Sie hier und geben Sie "
     "Kartennummer, Ablaufdatum und Prüfziffer ein."),
    ("de77", "de", "spam", "low", False, "Mehr Kunden durch Google - garantiert",
     "Sehr geehrter Websitebetreiber, wir bringen Ihre Seite garantiert auf Platz 1 bei "
     "Google. Jetzt nur 79 Euro im Monat statt 299 Euro. Antworten Sie für eine kostenlose "
     "Analyse."),
    ("de78", "de", "spam", "low", False, "Erbschaft für Sie",
     "Sehr geehrter Begünstigter, ich bin Rechtsanwalt Dr. James Kofi. Ein verstorbener "
     "Mandant hat 4,5 Millionen Dollar hinterlassen, und Sie tragen denselben Nachnamen. "
     "Senden Sie mir Ihren vollen Namen, Adresse und Telefonnummer für die Überweisung."),
    # other (5)
    ("de79", "de", "other", "normal", True, "Bewerbung als Kundenberaterin (Teilzeit)",
     "Sehr geehrte Damen und Herren,\nhiermit bewerbe ich mich auf Ihre Stelle als "
     "Kundenberaterin in Teilzeit. Ich habe vier Jahre Erfahrung im Callcenter und spreche "
     "Deutsch, Englisch und Türkisch. Meinen Lebenslauf finden Sie im Anhang. Über eine "
     "Rückmeldung würde ich mich freuen.\nMit freundlichen Grüßen\nAyşe Demir"),
    ("de80", "de", "other", "normal", True, "Interviewanfrage Lokalzeitung",
     "Guten Tag, ich schreibe für das Hamburger Abendblatt einen Artikel über Onlinehändler "
     "aus der Region. Hätte jemand aus Ihrem Team nächste Woche Zeit für ein kurzes "
     "Telefoninterview?\nBeste Grüße\nMaren Claußen"),
    ("de81", "de", "other", "normal", True, "Sponsoring Sommerfest Kita",
     "Hallo, unsere Kita 'Sonnenblume' in Bremen feiert im Juni ihr Sommerfest. Hätten Sie "
     "Interesse, die Tombola mit einem kleinen Preis zu unterstützen? Wir würden Ihr Logo "
     "gern auf dem Plakat nennen. Liebe Grüße, Elternbeirat"),
    ("de82", "de", "other", "normal", True, "Umfrage für meine Bachelorarbeit",
     "Liebes Support-Team, ich schreibe meine Bachelorarbeit über Kundenservice im "
     "Onlinehandel. Würde jemand von euch einen Fragebogen ausfüllen (ca. 10 Minuten)? Das "
     "wäre mir eine große Hilfe!"),
    ("de83", "de", "other", "normal", True, "Schal im Showroom vergessen",
     "Hallo, ich glaube, ich habe am Samstag einen roten Wollschal in Ihrem Showroom in "
     "Leipzig liegen lassen, bei den Sofas. Wurde er gefunden? Kann ich ihn diese Woche "
     "abholen?"),
]

MAILS_EXTRA_FR: list[tuple[str, str, str, str, bool, str, str]] = [
    # billing (7)
    ("fr29", "fr", "billing", "urgent", True, "URGENT virement envoyé deux fois",
     "Bonjour,\n\nvotre plateforme de paiement a exécuté deux fois mon virement de 4 200 € "
     "au fournisseur Atelier Morel ce matin (référence VIR-20931). Mon compte est maintenant à "
     "découvert et les salaires partent demain. Merci de bloquer ou de récupérer le second "
     "virement aujourd'hui, c'est urgent.\n\nNathalie Girard\nGirard Menuiserie"),
    ("fr30", "fr", "billing", "normal", True, "RE: Remboursement billet annulé TR-4410",
     "Toujours rien reçu sur mon compte. Vous avez des nouvelles ?\n\n> Le 3 novembre, "
     "l'équipe support a écrit :\n> Votre demande de remboursement pour le billet TR-4410 a "
     "bien été enregistrée."),
    ("fr31", "fr", "billing", "normal", True, "option ajoutée par erreur",
     "salut, j'ai activé l'option 'Europe+' sur mon forfait par erreur en cliquant dans "
     "l'appli, je suis jamais parti. tu peux me rembourser les 10 € stp ? ligne en 06 12 "
     "34 56 78"),
    ("fr32", "fr", "billing", "normal", True, "Facture sans numéro SIRET",
     "Bonjour, je suis auto-entrepreneur et ma comptable me signale que vos factures ne "
     "mentionnent pas mon numéro SIRET (812 345 678 00019). Pourriez-vous le rajouter sur "
     "les factures de septembre et octobre ? Merci d'avance, Julien Roux"),
    ("fr33", "fr", "billing", "normal", True, "Payer en plusieurs fois ?",
     "Madame, Monsieur, ma facture de régularisation d'électricité s'élève à 540 € et je ne "
     "peux pas la régler en une fois ce mois-ci. Est-il possible de l'étaler sur trois mois ? "
     "Référence client 7 701 284. Je vous remercie par avance. Bien cordialement, Odile "
     "Lemaire"),
    ("fr34", "fr", "billing", "normal", True, "Code promo pas pris en compte",
     "Bonjour, j'avais le code BIENVENUE15 mais au final j'ai payé le prix plein (89,90 €) "
     "pour la commande 51877. Le code était bien valable, j'ai la capture d'écran. Est-ce "
     "que vous pouvez me rembourser la différence ?"),
    ("fr35", "fr", "billing", "normal", True, "Pro Plan facturé en dollars",
     "Bonjour, on vient de passer sur le Pro Plan avec l'add-on Team Seats, mais la facture "
     "est en USD au lieu d'euros et ma banque a pris des frais de change. Est-ce que vous "
     "pouvez refaire la facture en EUR pour les prochains mois ? Merci, Camille (Studio "
     "Lumen Lyon)"),
    # order (7)
    ("fr36", "fr", "order", "high", True, "Lunettes indispensables avant mon départ",
     "Bonjour, j'ai commandé des lunettes de vue le 2 novembre (commande 61204), on m'avait "
     "promis une livraison sous 7 jours. Le suivi indique toujours « en préparation » et je "
     "pars six mois à l'étranger jeudi. Je n'ai pas d'autre paire. Pouvez-vous me dire si "
     "elles partent aujourd'hui ?"),
    ("fr37", "fr", "order", "normal", True, "Et ma commande ?",
     "Commande 33019, toujours rien."),
    ("fr38", "fr", "order", "normal", True, "Colis indiqué livré mais pas reçu",
     "Bonjour, le suivi de ma commande 48120 indique « livré » hier à 11h42, mais je n'ai "
     "rien reçu, ni dans la boîte aux lettres ni chez les voisins. Que puis-je faire ? Merci, "
     "Sophie"),
    ("fr39", "fr", "order", "normal", True, "RE: Retour de la veste",
     "Bonjour, j'ai renvoyé la veste il y a dix jours avec votre étiquette, le suivi dit "
     "qu'elle est arrivée chez vous. Pouvez-vous confirmer la réception ?\nCordialement, "
     "A. Perrin\n\n> Vous disposez de 30 jours pour nous retourner l'article.\n> L'équipe "
     "support"),
    ("fr40", "fr", "order", "normal", True, "Changer la date de mes billets de train",
     "Bonjour, serait-il possible de décaler mes billets Paris - Marseille (réservation "
     "TR-8891) du vendredi 12 au samedi 13 ? Nous sommes deux adultes et un enfant. Y a-t-il "
     "des frais ?"),
    ("fr41", "fr", "order", "normal", True, "Échange de teinte",
     "Bonjour, j'ai reçu le fond de teint en teinte 03 mais il est trop clair pour moi. Je "
     "peux l'échanger contre la teinte 04 ? Le flacon n'a pas été ouvert. Commande 27730. "
     "Merci beaucoup !"),
    ("fr42", "fr", "order", "normal", True, "Livraison au 4e étage sans ascenseur",
     "Bonjour, avant de commander l'armoire Nordic : est-ce que la livraison comprend la "
     "montée au 4e étage sans ascenseur, ou faut-il payer un supplément ?"),
    # technical (8)
    ("fr43", "fr", "technical", "urgent", True, "Boutique en ligne hors service en plein soldes",
     "Notre boutique hébergée chez vous affiche « 502 Bad Gateway » depuis 7h ce matin, "
     "premier jour des soldes. Aucune commande ne passe, on perd de l'argent à chaque minute. "
     "Intervenez immédiatement s'il vous plaît. Rappelez-moi au 04 78 55 01 22.\nMarc Dubois, "
     "La Maison du Lin"),
    ("fr44", "fr", "technical", "high", True, "Compte verrouillé, je ne peux pas travailler",
     "Bonjour, après la mise à jour de l'application de facturation, je n'arrive plus à "
     "me connecter : le message « identifiant ou mot de passe incorrect » s'affiche alors que "
     "rien n'a changé, et la réinitialisation ne donne rien. Tous mes devis clients sont "
     "dedans, je suis bloquée. Merci de m'aider vite. Élodie Marchand"),
    ("fr45", "fr", "technical", "normal", True, "Plus de chaînes TV sur la box",
     "Bonjour, depuis samedi ma box affiche « aucun signal » sur toutes les chaînes TV, "
     "internet fonctionne. J'ai débranché et rebranché. Numéro client 30 229 118. Pouvez-vous "
     "regarder ?"),
    ("fr46", "fr", "technical", "normal", True, "Erreur de synchronisation",
     "Bonjour, depuis hier l'application affiche « Sync error: token expired (code 4012) » "
     "à chaque ouverture et mes dernières notes ne sont plus synchronisées entre le téléphone "
     "et l'ordinateur. Je me suis déconnecté et reconnecté, sans effet. Une idée ?"),
    ("fr47", "fr", "technical", "normal", True, "Notifications disparues",
     "Bonjour, je ne reçois plus aucune notification de rappel de rendez-vous sur mon "
     "téléphone Android (Xiaomi) alors qu'elles sont activées dans l'application. Comment "
     "régler ça ?"),
    ("fr48", "fr", "technical", "normal", True, "bouton payer",
     "le site marche pas sur safari le bouton payer reste grisé. sur chrome ca va"),
    ("fr49", "fr", "technical", "normal", True, "Connecter mon compte bancaire au logiciel",
     "Bonjour, je voudrais que mes relevés bancaires soient importés automatiquement dans "
     "votre logiciel de comptabilité. Où se trouve l'option et quelles banques sont "
     "compatibles ? Cordialement, Hervé Blanc"),
    ("fr50", "fr", "technical", "normal", True, "Étiquettes d'expédition mal imprimées",
     "Bonjour, quand j'imprime les étiquettes d'expédition depuis votre application, elles "
     "sortent en A4 avec des marges énormes au lieu du format 10 x 15. Imprimante Zebra "
     "GK420. Comment changer le format ?"),
    # account (6)
    ("fr51", "fr", "account", "normal", True, "Changement de titulaire du contrat",
     "Bonjour, je quitte mon appartement le 30 novembre et ma colocataire, Léa Fontaine, "
     "reprend le contrat d'électricité. Comment transférer le contrat à son nom ? Référence "
     "client 5 880 142. Merci, Inès"),
    ("fr52", "fr", "account", "normal", True, "Résiliation de ma ligne fixe",
     "Madame, Monsieur,\nje vous prie de bien vouloir résilier ma ligne téléphonique fixe "
     "(numéro client 20 118 904) à compter du 1er janvier. Je vous remercie de m'adresser une "
     "confirmation écrite.\nVeuillez agréer mes salutations distinguées.\nBernard Lefèvre"),
    ("fr53", "fr", "account", "normal", True, "Date de naissance erronée",
     "Bonjour, ma date de naissance dans mon espace client est le 12/05/1989 alors que c'est "
     "le 21/05/1989. Je ne peux pas la modifier moi-même. Pouvez-vous la corriger ?"),
    ("fr54", "fr", "account", "normal", True, "Suppression du compte de mon fils",
     "Bonjour, mon fils de 15 ans a créé un compte sur votre site sans mon accord. En tant "
     "que parent, je demande la suppression de ce compte et de ses données (adresse : "
     "theo.vidal2011@mail.fr). Merci de me confirmer la suppression. Mme Vidal"),
    ("fr55", "fr", "account", "normal", True, "Passer au forfait 100 Go",
     "Bonjour, je voudrais passer de mon forfait 20 Go au forfait 100 Go dès ce mois-ci. "
     "Est-ce que je garde mon numéro et mon engagement change-t-il ?"),
    ("fr56", "fr", "account", "normal", True, "nouvelle adresse",
     "nouvelle adresse : 8 rue des Lilas, 69003 Lyon. merci de mettre à jour mon compte"),
    # complaint (5)
    ("fr57", "fr", "complaint", "high", True, "Colis abîmé et aucune réponse",
     "Trois semaines que j'ai signalé que la lampe était arrivée en morceaux. Trois mails, "
     "deux appels, et toujours aucune réponse. Je trouve ça lamentable. Je veux un "
     "remplacement ou un remboursement, et vite."),
    ("fr58", "fr", "complaint", "high", True, "Remboursement refusé, c'est scandaleux",
     "Mon train a été annulé par la compagnie et vous refusez de me rembourser parce que "
     "j'aurais réservé un « tarif non remboursable » ?! Je n'ai pas annulé, c'est le train "
     "qui n'est jamais parti. C'est scandaleux. J'exige le remboursement intégral de la "
     "réservation TR-7745."),
    ("fr59", "fr", "complaint", "high", True, "INADMISSIBLE",
     "TROISIÈME COUPURE D'INTERNET CE MOIS-CI ET PERSONNE NE RAPPELLE. JE PAIE POUR UN "
     "SERVICE QUE JE N'AI PAS. JE VEUX UN GESTE COMMERCIAL MAINTENANT."),
    ("fr60", "fr", "complaint", "high", True, "Votre conseiller m'a menti",
     "Lors de la souscription, votre conseiller en boutique m'a assuré que l'offre était "
     "sans engagement. Aujourd'hui, en voulant partir, j'apprends que je suis engagé 24 mois "
     "et qu'on me réclame 180 € de frais de résiliation. Je me sens trompé, franchement. Je "
     "n'ai jamais signé pour ça en connaissance de cause et je demande l'annulation de ces "
     "frais. Si rien n'est fait, je saisirai le médiateur."),
    ("fr61", "fr", "complaint", "high", True, "Réclamation formelle",
     "Madame, Monsieur,\n\nPar la présente, je formule une réclamation. Depuis trois mois, "
     "chaque facture comporte une erreur et chaque correction demande des semaines de "
     "relances. Je suis profondément mécontente de la gestion de mon dossier et j'attends "
     "une réponse écrite ainsi qu'un geste commercial.\n\nSalutations,\nFrançoise Garnier"),
    # feedback (6)
    ("fr62", "fr", "feedback", "low", False, "RE: Problème de connexion",
     "Merci !"),
    ("fr63", "fr", "feedback", "low", False, "Un grand merci à Karim",
     "Je tenais à remercier Karim du service client qui a pris le temps de m'expliquer "
     "toute la configuration de ma box au téléphone, avec une patience rare. Grâce à lui "
     "tout fonctionne. Bonne continuation à toute l'équipe, Monique"),
    ("fr64", "fr", "feedback", "low", False, "Super nouvelle appli",
     "La nouvelle appli est top, beaucoup plus rapide, et enfin un mode sombre ! Bravo."),
    ("fr65", "fr", "feedback", "low", True, "Bravo pour le service - et l'export ?",
     "Bonjour, je suis ravi du logiciel, il m'a fait gagner des heures chaque mois. Une "
     "question : est-il prévu de pouvoir exporter les rapports au format Excel et pas "
     "seulement en PDF ?"),
    ("fr66", "fr", "feedback", "low", True, "Suggestion : emballages",
     "Bonjour, j'adore vos produits mais les colis contiennent beaucoup de plastique. "
     "Avez-vous prévu de passer à des emballages en carton recyclé ?"),
    ("fr67", "fr", "feedback", "low", True, "Coucou l'équipe",
     "Coucou ! Vous êtes géniaux, livraison en 24 h comme promis. Petite question : vous "
     "aurez de nouveau la bougie « Figue » en stock avant Noël ?"),
    # notification (6)
    ("fr68", "fr", "notification", "low", False, "Votre commande 10-55872 a été expédiée",
     "Bonne nouvelle ! Votre commande 10-55872 est en route. Transporteur : Colissimo, "
     "numéro de suivi 6A12345678901. Livraison estimée : mardi. Ceci est un message "
     "automatique, merci de ne pas y répondre."),
    ("fr69", "fr", "notification", "low", False, "Réinitialisation de votre mot de passe",
     "Vous avez demandé la réinitialisation du mot de passe de votre compte. Ce lien "
     "expire dans 24 heures. Si vous n'êtes pas à l'origine de cette demande, ignorez ce "
     "message. Message envoyé automatiquement."),
    ("fr70", "fr", "notification", "low", False, "Réponse automatique : RE: Facture 5520",
     "Bonjour, je suis en congé jusqu'au 6 janvier inclus. Votre message ne sera pas "
     "transféré. Pour toute question comptable, écrivez à compta@girard-menuiserie.fr. "
     "Cordialement."),
    ("fr71", "fr", "notification", "low", False, "Ventes privées : jusqu'à -50 % ce week-end",
     "Ce week-end seulement, profitez de remises jusqu'à -50 % sur toute la collection "
     "maison. Livraison offerte dès 49 €. Vous ne souhaitez plus recevoir nos offres ? "
     "Désabonnez-vous ici."),
    ("fr72", "fr", "notification", "low", False, "Votre facture de novembre est disponible",
     "Votre facture électronique de novembre est disponible dans votre espace client. Le "
     "montant sera prélevé automatiquement le 15. Ceci est un message automatique, merci "
     "de ne pas y répondre."),
    ("fr73", "fr", "notification", "low", False, "Accusé de réception de votre demande n° 88410",
     "Nous avons bien reçu votre demande n° 88410. Un conseiller la traitera dans les "
     "meilleurs délais. Ce message est généré automatiquement."),
    # spam (5)
    ("fr74", "fr", "spam", "low", False, "Doublez votre capital en 30 jours grâce à la crypto",
     "Notre robot de trading crypto a généré +212 % pour nos membres cette année. Déposez "
     "250 € aujourd'hui et retirez vos gains dès demain. Places limitées, inscrivez-vous "
     "maintenant !"),
    ("fr75", "fr", "spam", "low", False, "Votre colis est en attente : frais de douane",
     "Votre colis est bloqué au centre de tri. Des frais de douane de 1,99 € doivent être "
     "réglés sous 48 h, faute de quoi il sera renvoyé. Payez ici avec votre carte bancaire."),
    ("fr76", "fr", "spam", "low", False, "Votre compte sera suspendu",
     "Cher client, suite à une activité inhabituelle, votre compte sera suspendu sous 24 "
     "heures. Pour l'éviter, confirmez votre identité en saisissant vos identifiants "
     "bancaires via le lien ci-dessous."),
    ("fr77", "fr", "spam", "low", False, "Fichier de 50 000 prospects qualifiés",
     "Bonjour, nous proposons un fichier de 50 000 adresses e-mail de professionnels "
     "qualifiés pour seulement 299 €. Boostez vos ventes dès aujourd'hui. Répondez OUI pour "
     "recevoir un échantillon."),
    ("fr78", "fr", "spam", "low", False, "Facture impayée n° FA-20931",
     "Bonjour, veuillez trouver ci-joint la facture impayée FA-20931. Pour la consulter, "
     "connectez-vous avec le mot de passe de votre messagerie. Le règlement doit être "
     "effectué sur notre nouveau RIB sous 24 heures."),
    # other (5)
    ("fr79", "fr", "other", "normal", True, "Candidature en alternance",
     "Madame, Monsieur, étudiante en BTS Négociation et digitalisation de la relation "
     "client, je recherche une alternance à partir de septembre. Je serais très heureuse de "
     "rejoindre votre service client. Vous trouverez mon CV en pièce jointe. Bien "
     "cordialement, Manon Petit"),
    ("fr80", "fr", "other", "normal", True, "Demande d'interview - Ouest-France",
     "Bonjour, je suis journaliste à Ouest-France et je prépare un article sur les "
     "entreprises qui recrutent dans la région. Pourrais-je échanger quinze minutes avec un "
     "responsable cette semaine ?"),
    ("fr81", "fr", "other", "normal", True, "Projet étudiant avec votre marque",
     "Bonjour, je suis enseignant dans une école de design à Nantes. Mes étudiants "
     "aimeraient travailler sur un projet fictif de packaging pour votre marque. Seriez-vous "
     "d'accord, et pourrions-nous présenter le résultat à votre équipe ?"),
    ("fr82", "fr", "other", "normal", True, "Commande groupée pour notre CSE",
     "Bonjour, je fais partie du CSE d'une entreprise de 300 salariés. Proposez-vous des "
     "tarifs ou des cartes cadeaux pour les comités d'entreprise ? Qui dois-je contacter ?"),
    ("fr83", "fr", "other", "normal", True, "Parking près du magasin de Nantes",
     "Bonjour, y a-t-il un parking près de votre magasin de Nantes ? Je viens avec une "
     "remorque pour récupérer un meuble."),
]

MAILS_EXTRA_ES: list[tuple[str, str, str, str, bool, str, str]] = [
    # billing (7)
    ("es29", "es", "billing", "urgent", True, "URGENTE: cobro de 2.900 euros en el TPV",
     "Buenos días, esta mañana su servicio de pagos nos ha devuelto a los clientes 2.900 "
     "euros de ventas que no habían pedido ningún reembolso, y el saldo de la cuenta del "
     "restaurante está en negativo. Mañana tenemos que pagar a los proveedores. Necesitamos "
     "que lo revisen y lo paren hoy mismo. Comercio 88-40211.\nRaúl Ortega, Restaurante El "
     "Puerto"),
    ("es30", "es", "billing", "normal", True, "RE: Reembolso vuelo cancelado",
     "¿Hay alguna novedad?\n\n> El 8 de noviembre, el equipo de soporte escribió:\n> Hemos "
     "enviado su solicitud de reembolso del vuelo VL-3390 al departamento de facturación."),
    ("es31", "es", "billing", "normal", True, "factura del movil",
     "hola por que me cobran 42 euros este mes si mi tarifa es de 15?? no he llamado al "
     "extranjero ni nada. la linea acaba en 5531"),
    ("es32", "es", "billing", "normal", True, "Pagar con Bizum",
     "Hola, ¿se puede pagar la cuota mensual con Bizum en vez de con tarjeta? Mi tarjeta "
     "caduca el mes que viene y no quiero quedarme sin servicio. Gracias, Marta"),
    ("es33", "es", "billing", "normal", True, "Factura a nombre de la empresa",
     "Buenas tardes, ¿podrían emitir la factura de la reserva HT-50291 (hotel en Sevilla, "
     "dos noches) a nombre de mi empresa? Datos: Ibérica Logística S.L., CIF B12345678, "
     "Calle Mayor 10, 28013 Madrid. Muchas gracias. Atentamente, Javier Romero"),
    ("es34", "es", "billing", "normal", True, "No entiendo el prorrateo",
     "Hola, a ver si me pueden explicar esto porque llevo un rato dándole vueltas. En "
     "septiembre teníamos el plan Business con 10 usuarios y a mitad de mes pasamos al plan "
     "Starter porque dos compañeros se fueron. Yo pensaba que nos devolverían la parte del "
     "plan Business que ya no usamos, pero la factura de octubre es el precio completo del "
     "Starter y no veo ningún abono por ningún lado. Nuestra gestora me pregunta y no sé qué "
     "decirle. ¿Cómo se calcula el cambio de plan? ¿Hay un abono pendiente? Gracias y un "
     "saludo, Pilar (Estudio Alba)"),
    ("es35", "es", "billing", "normal", True, "Invoice del Pro Plan",
     "Hola, tenemos el Pro Plan con el add-on de Extra Storage y la invoice de este mes "
     "viene con el IVA de Irlanda en lugar del español. ¿Me la pueden corregir? Nuestro NIF "
     "es B87654321. Thanks!"),
    # order (7)
    ("es36", "es", "order", "high", True, "El vestido para la boda no llega",
     "Hola, encargué un vestido para la boda de mi hermana (pedido 71940) con entrega "
     "garantizada antes del jueves. Hoy el seguimiento pone 'incidencia en reparto' y la "
     "boda es el sábado. ¿Pueden hacer algo? Es muy importante para mí."),
    ("es37", "es", "order", "normal", True, "¿Y mi pedido?",
     "¿Y mi pedido? Es el 60318."),
    ("es38", "es", "order", "normal", True, "RE: Devolución de la freidora",
     "Hola, la etiqueta que me mandasteis es para Correos pero en mi pueblo solo hay punto "
     "de SEUR. ¿Me podéis mandar otra?\nGracias, Nuria\n\n> Imprima la etiqueta adjunta y "
     "entregue el paquete en cualquier oficina.\n> El equipo de soporte"),
    ("es39", "es", "order", "normal", True, "Cancelar pedido 90277",
     "Buenas, quiero cancelar el pedido 90277 (una aspiradora), lo he encontrado más barato. "
     "En la web aún pone 'preparando'. ¿Llego a tiempo?"),
    ("es40", "es", "order", "normal", True, "Cambiar la fecha del hotel",
     "Hola, tengo una reserva en el Hotel Las Dunas de Cádiz (reserva HT-22871) del 5 al 8 "
     "de julio. ¿Se puede pasar al 12-15 de julio? ¿Tiene coste?"),
    ("es41", "es", "order", "normal", True, "Falta el mando",
     "Hola! Me ha llegado la tele del pedido 33412 pero en la caja no viene el mando a "
     "distancia. ¿Me lo podéis enviar? Un saludo, Carlos"),
    ("es42", "es", "order", "normal", True, "Envío a Canarias",
     "Buenos días, ¿realizan envíos a Las Palmas de Gran Canaria? ¿Cuánto tardaría un "
     "frigorífico y habría que pagar aduana?"),
    # technical (8)
    ("es43", "es", "technical", "urgent", True, "Sistema de reservas caído - restaurante lleno",
     "Desde las 19:00 el sistema de reservas no carga, sale 'Error 500 Internal Server "
     "Error' en todas las pantallas. Es viernes por la noche, el restaurante está lleno y no "
     "sabemos qué mesas están reservadas. Necesitamos que lo arreglen YA. Llámenme al 654 "
     "321 987.\nLaura Gil, La Tasca de Laura"),
    ("es44", "es", "technical", "high", True, "Cuenta bloqueada, no puedo trabajar",
     "Hola, he perdido el móvil donde tenía la app de autenticación y ahora no puedo entrar "
     "en la cuenta, me pide el código de 6 dígitos. Nunca me dieron códigos de respaldo. "
     "Toda la agenda de mis pacientes está ahí. ¿Cómo recupero el acceso?"),
    ("es45", "es", "technical", "normal", True, "La fibra va muy lenta",
     "Hola, tengo contratados 600 Mb y desde hace una semana los test de velocidad dan 40-50 "
     "Mb por cable. Ya he reiniciado el router varias veces. Cliente 7712045. ¿Pueden "
     "revisar la línea?"),
    ("es46", "es", "technical", "normal", True, "Error al importar clientes",
     "Buenas, al subir mi lista de clientes en CSV me aparece 'Import failed: duplicate key "
     "email'. He revisado el archivo y no veo correos repetidos. ¿Qué puedo hacer?"),
    ("es47", "es", "technical", "normal", True, "Las notificaciones no suenan",
     "Hola, en el iPhone las notificaciones de nuevas reservas llegan pero sin sonido, "
     "aunque el sonido está activado en la app y en el teléfono. ¿Es un fallo conocido?"),
    ("es48", "es", "technical", "normal", True, "no carga",
     "la app no carga desde ayer se queda en el logo. android"),
    ("es49", "es", "technical", "normal", True, "Configurar el correo en el móvil",
     "Hola, ¿qué datos de servidor tengo que poner para configurar el correo de mi dominio "
     "en el móvil? El asistente me pide servidor IMAP y SMTP y no sé cuáles son. Gracias, "
     "Ernesto"),
    ("es50", "es", "technical", "normal", True, "Smart TV no encuentra el WiFi",
     "Hola, he comprado una Smart TV en su tienda y no detecta la red WiFi del router que "
     "ustedes me instalaron, el resto de dispositivos sí la ven. ¿Hay que cambiar algo en "
     "el router?"),
    # account (6)
    ("es51", "es", "account", "normal", True, "Cambio de titular",
     "Buenos días, mi padre falleció el mes pasado y quisiera poner el contrato de la luz "
     "a mi nombre. ¿Qué documentación necesitan? Contrato 4402118. Un saludo, Teresa "
     "Navarro"),
    ("es52", "es", "account", "normal", True, "Baja de la línea fija",
     "Estimados señores: les ruego que den de baja mi línea fija (cliente 20918377) con "
     "efecto 1 de enero y me lo confirmen por escrito. Atentamente, Antonio Serrano"),
    ("es53", "es", "account", "normal", True, "Error en mi DNI",
     "Hola, en mi perfil aparece el DNI 12345678Z pero el correcto es 12345679Z. Desde la "
     "app no me deja cambiarlo. ¿Lo pueden corregir ustedes?"),
    ("es54", "es", "account", "normal", True, "Acceso a mis datos (RGPD)",
     "Conforme al artículo 15 del RGPD, solicito una copia de todos los datos personales "
     "que tratan sobre mí y la finalidad del tratamiento. Cliente 55-019283."),
    ("es55", "es", "account", "normal", True, "Pasar a la tarifa ilimitada",
     "Hola, quiero cambiarme de la tarifa de 25 GB a la ilimitada este mismo mes. ¿Mantengo "
     "el número? ¿Tengo permanencia?"),
    ("es56", "es", "account", "normal", True, "nuevo email",
     "porfa cambiad mi email a pablo.garcia.r@correo.es gracias"),
    # complaint (5)
    ("es57", "es", "complaint", "high", True, "Cuarta vez que reclamo lo mismo",
     "Es la CUARTA vez que escribo por el mismo cargo de 29,99 euros de un servicio que di "
     "de baja en marzo. Siempre me dicen que se soluciona y cada mes me lo vuelven a cobrar. "
     "Estoy harta. Quiero que me devuelvan todo o iré a Consumo."),
    ("es58", "es", "complaint", "high", True, "Vergonzoso",
     "Compré un sofá hace dos meses, llegó con una pata rota, me dijeron que mandarían un "
     "técnico y no ha venido nadie. Llamo y me tienen media hora esperando para nada. Es "
     "vergonzoso. Quiero que vengan a llevárselo y me devuelvan el dinero."),
    ("es59", "es", "complaint", "high", True, "HARTO",
     "ESTOY HARTO. TERCERA VEZ ESTE MES SIN INTERNET Y NADIE ME DA UNA SOLUCIÓN. PAGO POR "
     "ALGO QUE NO FUNCIONA. QUIERO UNA COMPENSACIÓN."),
    ("es60", "es", "complaint", "high", True, "El apartamento no era lo que anunciaban",
     "Reservamos a través de ustedes un apartamento en Benidorm (reserva AP-70415) "
     "anunciado como 'primera línea de playa, reformado'. Estaba a veinte minutos de la "
     "playa, sucio y con el aire acondicionado roto en pleno agosto. Llamamos al teléfono de "
     "emergencias y nadie contestó. Tuvimos que irnos a un hotel y pagarlo aparte. Estoy "
     "indignada y exijo el reembolso completo y los gastos del hotel."),
    ("es61", "es", "complaint", "high", True, "Reclamación formal",
     "Estimados señores:\n\nPor medio de la presente presento una reclamación formal. Por "
     "tercer mes consecutivo mi factura contiene errores y cada corrección me ha costado "
     "semanas y numerosas llamadas. Exijo una explicación por escrito, la factura corregida "
     "y una compensación.\n\nAtentamente,\nMercedes Ruiz"),
    # feedback (6)
    ("es62", "es", "feedback", "low", False, "RE: Cambio de contraseña",
     "¡Gracias, ya funciona!"),
    ("es63", "es", "feedback", "low", False, "Gracias a Sergio",
     "Quería dar las gracias a Sergio, del servicio técnico, que vino ayer a instalar la "
     "fibra. Fue puntual, amable y lo dejó todo recogido. Da gusto. Un saludo, Amparo"),
    ("es64", "es", "feedback", "low", False, "La nueva web",
     "La nueva web es mucho más clara, por fin encuentro mis facturas a la primera. ¡Buen "
     "trabajo!"),
    ("es65", "es", "feedback", "low", True, "Me encanta la app, ¿y el modo oscuro?",
     "Hola, la app de reservas es genial, mis camareros la usan sin problema. ¿Tenéis "
     "pensado añadir un modo oscuro? Por la noche la pantalla deslumbra bastante."),
    ("es66", "es", "feedback", "low", True, "Sugerencia: facturas en gallego",
     "Buenas, muy contenta con el servicio. Una sugerencia: ¿podrían ofrecer las facturas "
     "también en gallego? ¿Es posible o está previsto?"),
    ("es67", "es", "feedback", "low", True, "Felicidades por el envío",
     "¡Qué rapidez! Pedí el lunes y el martes ya lo tenía. Una pregunta: ¿la tienda de "
     "Valencia tiene también la sección de outlet que tenéis en la web?"),
    # notification (6)
    ("es68", "es", "notification", "low", False, "Tu pedido 10-44120 ha sido enviado",
     "¡Buenas noticias! Tu pedido 10-44120 ya está en camino. Transportista: SEUR, número de "
     "seguimiento 7788990011. Entrega estimada: jueves. Este es un mensaje automático, por "
     "favor no respondas."),
    ("es69", "es", "notification", "low", False, "Se ha cambiado tu contraseña",
     "La contraseña de tu cuenta se cambió el 30/11/2026 a las 18:20. Si has sido tú, no "
     "tienes que hacer nada. Este correo se ha enviado automáticamente."),
    ("es70", "es", "notification", "low", False, "Respuesta automática: RE: Factura 3310",
     "Gracias por su mensaje. Estaré de baja por maternidad hasta el 15 de febrero y no "
     "leeré el correo. Para temas de contabilidad escriba a contabilidad@iberica-log.es."),
    ("es71", "es", "notification", "low", False, "Rebajas de invierno: hasta -60%",
     "Llegan las rebajas de invierno: hasta un 60% de descuento en electrónica y hogar. Solo "
     "hasta el domingo. Si no quieres recibir más ofertas, date de baja aquí."),
    ("es72", "es", "notification", "low", False, "Entrega fallida del mensaje",
     "No se pudo entregar el mensaje a los siguientes destinatarios: j.romero@iberica-log.es. "
     "El buzón del destinatario está lleno. Información de diagnóstico: 552 5.2.2 Mailbox "
     "full."),
    ("es73", "es", "notification", "low", False, "Boletín Hostelería Hoy nº 87",
     "En este número: cómo reducir las mesas vacías, cinco sistemas de reservas comparados "
     "y entrevista a una jefa de sala. Recibes este boletín porque te suscribiste en la "
     "feria. Puedes darte de baja cuando quieras."),
    # spam (5)
    ("es74", "es", "spam", "low", False, "Invierte 250 € y gana 5.000 € al mes",
     "Nuestro robot de inversión en criptomonedas ha conseguido un +300% este año. Deposita "
     "solo 250 € hoy y empieza a retirar beneficios mañana. ¡Plazas limitadas!"),
    ("es75", "es", "spam", "low", False, "Su paquete está retenido en aduanas",
     "Su paquete no ha podido ser entregado por tasas pendientes de 1,79 €. Pague en las "
     "próximas 48 horas con su tarjeta en el siguiente enlace o el envío será devuelto."),
    ("es76", "es", "spam", "low", False, "Su cuenta será cerrada",
     "Estimado cliente: hemos detectado actividad sospechosa. Su cuenta será cerrada en 24 "
     "horas si no verifica su identidad. Introduzca su usuario, contraseña y PIN en el "
     "enlace."),
    ("es77", "es", "spam", "low", False, "Posicionamiento web garantizado",
     "Hola, somos expertos en SEO. Ponemos su web en la primera página de Google en 30 días "
     "por solo 99 €/mes. Responda a este correo y le hacemos una auditoría gratis."),
    ("es78", "es", "spam", "low", False, "Factura pendiente de pago nº 2026-7731",
     "Adjuntamos la factura pendiente nº 2026-7731 por importe de 1.250,00 €. Para verla, "
     "acceda con la contraseña de su correo. Realice el pago a nuestra nueva cuenta bancaria "
     "antes de 24 horas para evitar recargos."),
    # other (5)
    ("es79", "es", "other", "normal", True, "Candidatura: atención al cliente",
     "Buenos días, me llamo Andrea Molina y me gustaría formar parte de su equipo de "
     "atención al cliente. Tengo experiencia en hostelería y hablo español, inglés e "
     "italiano. Adjunto mi currículum. ¿Tienen algún proceso de selección abierto?"),
    ("es80", "es", "other", "normal", True, "Entrevista para un reportaje",
     "Hola, soy periodista de El Diario de Málaga y estoy preparando un reportaje sobre "
     "empresas tecnológicas andaluzas. ¿Podría hablar con alguien de la empresa esta "
     "semana?"),
    ("es81", "es", "other", "normal", True, "Colaboración con nuestra asociación",
     "Hola, somos una asociación de vecinos de Zaragoza y organizamos un mercadillo "
     "solidario en mayo. ¿Les interesaría colaborar con algún producto para el sorteo? "
     "Saludos, Asociación Vecinal Delicias"),
    ("es82", "es", "other", "normal", True, "Encuesta para mi TFG",
     "Hola, estoy haciendo mi TFG sobre la atención al cliente en empresas de "
     "telecomunicaciones. ¿Alguien de vuestro equipo podría responder una encuesta de 10 "
     "minutos? ¡Muchas gracias!"),
    ("es83", "es", "other", "normal", True, "Accesibilidad de la tienda",
     "Buenas tardes, mi madre va en silla de ruedas. ¿La tienda de Bilbao tiene rampa o "
     "ascensor? Queremos ir el sábado."),
]

MAILS_EXTRA: list[tuple[str, str, str, str, bool, str, str]] = (
    MAILS_EXTRA_EN + MAILS_EXTRA_DE + MAILS_EXTRA_FR + MAILS_EXTRA_ES
)

# The team's knowledge that reference replies may state: the same facts in every language
# (index i of each list is the same policy). Nothing else is claimed in a reply.
TEAM_POLICIES: dict[str, list[str]] = {
    "en": [
        "Refunds: once we have confirmed a wrong or duplicate charge, we refund it to the "
        "original payment method; the money arrives within 5 business days.",
        "Returns: possible within 30 days of delivery; we send a prepaid return label by "
        "email; the refund follows within 5 business days after the return arrives.",
        "Exchanges: the item goes back with the same prepaid return label; the new size or "
        "variant is shipped as soon as the return has arrived.",
        "Wrong, damaged or incomplete delivery: we send the correct item or the missing part "
        "free of charge; a wrong or damaged item goes back with a prepaid return label.",
        "Order changes (address, cancellation, adding items): possible as long as the order "
        "has not been shipped.",
        "Parcel shown as delivered but not received: we open an investigation with the "
        "carrier; if the parcel is not found, we send a replacement or refund the order.",
        "Password: the link 'Forgot password?' on the login page sends a reset email that is "
        "valid for 24 hours; if it does not arrive (check the spam folder), we reset the "
        "password manually.",
        "Locked account or lost second factor: after we have verified the customer's identity "
        "by phone (customer number and amount of the last invoice), we reset the second "
        "factor and the customer sets it up again.",
        "Cancellation: subscriptions and contracts end at the end of the current billing "
        "period; we confirm in writing by email; a rented router is returned with a prepaid "
        "label that we send after the contract ends.",
        "Account data: an e-mail address change is confirmed through a link sent to the new "
        "address; other personal data (name, phone, address) we change on request.",
        "Personal data (GDPR): deletion or a copy of the data within 30 days, confirmed by "
        "email.",
        "Invoices: every invoice is available as a PDF in the customer account under "
        "'Invoices'; corrected invoices (company name, VAT ID, address) are issued on request.",
        "Payment method: can be changed at any time in the customer account under 'Payment "
        "methods'.",
        "Outages and errors: reported immediately to the on-call technicians; we report back "
        "as soon as the cause is known.",
        "Suggestions: forwarded to the product team; we do not promise dates.",
        "Applications, press, partnership and sponsorship requests: forwarded to the "
        "responsible colleagues, who reply directly.",
        "Support hours: Monday to Friday, 8:00 to 18:00.",
    ],
    "de": [
        "Erstattungen: Sobald eine falsche oder doppelte Abbuchung bestätigt ist, erstatten "
        "wir sie auf das ursprüngliche Zahlungsmittel; das Geld ist innerhalb von 5 Werktagen "
        "da.",
        "Rücksendungen: innerhalb von 30 Tagen nach Lieferung; wir schicken ein vorfrankiertes "
        "Rücksendeetikett per E-Mail; die Erstattung folgt innerhalb von 5 Werktagen nach "
        "Eingang der Rücksendung.",
        "Umtausch: der Artikel geht mit demselben vorfrankierten Etikett zurück; die neue "
        "Größe oder Variante verschicken wir, sobald die Rücksendung angekommen ist.",
        "Falsche, beschädigte oder unvollständige Lieferung: wir schicken den richtigen "
        "Artikel oder das fehlende Teil kostenlos; ein falscher oder beschädigter Artikel geht "
        "mit einem vorfrankierten Etikett zurück.",
        "Änderungen an Bestellungen (Adresse, Stornierung, Artikel hinzufügen): möglich, "
        "solange die Bestellung noch nicht versandt ist.",
        "Paket als zugestellt gemeldet, aber nicht erhalten: wir stellen einen "
        "Nachforschungsauftrag beim Versanddienstleister; wird das Paket nicht gefunden, "
        "schicken wir Ersatz oder erstatten die Bestellung.",
        "Passwort: der Link 'Passwort vergessen?' auf der Anmeldeseite schickt eine E-Mail "
        "zum Zurücksetzen, die 24 Stunden gültig ist; kommt sie nicht an (Spam-Ordner prüfen), "
        "setzen wir das Passwort manuell zurück.",
        "Gesperrtes Konto oder verlorener zweiter Faktor: nachdem wir die Identität telefonisch "
        "geprüft haben (Kundennummer und Betrag der letzten Rechnung), setzen wir den zweiten "
        "Faktor zurück und der Kunde richtet ihn neu ein.",
        "Kündigung: Abos und Verträge enden zum Ende des laufenden Abrechnungszeitraums; wir "
        "bestätigen schriftlich per E-Mail; einen gemieteten Router schickt der Kunde mit "
        "einem vorfrankierten Etikett zurück, das wir nach Vertragsende senden.",
        "Kontodaten: eine Änderung der E-Mail-Adresse wird über einen Link an die neue Adresse "
        "bestätigt; andere Daten (Name, Telefon, Adresse) ändern wir auf Wunsch.",
        "Personenbezogene Daten (DSGVO): Löschung oder Auskunft innerhalb von 30 Tagen, "
        "Bestätigung per E-Mail.",
        "Rechnungen: jede Rechnung steht als PDF im Kundenkonto unter 'Rechnungen'; "
        "korrigierte Rechnungen (Firmenname, USt-IdNr., Adresse) stellen wir auf Wunsch aus.",
        "Zahlungsart: jederzeit im Kundenkonto unter 'Zahlungsarten' änderbar.",
        "Störungen und Fehler: sofort an die Technik in Rufbereitschaft gemeldet; wir melden "
        "uns, sobald die Ursache bekannt ist.",
        "Vorschläge: gehen an das Produktteam; Termine versprechen wir nicht.",
        "Bewerbungen, Presse-, Partnerschafts- und Sponsoringanfragen: gehen an die "
        "zuständigen Kolleginnen und Kollegen, die sich direkt melden.",
        "Servicezeiten: Montag bis Freitag, 8 bis 18 Uhr.",
    ],
    "fr": [
        "Remboursements : une fois un prélèvement erroné ou en double confirmé, nous le "
        "remboursons sur le moyen de paiement d'origine ; l'argent arrive sous 5 jours ouvrés.",
        "Retours : possibles dans les 30 jours suivant la livraison ; nous envoyons une "
        "étiquette de retour prépayée par e-mail ; le remboursement suit sous 5 jours ouvrés "
        "après réception du retour.",
        "Échanges : l'article repart avec la même étiquette prépayée ; la nouvelle taille ou "
        "variante est expédiée dès réception du retour.",
        "Livraison erronée, abîmée ou incomplète : nous envoyons gratuitement le bon article ou "
        "la pièce manquante ; l'article erroné ou abîmé repart avec une étiquette prépayée.",
        "Modifications de commande (adresse, annulation, ajout d'articles) : possibles tant que "
        "la commande n'a pas été expédiée.",
        "Colis indiqué livré mais non reçu : nous ouvrons une enquête auprès du transporteur ; "
        "si le colis n'est pas retrouvé, nous envoyons un remplacement ou remboursons la "
        "commande.",
        "Mot de passe : le lien « Mot de passe oublié ? » sur la page de connexion envoie un "
        "e-mail de réinitialisation valable 24 heures ; s'il n'arrive pas (vérifier les "
        "spams), nous réinitialisons le mot de passe manuellement.",
        "Compte verrouillé ou second facteur perdu : après vérification de l'identité par "
        "téléphone (numéro client et montant de la dernière facture), nous réinitialisons le "
        "second facteur et le client le configure à nouveau.",
        "Résiliation : abonnements et contrats prennent fin à la fin de la période de "
        "facturation en cours ; confirmation écrite par e-mail ; une box louée est renvoyée "
        "avec une étiquette prépayée que nous envoyons après la fin du contrat.",
        "Données du compte : un changement d'adresse e-mail est confirmé par un lien envoyé à "
        "la nouvelle adresse ; les autres données (nom, téléphone, adresse) sont modifiées par "
        "nos soins sur demande.",
        "Données personnelles (RGPD) : suppression ou copie des données sous 30 jours, "
        "confirmée par e-mail.",
        "Factures : toutes les factures sont disponibles en PDF dans l'espace client, rubrique "
        "« Factures » ; des factures corrigées (raison sociale, numéro de TVA, adresse) sont "
        "émises sur demande.",
        "Moyen de paiement : modifiable à tout moment dans l'espace client, rubrique « Moyens "
        "de paiement ».",
        "Pannes et erreurs : signalées immédiatement aux techniciens d'astreinte ; nous "
        "revenons vers le client dès que la cause est connue.",
        "Suggestions : transmises à l'équipe produit ; nous ne promettons pas de date.",
        "Candidatures, demandes de presse, de partenariat et de parrainage : transmises aux "
        "collègues concernés, qui répondent directement.",
        "Horaires du support : du lundi au vendredi, de 8 h à 18 h.",
    ],
    "es": [
        "Reembolsos: una vez confirmado un cargo erróneo o duplicado, lo devolvemos al medio "
        "de pago original; el dinero llega en un plazo de 5 días hábiles.",
        "Devoluciones: posibles en los 30 días siguientes a la entrega; enviamos una etiqueta "
        "de devolución prepagada por correo electrónico; el reembolso llega en 5 días hábiles "
        "desde que recibimos la devolución.",
        "Cambios: el artículo se devuelve con la misma etiqueta prepagada; la nueva talla o "
        "variante se envía en cuanto recibimos la devolución.",
        "Entrega equivocada, dañada o incompleta: enviamos sin coste el artículo correcto o la "
        "pieza que falta; el artículo equivocado o dañado se devuelve con una etiqueta "
        "prepagada.",
        "Cambios en un pedido (dirección, cancelación, añadir artículos): posibles mientras el "
        "pedido no se haya enviado.",
        "Paquete marcado como entregado pero no recibido: abrimos una investigación con el "
        "transportista; si el paquete no aparece, enviamos un repuesto o reembolsamos el "
        "pedido.",
        "Contraseña: el enlace «¿Has olvidado tu contraseña?» de la página de inicio de sesión "
        "envía un correo para restablecerla, válido 24 horas; si no llega (revisar la carpeta "
        "de spam), restablecemos la contraseña manualmente.",
        "Cuenta bloqueada o segundo factor perdido: después de verificar la identidad por "
        "teléfono (número de cliente e importe de la última factura), restablecemos el segundo "
        "factor y el cliente lo configura de nuevo.",
        "Bajas: suscripciones y contratos terminan al final del periodo de facturación en "
        "curso; lo confirmamos por escrito por correo electrónico; el router de alquiler se "
        "devuelve con una etiqueta prepagada que enviamos al terminar el contrato.",
        "Datos de la cuenta: el cambio de correo electrónico se confirma con un enlace enviado "
        "a la nueva dirección; los demás datos (nombre, teléfono, dirección) los cambiamos "
        "nosotros si el cliente lo pide.",
        "Datos personales (RGPD): eliminación o copia de los datos en un plazo de 30 días, "
        "confirmada por correo electrónico.",
        "Facturas: todas las facturas están en PDF en el área de cliente, apartado «Facturas»; "
        "emitimos facturas corregidas (razón social, NIF, dirección) si el cliente lo pide.",
        "Forma de pago: se puede cambiar en cualquier momento en el área de cliente, apartado "
        "«Formas de pago».",
        "Caídas y errores: se comunican de inmediato a los técnicos de guardia; avisamos al "
        "cliente en cuanto se conoce la causa.",
        "Sugerencias: se envían al equipo de producto; no prometemos fechas.",
        "Candidaturas, prensa, colaboraciones y patrocinios: se envían a los compañeros "
        "responsables, que contestan directamente.",
        "Horario de soporte: de lunes a viernes, de 8:00 a 18:00.",
    ],
}

# Reference replies: what a good agent of the team sends (language and register of the
# mail, the team's sign-off, only facts from the mail and TEAM_POLICIES).
_EN_SIGN = "\n\nBest regards,\nYour support team at Example Ltd"
_DE_SIE = "\n\nMit freundlichen Grüßen\nIhr Support-Team von Beispiel GmbH"
_DE_DU = "\n\nViele Grüße\nIhr Support-Team von Beispiel GmbH"
_FR_SIGN = "\n\nCordialement,\nL'équipe support d'Exemple SARL"
_FR_TU = "\n\nÀ bientôt,\nL'équipe support d'Exemple SARL"
_ES_SIGN = "\n\nUn saludo,\nEl equipo de soporte de Ejemplo S.L."

REFERENCE_REPLIES: dict[str, str] = {
    # --- English ---
    "en01": "Hello Laura,\n\nthank you for letting us know, and sorry for the trouble. We are "
            "checking the two payments for invoice 4411 now. As soon as we have confirmed the "
            "duplicate charge, we will refund it to your credit card; the money arrives within "
            "5 business days. We will email you once the refund has been issued." + _EN_SIGN,
    "en04": "Hello,\n\nthank you for your message. We have asked the carrier to look into "
            "order 88213, since the tracking has not changed since Monday. We will get back to "
            "you as soon as we hear from them. If the parcel cannot be found, we will send you "
            "a replacement or refund the order - whichever you prefer." + _EN_SIGN,
    "en05": "Hello,\n\nno problem - you can return the jacket from order 55120 within 30 days of "
            "delivery. We will send you a prepaid return label by email. If you would like "
            "size L instead, just reply to this email and we will ship it as soon as your "
            "return has arrived; if you prefer a refund, it follows within 5 business days "
            "after the jacket is back with us." + _EN_SIGN,
    "en07": "Hello,\n\nsorry that you are locked out when you need your documents. We have "
            "passed the 'invalid session' error on to our technicians straight away and will "
            "get back to you as soon as we know the cause. In the meantime, please try to log "
            "in once in a private browser window and let us know whether the same message "
            "appears there." + _EN_SIGN,
    "en12": "Hello,\n\nwe have received your cancellation. Your premium subscription ends at "
            "the end of the current billing period, and you can keep using it until then. You "
            "will receive a written confirmation of the cancellation by email." + _EN_SIGN,
    "en13": "Hello,\n\nwe have received your request to delete your personal data. We will "
            "delete the data we hold about you within 30 days and confirm by email once this "
            "has been done." + _EN_SIGN,
    "en14": "Hello,\n\nI am very sorry that your delivery was late for the third time and that "
            "you could not reach us by phone - that is not the service you should get from us. "
            "I have taken over your case personally and am looking into all three deliveries "
            "now. I will write to you with an explanation and a proposal for compensation as "
            "soon as I have the details." + _EN_SIGN,
    "en17": "Hello,\n\nthank you for the suggestion! We have passed your wish for a dark mode "
            "and your interest in testing a beta on to our product team. We cannot promise a "
            "date, but your message has been noted." + _EN_SIGN,
    "en22": "Hello,\n\nthank you for your interest in working with us. We have forwarded your "
            "message to our colleagues responsible for recruitment, who will reply to you "
            "directly." + _EN_SIGN,
    "en26": "Hello,\n\nsorry that the reset email is not reaching you. Since it has not arrived "
            "even in your spam folder, we will reset the password for the user kmiller "
            "manually and send you a new reset email shortly; the link in it is valid for 24 "
            "hours." + _EN_SIGN,
    "en30": "Hello,\n\nthank you for your patience. We have asked our billing team again about "
            "the refund for booking HX-5521. As soon as the refund is confirmed, it is sent to "
            "your original payment method and arrives within 5 business days. We will email "
            "you the moment we hear back." + _EN_SIGN,
    "en36": "Hello Daniel,\n\nsorry, we understand how important the suit is for Saturday. We "
            "have contacted the carrier about the 'address not found' exception for order "
            "40917 and asked them to deliver to the address on the order. We will get back to "
            "you today with their answer." + _EN_SIGN,
    "en38": "Hello Gwen,\n\nsorry for the mix-up with the label. We will send you the correct "
            "prepaid return label for order 55190 by email shortly. Please do not use the "
            "earlier one." + _EN_SIGN,
    "en44": "Hello,\n\nsorry you are locked out before your presentation. We can reset the "
            "second factor on your account once we have verified your identity: please call "
            "us (Monday to Friday, 8:00 to 18:00) with your customer number and the amount of "
            "your last invoice ready. After the reset you can log in with your password and "
            "set up the authenticator app on your new phone." + _EN_SIGN,
    "en52": "Hello,\n\nthank you for letting us know. We have noted the cancellation of your "
            "broadband contract (customer no. 5530021) for 31 March and will confirm the end "
            "date in writing by email. After the contract ends, we will send you a prepaid "
            "label to return the router." + _EN_SIGN,
    "en57": "Hello,\n\nI am sorry - you should not have had to write four times, and you are "
            "right to be angry. I have taken over your case myself. We are checking every 49.99 "
            "charge since your cancellation in January; each charge we confirm will be refunded "
            "to your original payment method within 5 business days, and I will make sure no "
            "further charge is taken. I will write to you with the result." + _EN_SIGN,
    "en65": "Hello,\n\nthank you, we are glad you like the budgeting view! We have passed your "
            "wish for the home screen widget on Android on to our product team. We cannot "
            "promise a date yet." + _EN_SIGN,
    "en79": "Dear Ms Nowak,\n\nthank you for your application for the part-time customer "
            "support position. We have forwarded it to the colleagues responsible for "
            "recruitment, who will contact you directly about the next steps." + _EN_SIGN,
    # --- German ---
    "de01": "Guten Tag Frau Berg,\n\nvielen Dank für Ihre Nachricht, und entschuldigen Sie die "
            "Unannehmlichkeiten. Wir prüfen die beiden Abbuchungen für die Rechnung 2026-113. "
            "Sobald die doppelte Abbuchung bestätigt ist, erstatten wir den Betrag auf Ihr "
            "Konto; das Geld ist innerhalb von 5 Werktagen da. Wir melden uns, sobald die "
            "Erstattung veranlasst ist." + _DE_SIE,
    "de04": "Guten Tag,\n\nvielen Dank für Ihre Nachricht. Wir haben beim Versanddienstleister "
            "nachgefragt, wo Ihre Bestellung 44120 bleibt, und melden uns, sobald wir eine "
            "Antwort haben. Sollte das Paket nicht auffindbar sein, schicken wir Ihnen Ersatz "
            "oder erstatten die Bestellung." + _DE_SIE,
    "de05": "Guten Tag,\n\nja, das geht gern. Wir schicken Ihnen ein vorfrankiertes "
            "Rücksendeetikett per E-Mail. Sobald die Schuhe aus Bestellung 30219 bei uns "
            "angekommen sind, verschicken wir Größe 42." + _DE_SIE,
    "de07": "Guten Tag,\n\nentschuldigen Sie, dass Sie nicht an Ihre Daten kommen. Wir haben "
            "den 'Fehler 401' nach dem Update sofort an unsere Technik weitergegeben und melden "
            "uns, sobald die Ursache bekannt ist. Bitte schreiben Sie uns kurz, welches Gerät "
            "und welche App-Version Sie nutzen, das hilft bei der Suche." + _DE_SIE,
    "de12": "Guten Tag,\n\nwir haben Ihre Kündigung für den Vertrag mit der Kundennummer 778812 "
            "erhalten. Der Vertrag endet zum Ende des laufenden Abrechnungszeitraums; die "
            "schriftliche Bestätigung erhalten Sie per E-Mail." + _DE_SIE,
    "de17": "Hallo,\n\ndanke für deinen Vorschlag! Eine Suchfunktion für alte Rechnungen haben "
            "wir an unser Produktteam weitergegeben. Einen Termin können wir dir leider nicht "
            "versprechen. Bis dahin findest du alle Rechnungen als PDF in deinem Kundenkonto "
            "unter 'Rechnungen'." + _DE_DU,
    "de23": "Guten Tag,\n\nvielen Dank für Ihr Interesse an einem Praktikum bei uns. Wir haben "
            "Ihre Anfrage an die zuständigen Kolleginnen und Kollegen weitergeleitet, die sich "
            "direkt bei Ihnen melden." + _DE_SIE,
    "de26": "Guten Tag,\n\nentschuldigen Sie die Umstände. Bitte schauen Sie zunächst im "
            "Spam-Ordner nach der E-Mail zum Zurücksetzen. Ist sie auch dort nicht, setzen wir "
            "Ihr Passwort gern manuell zurück - antworten Sie dazu einfach auf diese E-Mail. "
            "Der Link in der E-Mail ist jeweils 24 Stunden gültig." + _DE_SIE,
    "de30": "Guten Tag,\n\nvielen Dank für Ihre Geduld. Wir haben bei der Buchhaltung noch "
            "einmal wegen der Gutschrift zur Rechnung 2026-318 nachgefragt und melden uns, "
            "sobald wir die Antwort haben. Wird die Gutschrift bestätigt, ist das Geld "
            "innerhalb von 5 Werktagen auf Ihrem Konto." + _DE_SIE,
    "de32": "Hallo Jonas,\n\nklar, das geht: Du kannst die Zahlungsart jederzeit selbst in "
            "deinem Kundenkonto unter 'Zahlungsarten' auf SEPA-Lastschrift umstellen. Deine "
            "IBAN gibst du dort direkt ein, bitte schick sie uns nicht per E-Mail." + _DE_DU,
    "de36": "Guten Tag,\n\nwir verstehen, wie wichtig das Fahrrad bis Samstag ist. Wir haben "
            "Ihre Bestellung 81150 sofort an unser Lager weitergegeben und prüfen, ob sie heute "
            "noch per Express rausgehen kann. Wir melden uns noch heute bei Ihnen. Solange die "
            "Bestellung nicht versandt ist, können Sie sie auch stornieren."
            + _DE_SIE,
    "de41": "Hallo Timo,\n\nsorry, dass das Teil fehlt! Wir schicken dir die "
            "Lattenrost-Halterung (Teil Nummer 14) für das Kinderbett aus Bestellung 70412 "
            "kostenlos an die Adresse aus deiner Bestellung." + _DE_DU,
    "de44": "Guten Tag,\n\ndie Sperre nach mehreren falschen Passwörtern heben wir gern auf, "
            "sobald wir Ihre Identität geprüft haben. Bitte rufen Sie uns dazu an (Montag bis "
            "Freitag, 8 bis 18 Uhr) und halten Sie Ihre Kundennummer und den Betrag Ihrer "
            "letzten Rechnung bereit. Danach können Sie über 'Passwort vergessen?' auf der "
            "Anmeldeseite ein neues Passwort setzen." + _DE_SIE,
    "de57": "Guten Tag,\n\nes tut mir leid - Sie hätten nicht viermal schreiben müssen, und "
            "Ihr Ärger ist berechtigt. Ich habe Ihren Fall selbst übernommen. Wir prüfen jede "
            "Abbuchung von 39,99 Euro seit Ihrer Kündigung im Januar; jede bestätigte Abbuchung "
            "erstatten wir innerhalb von 5 Werktagen auf Ihr ursprüngliches Zahlungsmittel, "
            "und ich sorge dafür, dass nichts mehr abgebucht wird. Ich melde mich mit dem "
            "Ergebnis bei Ihnen." + _DE_SIE,
    "de59": "Guten Tag,\n\ndas tut uns sehr leid - so darf mit einer Lieferung nicht umgegangen "
            "werden. Wir schicken Ihnen kostenlos einen neuen Monitor. Für den beschädigten "
            "Monitor erhalten Sie ein vorfrankiertes Rücksendeetikett per E-Mail. Wenn Sie uns "
            "das Video schicken, geben wir es an den Versanddienstleister weiter." + _DE_SIE,
    "de66": "Hallo,\n\ndanke für den Vorschlag! Die Lieferung an eine Packstation haben wir an "
            "unser Produktteam weitergegeben. Versprechen können wir dir noch nichts, aber dein "
            "Wunsch ist notiert." + _DE_DU,
    "de79": "Guten Tag Frau Demir,\n\nvielen Dank für Ihre Bewerbung als Kundenberaterin in "
            "Teilzeit. Wir haben sie an die zuständigen Kolleginnen und Kollegen weitergeleitet, "
            "die sich direkt bei Ihnen melden." + _DE_SIE,
    # --- French ---
    "fr01": "Bonjour Claire,\n\nmerci pour votre message et désolés pour ce désagrément. Nous "
            "vérifions les deux paiements de la facture 5520. Dès que le double prélèvement est "
            "confirmé, nous vous remboursons le second paiement sur votre moyen de paiement "
            "d'origine ; l'argent arrive sous 5 jours ouvrés. Nous vous écrirons dès que le "
            "remboursement sera effectué." + _FR_SIGN,
    "fr04": "Bonjour,\n\nmerci pour votre message. Nous avons interrogé le transporteur au "
            "sujet de votre commande 8812 et revenons vers vous dès que nous avons sa réponse. "
            "Si le colis n'est pas retrouvé, nous vous enverrons un remplacement ou vous "
            "rembourserons la commande." + _FR_SIGN,
    "fr05": "Bonjour,\n\naucun souci : vous pouvez retourner la robe de la commande 40331 dans "
            "les 30 jours suivant la livraison. Nous vous envoyons une étiquette de retour "
            "prépayée par e-mail ; il suffit de la coller sur le colis. Le remboursement suit "
            "sous 5 jours ouvrés après réception du retour." + _FR_SIGN,
    "fr07": "Bonjour,\n\ndésolés que vous ne puissiez pas accéder à vos documents. Nous avons "
            "transmis immédiatement l'erreur 500 de l'espace client à nos techniciens "
            "d'astreinte et revenons vers vous dès que la cause est connue." + _FR_SIGN,
    "fr12": "Bonjour,\n\nnous avons bien reçu votre demande de résiliation. Votre abonnement "
            "prend fin à la fin de la période de facturation en cours ; vous recevrez la "
            "confirmation écrite par e-mail." + _FR_SIGN,
    "fr13": "Bonjour,\n\nnous avons bien reçu votre demande. Votre compte et vos données "
            "personnelles seront supprimés sous 30 jours, et nous vous le confirmerons par "
            "e-mail." + _FR_SIGN,
    "fr14": "Bonjour,\n\nnous sommes sincèrement désolés : une commande en retard, abîmée, et "
            "personne pour vous répondre, ce n'est pas le service que vous méritez. Nous vous "
            "envoyons gratuitement un article de remplacement, et l'article abîmé pourra "
            "repartir avec une étiquette prépayée. Je m'occupe personnellement de votre dossier "
            "et reviens vers vous au sujet du dédommagement." + _FR_SIGN,
    "fr17": "Bonjour,\n\nmerci pour votre suggestion ! Nous avons transmis votre souhait de "
            "pouvoir payer avec PayPal à notre équipe produit. Nous ne pouvons pas encore vous "
            "donner de date." + _FR_SIGN,
    "fr22": "Bonjour,\n\nmerci pour votre proposition de partenariat. Nous l'avons transmise "
            "aux collègues concernés, qui vous répondront directement." + _FR_SIGN,
    "fr26": "Bonjour,\n\ndésolés pour ce souci. Nous allons réinitialiser votre mot de passe "
            "manuellement et vous envoyer un nouvel e-mail de réinitialisation ; le lien sera "
            "valable 24 heures. Pensez à vérifier aussi vos spams." + _FR_SIGN,
    "fr30": "Bonjour,\n\nmerci de votre patience. Nous avons relancé notre service facturation "
            "au sujet du remboursement du billet TR-4410. Dès qu'il est confirmé, l'argent "
            "arrive sous 5 jours ouvrés sur votre moyen de paiement d'origine. Nous vous "
            "écrivons dès que nous avons leur réponse." + _FR_SIGN,
    "fr31": "Salut,\n\npas de souci ! On vérifie l'activation de l'option « Europe+ » sur ta "
            "ligne. Dès que c'est confirmé, on te rembourse les 10 € sur ton moyen de paiement "
            "d'origine, sous 5 jours ouvrés." + _FR_TU,
    "fr38": "Bonjour Sophie,\n\ndésolés pour ce souci. Nous ouvrons dès aujourd'hui une enquête "
            "auprès du transporteur pour la commande 48120. Si le colis n'est pas retrouvé, "
            "nous vous enverrons un remplacement ou vous rembourserons la commande, selon votre "
            "préférence." + _FR_SIGN,
    "fr39": "Bonjour,\n\nmerci pour votre message. Nous vérifions la réception de la veste dans "
            "notre entrepôt et vous confirmons par e-mail dès qu'elle est enregistrée. Le "
            "remboursement suit sous 5 jours ouvrés après réception du retour." + _FR_SIGN,
    "fr41": "Bonjour,\n\nbien sûr ! Nous vous envoyons une étiquette de retour prépayée par "
            "e-mail pour le fond de teint de la commande 27730. Dès réception du flacon, nous "
            "vous expédions la teinte 04." + _FR_SIGN,
    "fr54": "Bonjour Madame Vidal,\n\nnous avons bien reçu votre demande. Le compte créé avec "
            "l'adresse theo.vidal2011@mail.fr et les données qui y sont liées seront supprimés "
            "sous 30 jours ; nous vous le confirmerons par e-mail." + _FR_SIGN,
    "fr57": "Bonjour,\n\nvous avez entièrement raison d'être mécontent : trois semaines sans "
            "réponse, ce n'est pas acceptable, et nous vous présentons nos excuses. Nous vous "
            "envoyons gratuitement une lampe de remplacement ; l'ancienne pourra repartir avec "
            "une étiquette prépayée. Si vous préférez un remboursement, répondez simplement à "
            "ce message." + _FR_SIGN,
    "fr79": "Bonjour Madame Petit,\n\nmerci pour votre candidature en alternance. Nous l'avons "
            "transmise aux collègues en charge du recrutement, qui vous répondront "
            "directement." + _FR_SIGN,
    # --- Spanish ---
    "es01": "Hola, Lucía:\n\ngracias por avisarnos y disculpe las molestias. Estamos revisando "
            "los dos cargos de la factura 3310. En cuanto confirmemos el cargo duplicado, le "
            "devolveremos el importe a su tarjeta; el dinero llega en un plazo de 5 días "
            "hábiles. Le escribiremos cuando el reembolso esté hecho." + _ES_SIGN,
    "es04": "Hola:\n\ngracias por su mensaje. Hemos preguntado al transportista por el pedido 42 "
            "y le escribiremos en cuanto tengamos respuesta. Si el paquete no aparece, le "
            "enviaremos uno nuevo o le reembolsaremos el pedido." + _ES_SIGN,
    "es05": "Hola:\n\nsentimos que los auriculares del pedido 20518 no funcionen bien. Le "
            "enviamos por correo electrónico una etiqueta de devolución prepagada; solo tiene "
            "que pegarla en el paquete. Cuando recibamos los auriculares, le enviaremos unos "
            "nuevos o le devolveremos el dinero en 5 días hábiles, como prefiera." + _ES_SIGN,
    "es07": "Hola:\n\nsentimos que no pueda entrar en la aplicación. Hemos pasado el error de "
            "contraseña a nuestros técnicos de guardia y le avisaremos en cuanto conozcamos la "
            "causa. Para ayudarle, ¿nos indica si usa la aplicación en Android o en iPhone "
            "y qué versión tiene instalada?" + _ES_SIGN,
    "es12": "Hola:\n\nhemos recibido su solicitud de baja. Su suscripción terminará al final "
            "del periodo de facturación en curso y le enviaremos la confirmación por escrito "
            "por correo electrónico." + _ES_SIGN,
    "es13": "Hola:\n\nhemos recibido su solicitud. Eliminaremos sus datos personales en un "
            "plazo de 30 días y se lo confirmaremos por correo electrónico." + _ES_SIGN,
    "es15": "Hola:\n\ntiene toda la razón, dos semanas sin respuesta no es aceptable y le "
            "pedimos disculpas. Me encargo personalmente de su reembolso: en cuanto lo "
            "confirmemos, el dinero llegará a su medio de pago original en un plazo de 5 días "
            "hábiles, y le escribiré en cuanto esté hecho." + _ES_SIGN,
    "es17": "Hola:\n\n¡gracias por la sugerencia! Hemos trasladado al equipo de producto su "
            "interés en tener la aplicación en catalán. Todavía no podemos darle una fecha."
            + _ES_SIGN,
    "es22": "Hola:\n\ngracias por su interés en trabajar con nosotros. Hemos enviado su mensaje "
            "a los compañeros responsables de selección, que le contestarán directamente."
            + _ES_SIGN,
    "es26": "Hola:\n\nsentimos las molestias. Revise primero la carpeta de spam; si el correo "
            "tampoco está ahí, responda a este mensaje y restableceremos su contraseña "
            "manualmente. El enlace para restablecerla es válido durante 24 horas." + _ES_SIGN,
    "es30": "Hola:\n\ngracias por su paciencia. Hemos vuelto a preguntar al departamento de "
            "facturación por el reembolso del vuelo VL-3390. En cuanto se confirme, el dinero "
            "llegará a su medio de pago original en un plazo de 5 días hábiles. Le escribiremos "
            "en cuanto tengamos respuesta." + _ES_SIGN,
    "es37": "Hola:\n\nestamos consultando el estado del pedido 60318 y le escribiremos en "
            "cuanto tengamos noticias." + _ES_SIGN,
    "es39": "Hola:\n\nsí, como el pedido 90277 todavía no se ha enviado, podemos cancelarlo. "
            "Le confirmaremos la cancelación por correo electrónico." + _ES_SIGN,
    "es41": "¡Hola, Carlos!\n\nperdona el despiste. Te enviamos sin coste el mando a distancia "
            "de la tele del pedido 33412 a la dirección del pedido." + _ES_SIGN,
    "es44": "Hola:\n\nsentimos que no pueda acceder a la agenda de sus pacientes. Podemos "
            "restablecer el segundo factor de su cuenta en cuanto verifiquemos su identidad: "
            "llámenos (de lunes a viernes, de 8:00 a 18:00) con su número de cliente y el "
            "importe de su última factura a mano. Después podrá entrar con su contraseña y "
            "configurar la app de autenticación en el nuevo móvil." + _ES_SIGN,
    "es56": "¡Hola!\n\nte hemos enviado un enlace de confirmación a pablo.garcia.r@correo.es. "
            "En cuanto lo abras, el cambio de email quedará hecho." + _ES_SIGN,
    "es65": "¡Hola!\n\nnos alegra mucho que la app os funcione tan bien. Hemos pasado tu idea "
            "del modo oscuro al equipo de producto; todavía no podemos darte una fecha."
            + _ES_SIGN,
}

# Paraphrases: the same request in other words, order and length (few shared terms, no ids).
PARAPHRASES_EXTRA: list[tuple[str, str]] = [
    # --- English ---
    ("en29", "Power company pulled the monthly payment a second time today; it failed, my bank "
             "fined me and you added a penalty. I need both undone before my landlord is paid "
             "tomorrow."),
    ("en31", "How come my mobile charges jumped by more than seven quid when my tariff is the "
             "same?"),
    ("en33", "The receipt for my stay in Portugal should name my employer, not me. Can you "
             "redo it?"),
    ("en34", "We moved to a cheaper tier halfway through a month we had prepaid. Shouldn't "
             "something be credited back? Please explain how switching plans is charged."),
    ("en36", "The courier claims it can't find my house, and the outfit I'm getting married "
             "in is in that van. The ceremony is in a few days."),
    ("en39", "Changed my mind about the kitchen mixer, a shop nearby has it for less - stop "
             "the purchase before it leaves your warehouse."),
    ("en40", "My spouse's first name is spelt with a C on our plane tickets instead of a K. "
             "Can that be fixed and what does it cost?"),
    ("en41", "Furniture came without the fixings needed to assemble it. Please mail me the "
             "little hardware pack."),
    ("en43", "Card payments fail at every branch of our chain with a timeout from your "
             "server; customers leave without buying."),
    ("en44", "My second-factor codes were on a phone I've lost, there are no recovery codes, "
             "and I must show work to a client this afternoon."),
    ("en45", "Each night the connection at home cuts out for a while even after rebooting the "
             "box. Could someone test the wiring to my house?"),
    ("en49", "I registered a web address with another company; what settings connect it to "
             "the site I made with your tool?"),
    ("en51", "My surname changed when I wed; please put the new one on my profile. Is a "
             "certificate required?"),
    ("en53", "Before I quit my job, please make another team member the administrator of our "
             "shared space."),
    ("en57", "Yet again money was taken for something I ended at the start of the year. I've "
             "complained repeatedly; pay it all back or I escalate to the regulator."),
    ("en58", "I sacrificed a day's wages waiting for your technician who never showed, for "
             "the second time, and your phone queue was endless."),
    ("en60", "The seaside place we reserved for a special occasion had no room when we got "
             "there late and we were moved to a grim roadside lodge."),
    ("en67", "A member of staff in one of your Yorkshire shops was so kind to my father; how "
             "do I make sure his boss hears about it?"),
    ("en74", "Message says I have crypto from mining waiting and must pay a small fee fast "
             "to unlock it."),
    ("en83", "Has anybody handed in a brolly I forgot near the couches at your store last "
             "weekend?"),
    # --- German ---
    ("de29", "Statt dreihundertachtundvierzig wurde das Zehnfache eingezogen, unser Konto ist "
             "leer und morgen ist Zahltag für die Mitarbeiter."),
    ("de31", "Wieso soll ich für mein Smartphone diesmal dreimal so viel bezahlen wie sonst? "
             "Ich habe nichts Besonderes gemacht."),
    ("de33", "Bitte die Quittung für die Übernachtungen in Österreich nicht auf mich privat, "
             "sondern auf unser Unternehmen schreiben."),
    ("de34", "Mein monatlicher Betrag für Strom ist stark gestiegen, obwohl wir weniger "
             "verbrauchen. Woran liegt das, und darf ich ihn mit einer Zählerablesung "
             "reduzieren?"),
    ("de36", "Das Rad für meinen Jungen hängt noch im Lager fest, dabei feiert er am "
             "Wochenende - kommt es noch rechtzeitig?"),
    ("de39", "Ich hätte gern noch ein zweites Exemplar der Sitzgelegenheit für den Garten in "
             "dieselbe Lieferung gepackt."),
    ("de40", "Wir wollen eine Woche später nach Mallorca fliegen. Lässt sich das ändern und "
             "was kostet es?"),
    ("de42", "Schickt ihr Möbel auch zu uns über die Grenze nach Zürich, und welche Gebühren "
             "kommen dazu?"),
    ("de43", "In keinem unserer Läden lässt sich mehr kassieren, die Geräte erreichen euren "
             "Server nicht, und das am wichtigsten Verkaufstag."),
    ("de45", "Das Internet zu Hause fällt immer wieder aus, das Gerät leuchtet dann rot. "
             "Bitte Anschluss überprüfen."),
    ("de46", "Die Ausgabe für den Steuerberater bricht ab und meckert über ein Datum, das "
             "korrekt aussieht."),
    ("de51", "Ich habe geheiratet und trage nun einen anderen Nachnamen; bitte im Profil "
             "anpassen."),
    ("de52", "Wegen meines Wegzugs ins Ausland möchte ich den DSL-Anschluss früher beenden; "
             "was passiert mit dem Gerät?"),
    ("de54", "Ich möchte wissen, was Sie alles über mich gespeichert haben und wofür - "
             "gestützt auf die Datenschutzgrundverordnung."),
    ("de58", "Wieder saß ich einen halben Urlaubstag umsonst zu Hause, kein Monteur, kein "
             "Anruf. Ich will einen verbindlichen Termin und einen Ausgleich."),
    ("de60", "Die gemietete Unterkunft am Meer war verschimmelt und kalt, niemand war "
             "erreichbar, wir mussten woanders schlafen. Ich will alles zurück."),
    ("de63", "Als langjährige Kundin möchte ich einfach mal loswerden, wie zufrieden ich mit "
             "Ihrer Hilfe immer war."),
    ("de75", "Angebliche Zahlungsaufforderung mit Anhang, für den ich mein Mail-Kennwort "
             "eingeben soll, und eine neue Kontonummer."),
    ("de80", "Eine Journalistin aus Hamburg möchte für einen Bericht über Händler aus der "
             "Gegend kurz telefonieren."),
    ("de83", "Ist bei Ihnen in der Ausstellung in Sachsen ein Kleidungsstück von mir liegen "
             "geblieben?"),
    # --- French ---
    ("fr29", "Le paiement à notre fournisseur est parti en double depuis votre service, le "
             "compte est dans le rouge et la paie tombe demain."),
    ("fr31", "J'ai coché sans le vouloir un supplément pour voyager, alors que je ne bouge "
             "pas de chez moi, je voudrais récupérer l'argent."),
    ("fr33", "Mon décompte annuel d'énergie est trop lourd pour mon budget, puis-je le payer "
             "en plusieurs mensualités ?"),
    ("fr34", "La réduction de bienvenue n'a pas été déduite lors de mon achat, je voudrais "
             "qu'on me rende l'écart."),
    ("fr36", "Je m'envole pour longtemps dans quelques jours et ma nouvelle paire de "
             "lunettes n'est même pas partie de chez vous."),
    ("fr38", "Le suivi affirme que c'est arrivé, mais je n'ai rien trouvé ni chez moi ni "
             "autour."),
    ("fr40", "Peut-on repousser d'un jour notre trajet vers le sud pour la famille, et est-ce "
             "payant ?"),
    ("fr41", "La nuance de maquillage reçue est trop pâle, je voudrais la suivante, le "
             "produit est intact."),
    ("fr42", "Les livreurs montent-ils le meuble jusqu'en haut de l'immeuble si on n'a pas "
             "d'ascenseur ?"),
    ("fr43", "Notre site marchand ne répond plus depuis l'ouverture des promotions, aucun "
             "client ne peut acheter."),
    ("fr45", "La télé ne capte plus rien depuis le week-end alors que le web marche."),
    ("fr46", "Mes carnets ne se mettent plus à jour entre mes appareils, un message parle "
             "d'un jeton périmé."),
    ("fr50", "L'impression des bordereaux pour les colis sort sur une grande page au lieu "
             "du petit format de mon imprimante thermique."),
    ("fr51", "Je déménage et mon amie qui reste dans le logement veut reprendre le compteur "
             "à son nom."),
    ("fr54", "Mon enfant mineur s'est inscrit chez vous sans ma permission ; effacez ce "
             "profil."),
    ("fr58", "La liaison ferroviaire a été supprimée mais vous ne voulez pas me rendre mon "
             "argent à cause du tarif, c'est honteux."),
    ("fr60", "On m'a vendu un contrat soi-disant libre et maintenant on me facture la sortie, "
             "je me sens arnaqué."),
    ("fr66", "Vos envois sont pleins de plastique, allez-vous utiliser du carton ?"),
    ("fr75", "Un SMS ou mail me réclame quelques centimes de taxes pour débloquer un paquet."),
    ("fr82", "Représentant du personnel d'une grande société, je cherche des conditions "
             "spéciales pour nos salariés."),
    # --- Spanish ---
    ("es29", "El datáfono ha devuelto dinero de ventas sin que ningún cliente lo pidiera y "
             "nos hemos quedado en números rojos antes de pagar a proveedores."),
    ("es31", "Mi recibo del teléfono se ha triplicado sin haber hecho nada raro, ¿qué ha "
             "pasado?"),
    ("es32", "Se me caduca la tarjeta; ¿puedo pagar la mensualidad desde el móvil con la app "
             "del banco?"),
    ("es34", "Bajamos de plan a mitad de mes y no vemos ninguna devolución de lo que ya "
             "habíamos pagado; ¿cómo funciona eso?"),
    ("es36", "La ropa para el enlace de mi hermana tiene un problema en el reparto y la "
             "ceremonia es este fin de semana."),
    ("es39", "Me arrepiento de la compra del aparato de limpieza, ¿todavía pueden anularla "
             "antes de que salga?"),
    ("es40", "Quiero mover una semana mis noches de alojamiento en la costa gaditana."),
    ("es42", "¿Mandáis electrodomésticos grandes a las islas y hay que pagar algo extra?"),
    ("es43", "Viernes noche, local a tope y la herramienta de mesas da un fallo del servidor "
             "en todas partes."),
    ("es45", "Pago por mucha velocidad de internet y me llega una fracción, aun reiniciando "
             "el aparato."),
    ("es46", "Al cargar mi fichero de contactos dice que hay direcciones repetidas y no las "
             "hay."),
    ("es50", "El televisor nuevo no ve la red inalámbrica de casa, pero el portátil y el "
             "móvil sí."),
    ("es51", "Tras la muerte de mi padre quiero que el suministro eléctrico pase a estar a "
             "mi nombre."),
    ("es53", "Mi documento de identidad tiene un número mal en el perfil y no puedo "
             "editarlo."),
    ("es57", "Sigo pagando cada mes algo que cancelé hace tiempo pese a haberme quejado "
             "varias veces; devuélvanmelo o denuncio."),
    ("es58", "El mueble del salón vino roto, nadie vino a arreglarlo y al teléfono no me "
             "atienden; quiero el dinero."),
    ("es60", "El piso de vacaciones estaba lejos del mar, sucio y sin aire, y tuvimos que "
             "pagar un hotel."),
    ("es65", "A mi equipo le gusta mucho la aplicación, pero de noche brilla demasiado: "
             "¿habrá tema oscuro?"),
    ("es74", "Un robot de monedas digitales promete multiplicar mi dinero si deposito hoy."),
    ("es83", "¿Se puede entrar en silla de ruedas en su establecimiento del País Vasco?"),
]

# Held out from learning (30 per language, old and new mails, stratified by category in
# proportion to the language's 83 mails: billing 4, order 4, technical 5, account 4,
# complaint 3, feedback 3, notification 3, spam 2, other 2; includes the very short
# mails, the prompt-injection mails and about half of the mails with a reference reply).
HELD_OUT: list[str] = [
    "en01", "en04", "en10", "en11", "en12", "en13", "en22", "en25", "en26", "en28", "en29",
    "en30", "en35", "en37", "en41", "en44", "en45", "en49", "en55", "en57", "en59", "en62",
    "en65", "en67", "en68", "en69", "en72", "en74", "en78", "en83",
    "de07", "de12", "de17", "de23", "de28", "de30", "de32", "de34", "de36", "de37", "de39",
    "de42", "de43", "de44", "de46", "de50", "de51", "de53", "de54", "de58", "de59", "de60",
    "de62", "de64", "de68", "de70", "de73", "de74", "de75", "de81",
    "fr05", "fr07", "fr08", "fr12", "fr13", "fr15", "fr17", "fr21", "fr25", "fr26", "fr29",
    "fr30", "fr31", "fr32", "fr36", "fr37", "fr45", "fr50", "fr51", "fr52", "fr57", "fr59",
    "fr62", "fr64", "fr68", "fr69", "fr73", "fr74", "fr79", "fr83",
    "es01", "es06", "es07", "es10", "es12", "es13", "es14", "es15", "es16", "es17", "es18",
    "es22", "es23", "es30", "es33", "es35", "es36", "es37", "es39", "es44", "es45", "es50",
    "es53", "es54", "es60", "es62", "es68", "es71", "es74", "es76",
]
