"""The countries a mail names, by name or city (mail/places.py), mark the knowledge hits
and past cases that name them too or only others (pipeline/retrieve.py): a customer asking
about "Vienna" is answered from the passage that says "Österreich"."""

import pytest

from email_rag.mail.places import PLACES, countries, spelled
from email_rag.pipeline.retrieve import with_places


@pytest.mark.parametrize("text,expected", [
    ("Hi, how much is shipping to Vienna and how long does it take?", ["AT"]),
    ("Livraison à Genève possible ?", ["CH"]),
    ("Envío a Viena o a Múnich", ["AT", "DE"]),
    ("Was kostet der Versand nach ZÜRICH?", ["CH"]),
    ("Gilt das auch außerhalb Deutschlands?", ["DE"]),
    ("Ich wohne in Wien, Österreich.", ["AT"]),
])
def test_a_country_is_found_by_its_name_or_city_in_four_languages(text, expected):
    assert countries(text) == expected


@pytest.mark.parametrize("text", [
    "That is a nice machine, can I split the payment?",
    "Die Mühle ist zu laut, kann ich sie zurückgeben?",
    "A cologne sample came with the parcel",
    "Wir bergen die Ware und posen nicht",
    "Die Wiener Melange schmeckt",  # a word that begins with a city's name is not the city
])
def test_common_words_and_plain_mails_name_no_country(text):
    assert countries(text) == []


def test_every_country_has_its_name_in_german_and_english_and_no_name_is_two_countries():
    owners: dict[str, str] = {}
    for code, (names, cities) in PLACES.items():
        assert len(names) >= 1 and spelled(code).split()[0] == names[0].split()[0]
        for name in (*names, *cities):
            assert countries(name) == [code], name
            assert owners.setdefault(name.casefold(), code) == code


def test_hits_and_cases_are_marked_by_the_countries_they_name_against_the_mail_s():
    mail = {"AT"}  # "Shipping to Vienna"
    hits = [{"heading": "Versandzone 1", "text": "Österreich, Belgien: 9,90 EUR"},
            {"heading": "Schweiz und Großbritannien", "text": "Versand 19,90 EUR"},
            {"heading": "Sperrgut", "text": "Spedition, 29,00 EUR"}]
    assert [h.get("places") for h in with_places(hits, mail, ("heading", "text"))] == [
        "agree", "conflict", None]
    cases = [{"subject": "Envío a España", "snippet": "", "reply": {"text": "14,90 EUR"}},
             {"subject": "Lieferung", "snippet": "nach Österreich?", "reply": None}]
    assert [c.get("places") for c in with_places(cases, mail, ("subject", "snippet", "reply"))
            ] == ["conflict", "agree"]
    assert with_places(hits, set(), ("heading", "text")) == hits
    # a city in a passage is mostly an address: it neither agrees nor conflicts
    address = [{"heading": "Rücksendung", "text": "Kaffeewerk GmbH, Hafenstraße 12, Hamburg"}]
    assert with_places(address, set(countries("Schulungen in Leipzig?")), ("heading", "text")
                       ) == address


def test_a_city_counts_only_where_asked_for():
    assert countries("Hafenstraße 12, 20457 Hamburg") == ["DE"]
    assert countries("Hafenstraße 12, 20457 Hamburg", cities=False) == []
    assert countries("Versandzone 1: Österreich, Belgien", cities=False) == ["AT", "BE"]
