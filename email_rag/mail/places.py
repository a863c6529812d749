"""The countries a mail speaks of, named directly or through one of their cities.

A shop's knowledge is written by country and zone ("Versandzone 1: Österreich, Belgien
...", "Innerhalb Deutschlands ..."); customers name a city ("shipping to Vienna") or the
country in their own language ("Autriche"). ``countries(text)`` finds the countries a text
names in German, English, French or Spanish, by the country's name or by its capital or
one of its largest cities; ``spelled(code)`` gives every name of a country, so that a search
for "Vienna" also finds a passage that says "Österreich".

Pure data and functions: no I/O. Names that are also common words in one of the four
languages ("Nice", "Split", "Rom", "Cologne", "Posen", "Bergen", "Cork") are left out: a
false country costs more than a missed city.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# ISO code: (names of the country in de, en, fr, es ...), (its capital and largest cities)
PLACES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "DE": (("Deutschland", "Germany", "Allemagne", "Alemania"),
           ("Berlin", "Berlín", "Hamburg", "Hambourg", "Hamburgo", "München", "Munich",
            "Múnich", "Köln", "Frankfurt", "Francfort", "Stuttgart",
            "Düsseldorf", "Leipzig", "Dresden", "Dresde", "Hannover", "Nürnberg",
            "Nuremberg", "Bremen")),
    "AT": (("Österreich", "Austria", "Autriche"),
           ("Wien", "Vienna", "Vienne", "Viena", "Graz", "Linz", "Salzburg", "Salzbourg",
            "Salzburgo", "Innsbruck", "Klagenfurt")),
    "CH": (("Schweiz", "Switzerland", "Suisse", "Suiza"),
           ("Zürich", "Zurich", "Zúrich", "Genf", "Geneva", "Genève", "Ginebra", "Basel",
            "Bâle", "Basilea", "Bern", "Berne", "Lausanne", "Luzern", "Lucerne")),
    "NL": (("Niederlande", "Netherlands", "Pays-Bas", "Países Bajos", "Holland", "Holanda",
            "Hollande"),
           ("Amsterdam", "Ámsterdam", "Rotterdam", "Róterdam", "Den Haag", "The Hague",
            "La Haye", "La Haya", "Utrecht", "Eindhoven")),
    "BE": (("Belgien", "Belgium", "Belgique", "Bélgica"),
           ("Brüssel", "Brussels", "Bruxelles", "Bruselas", "Antwerpen", "Antwerp", "Anvers",
            "Amberes", "Gent", "Ghent", "Gand", "Lüttich", "Liège", "Lieja")),
    "LU": (("Luxemburg", "Luxembourg", "Luxemburgo"), ()),
    "FR": (("Frankreich", "France", "Francia"),
           ("Paris", "París", "Lyon", "Lyons", "Marseille", "Marseilles", "Marsella",
            "Toulouse", "Straßburg", "Strasbourg", "Estrasburgo", "Bordeaux", "Lille")),
    "DK": (("Dänemark", "Denmark", "Danemark", "Dinamarca"),
           ("Kopenhagen", "Copenhagen", "Copenhague", "Aarhus", "Odense")),
    "ES": (("Spanien", "Spain", "Espagne", "España"),
           ("Madrid", "Barcelona", "Barcelone", "Valencia", "Valence", "Sevilla", "Seville",
            "Séville", "Bilbao", "Málaga", "Zaragoza", "Saragossa")),
    "IT": (("Italien", "Italy", "Italie", "Italia"),
           ("Rome", "Roma", "Mailand", "Milan", "Milano", "Neapel", "Naples", "Nápoles",
            "Turin", "Torino", "Turín", "Florenz", "Florence", "Florencia", "Venedig",
            "Venice", "Venise", "Venecia", "Bologna", "Bologne", "Bolonia")),
    "PT": (("Portugal",), ("Lissabon", "Lisbon", "Lisbonne", "Lisboa", "Porto", "Oporto")),
    "PL": (("Polen", "Poland", "Pologne", "Polonia"),
           ("Warschau", "Warsaw", "Varsovie", "Varsovia", "Krakau", "Kraków", "Krakow",
            "Cracovie", "Cracovia", "Breslau", "Wrocław", "Wroclaw", "Danzig", "Gdańsk",
            "Gdansk", "Poznań", "Poznan")),
    "CZ": (("Tschechien", "Czechia", "Czech Republic", "Tchéquie", "République tchèque",
            "Chequia", "República Checa"),
           ("Prag", "Prague", "Praga", "Brünn", "Brno")),
    "SE": (("Schweden", "Sweden", "Suède", "Suecia"),
           ("Stockholm", "Estocolmo", "Göteborg", "Gothenburg", "Malmö")),
    "IE": (("Irland", "Ireland", "Irlande", "Irlanda"), ("Dublin", "Dublín")),
    "GB": (("Großbritannien", "Vereinigtes Königreich", "United Kingdom", "Great Britain",
            "England", "Scotland", "Schottland", "Royaume-Uni", "Angleterre", "Écosse",
            "Reino Unido", "Inglaterra", "Escocia"),
           ("London", "Londres", "Manchester", "Birmingham", "Edinburgh", "Édimbourg",
            "Edimburgo", "Glasgow", "Liverpool")),
    "NO": (("Norwegen", "Norway", "Norvège", "Noruega"), ("Oslo",)),
    "FI": (("Finnland", "Finland", "Finlande", "Finlandia"), ("Helsinki",)),
    "HU": (("Ungarn", "Hungary", "Hongrie", "Hungría"),
           ("Budapest",)),
    "SK": (("Slowakei", "Slovakia", "Slovaquie", "Eslovaquia"), ("Bratislava",)),
    "SI": (("Slowenien", "Slovenia", "Slovénie", "Eslovenia"), ("Ljubljana", "Laibach")),
    "HR": (("Kroatien", "Croatia", "Croatie", "Croacia"), ("Zagreb",)),
    "GR": (("Griechenland", "Greece", "Grèce", "Grecia"),
           ("Athen", "Athens", "Athènes", "Atenas", "Thessaloniki")),
    "US": (("USA", "Vereinigte Staaten", "United States", "États-Unis", "Estados Unidos"),
           ("New York", "Nueva York", "Los Angeles", "Chicago", "San Francisco")),
    "CA": (("Kanada", "Canada", "Canadá"), ("Toronto", "Montreal", "Montréal", "Vancouver")),
}


def _fold(text: str) -> str:
    """Lower case without accents: "Zürich", "Zurich" and "ZURICH" are one word."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold())
                   if not unicodedata.combining(c))


@cache
def _pattern(cities: bool = True) -> tuple[re.Pattern[str], dict[str, str]]:
    owner = {_fold(name): code for code, (names, towns) in PLACES.items()
             for name in (*names, *(towns if cities else ()))}
    words = sorted(owner, key=len, reverse=True)
    return re.compile(r"(?<!\w)(" + "|".join(map(re.escape, words)) + r")s?(?!\w)"), owner


def countries(text: str, cities: bool = True) -> list[str]:
    """The ISO codes of the countries ``text`` names (by name or, with ``cities``, by a city;
    a German genitive "Deutschlands" too), first named first."""
    pattern, owner = _pattern(cities)
    return list(dict.fromkeys(owner[m.group(1)] for m in pattern.finditer(_fold(text or ""))))


def spelled(code: str) -> str:
    """Every name of the country ``code``: "Österreich Austria Autriche"."""
    return " ".join(PLACES[code][0])
