"""A labelled draft set (bench/labelled/<set>/, format: bench/labelled/README.md) as typed
records, checked before anything runs.

``load_set(path)`` reads ``set.toml``, ``knowledge/``, ``saved_replies.json``,
``history.jsonl`` and ``mails.jsonl`` and raises ``SetError`` listing every problem it
found (file and line, never the mail text): a wrong count per group or language, an id
twice, an unknown group or language, a ``source`` that does not exist, and - the check that
catches labelling mistakes - a fact of a past_reply or article mail that none of its
sources contains (compared as the judge compares: ``normalise``).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a file missing or not UTF-8 / JSON / TOML | after fixing it | yes: SetError names the file (and line) | nothing was run |
| a record breaks the format (field, group, language, counts) | after fixing it | yes: every problem listed | nothing was run |
| an article format the venv cannot read (.docx/.pdf without its library) | after installing it | yes: named in SetError | nothing was run |
"""

from __future__ import annotations

import json
import re
import tomllib
import unicodedata
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

GROUPS = ("past_reply", "article", "no_source", "no_reply")
LANGUAGES = ("de", "en", "fr", "es")
ARTICLE_SUFFIXES = (".md", ".txt", ".html", ".htm", ".docx", ".pdf")
SAVED_PREFIX = "saved_replies.json#"
# the format's floors (README.md): a smaller set measures too little to compare runs
MINIMUM = {"mails": 60, "articles": 15, "history": 50, "saved_replies": 5}
GROUP_MINIMUM = {"past_reply": 15, "article": 15, "no_source": 10, "no_reply": 6}
LANGUAGE_MINIMUM = 10  # mails per language
FACTS_PER_ANSWERABLE = (2, 4)


class SetError(ValueError):
    """The labelled set breaks its format; the message lists every problem."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"labelled set {path}: {len(problems)} problem(s):\n  "
                         + "\n  ".join(problems))


@dataclass(frozen=True)
class Fact:
    """One fact a reply must (or must not) hold: any alternative counts."""

    alternatives: tuple[str, ...]

    def found_in(self, text: str) -> bool:
        norm = normalise(text)
        return any(normalise(a) in norm for a in self.alternatives if a.strip())

    def __str__(self) -> str:
        return " | ".join(self.alternatives)


@dataclass(frozen=True)
class Article:
    path: str  # relative to the set folder: "knowledge/returns.md"
    text: str  # plain text (HTML tags removed)


@dataclass(frozen=True)
class SavedReply:
    title: str
    language: str
    body: str

    @property
    def source(self) -> str:
        return SAVED_PREFIX + self.title


@dataclass(frozen=True)
class HistoryCase:
    id: str
    date: str  # ISO 8601 with offset
    sender: str  # "Name <addr>"
    subject: str
    body: str
    language: str
    reply_date: str
    reply_body: str


@dataclass(frozen=True)
class LabelledMail:
    id: str
    sender: str
    subject: str
    body: str
    language: str
    group: str
    source: tuple[str, ...]
    facts: tuple[Fact, ...]
    wrong: tuple[Fact, ...]
    note: str


@dataclass(frozen=True)
class LabelledSet:
    path: Path
    name: str
    team: str
    mailbox: str
    signature: str
    languages: tuple[str, ...]
    service_hours: int
    articles: tuple[Article, ...]
    saved_replies: tuple[SavedReply, ...]
    history: tuple[HistoryCase, ...]
    mails: tuple[LabelledMail, ...]

    def source_text(self, source: str) -> str | None:
        """The text a ``source`` names: a history case's reply, an article, a saved reply."""
        for h in self.history:
            if h.id == source:
                return h.reply_body
        for a in self.articles:
            if a.path == source:
                return a.text
        for s in self.saved_replies:
            if s.source == source:
                return s.body
        return None

    def only(self, ids: list[str] | None) -> list[LabelledMail]:
        if not ids:
            return list(self.mails)
        known = {m.id: m for m in self.mails}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise SetError(self.path, [f"--only names unknown mail id(s): {', '.join(unknown)}"])
        return [known[i] for i in ids]


_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2212"), "-")


def normalise(text: str) -> str:
    """The judge's comparison form: NFKC, lower case, dashes as '-', whitespace collapsed,
    a decimal comma read as a point (4,90 == 4.90)."""
    text = unicodedata.normalize("NFKC", text or "").translate(_DASHES).lower()
    text = re.sub(r"(?<=\d),(?=\d)", ".", text)
    return " ".join(text.split())


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def article_text(path: Path) -> str:
    """An article's plain text (.md/.txt as written, .html without tags, .docx/.pdf through
    python-docx / pypdf when installed)."""
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        p = _Text()
        p.feed(path.read_text(encoding="utf-8"))
        return " ".join(p.parts)
    if suffix == ".docx":
        import docx  # python-docx

        return "\n".join(par.text for par in docx.Document(str(path)).paragraphs)
    if suffix == ".pdf":
        from pypdf import PdfReader

        return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    return path.read_text(encoding="utf-8")


def _facts(value: Any, where: str, problems: list[str]) -> tuple[Fact, ...]:
    if not isinstance(value, list) or not all(
            isinstance(f, list) and f and all(isinstance(a, str) and a.strip() for a in f)
            for f in value):
        problems.append(f"{where}: must be a list of non-empty lists of strings")
        return ()
    return tuple(Fact(tuple(f)) for f in value)


def _jsonl(path: Path, problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{path.name}: cannot be read ({type(e).__name__})")
        return []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            problems.append(f"{path.name}:{n}: not JSON ({e.msg})")
            continue
        if not isinstance(item, dict):
            problems.append(f"{path.name}:{n}: not a JSON object")
            continue
        out.append((n, item))
    return out


def _need(item: dict[str, Any], keys: tuple[str, ...], where: str,
          problems: list[str]) -> bool:
    missing = [k for k in keys if not isinstance(item.get(k), str) or not item[k].strip()]
    if missing:
        problems.append(f"{where}: missing or empty {', '.join(missing)}")
    return not missing


def _read_meta(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        meta = tomllib.loads((path / "set.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        problems.append(f"set.toml: cannot be read ({type(e).__name__}: {e})")
        return {}
    _need(meta, ("name", "team", "mailbox", "signature"), "set.toml", problems)
    if not isinstance(meta.get("service_hours"), int):
        problems.append("set.toml: service_hours must be an integer")
    return meta


def _read_articles(path: Path, problems: list[str]) -> list[Article]:
    folder = path / "knowledge"
    if not folder.is_dir():
        problems.append("knowledge/: missing")
        return []
    articles = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if f.suffix.lower() not in ARTICLE_SUFFIXES:
            problems.append(f"{rel}: not an article format ({', '.join(ARTICLE_SUFFIXES)})")
            continue
        try:
            articles.append(Article(rel, article_text(f)))
        except ImportError as e:
            problems.append(f"{rel}: cannot be read here ({e.name} is not installed)")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            problems.append(f"{rel}: cannot be read ({type(e).__name__})")
    return articles


def _read_saved(path: Path, problems: list[str]) -> list[SavedReply]:
    try:
        items = json.loads((path / "saved_replies.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        problems.append(f"saved_replies.json: cannot be read ({type(e).__name__})")
        return []
    out = []
    for i, item in enumerate(items if isinstance(items, list) else [], 1):
        where = f"saved_replies.json item {i}"
        if isinstance(item, dict) and _need(item, ("title", "language", "body"), where, problems):
            out.append(SavedReply(item["title"], item["language"], item["body"]))
    if not isinstance(items, list):
        problems.append("saved_replies.json: must be a JSON list")
    return out


def _read_history(path: Path, problems: list[str]) -> list[HistoryCase]:
    out = []
    for n, item in _jsonl(path / "history.jsonl", problems):
        where = f"history.jsonl:{n}"
        reply = item.get("reply")
        if not isinstance(reply, dict) or not _need(reply, ("date", "body"), where + " reply",
                                                    problems):
            if not isinstance(reply, dict):
                problems.append(f"{where}: reply must be an object with date and body")
            continue
        if not _need(item, ("id", "date", "from", "subject", "body", "language"), where,
                     problems):
            continue
        if item["language"] not in LANGUAGES:
            problems.append(f"{where}: language {item['language']!r} not one of {LANGUAGES}")
        out.append(HistoryCase(item["id"], item["date"], item["from"], item["subject"],
                               item["body"], item["language"], reply["date"], reply["body"]))
    return out


def _read_mails(path: Path, problems: list[str]) -> list[LabelledMail]:
    out = []
    for n, item in _jsonl(path / "mails.jsonl", problems):
        where = f"mails.jsonl:{n}"
        if not _need(item, ("id", "from", "subject", "body", "language", "group"), where,
                     problems):
            continue
        where = f"mails.jsonl:{n} ({item['id']})"
        if item["group"] not in GROUPS:
            problems.append(f"{where}: group {item['group']!r} not one of {GROUPS}")
        if item["language"] not in LANGUAGES:
            problems.append(f"{where}: language {item['language']!r} not one of {LANGUAGES}")
        source = item.get("source", [])
        if not isinstance(source, list) or not all(isinstance(s, str) for s in source):
            problems.append(f"{where}: source must be a list of strings")
            source = []
        out.append(LabelledMail(
            item["id"], item["from"], item["subject"], item["body"], item["language"],
            item["group"], tuple(source), _facts(item.get("facts", []), where + " facts", problems),
            _facts(item.get("wrong", []), where + " wrong", problems),
            str(item.get("note", ""))))
    return out


def shape_problems(s: LabelledSet) -> list[str]:
    """Where ``s`` is smaller than the project's bench set must be (the format's floors: a
    smaller set measures too little to compare runs). A held-out set written by someone
    else may be smaller; it is measured as it is."""
    problems = []
    sizes = {"mails": len(s.mails), "articles": len(s.articles), "history": len(s.history),
             "saved_replies": len(s.saved_replies)}
    for key, floor in MINIMUM.items():
        if sizes[key] < floor:
            problems.append(f"{key}: {sizes[key]}, at least {floor} needed")
    groups = Counter(m.group for m in s.mails)
    for g, floor in GROUP_MINIMUM.items():
        if groups[g] < floor:
            problems.append(f"group {g}: {groups[g]} mails, at least {floor} needed")
    languages = Counter(m.language for m in s.mails)
    for lang in LANGUAGES:
        if languages[lang] < LANGUAGE_MINIMUM:
            problems.append(f"language {lang}: {languages[lang]} mails, at least "
                            f"{LANGUAGE_MINIMUM} needed")
    return problems


def _check(s: LabelledSet, problems: list[str]) -> None:
    for what, ids in (("history", [h.id for h in s.history]), ("mails", [m.id for m in s.mails]),
                      ("saved reply titles", [r.title for r in s.saved_replies])):
        twice = [i for i, c in Counter(ids).items() if c > 1]
        if twice:
            problems.append(f"{what}: id(s) used twice: {', '.join(twice)}")
    low, high = FACTS_PER_ANSWERABLE
    for m in s.mails:
        where = f"mail {m.id}"
        if m.group in ("past_reply", "article"):
            if not m.source:
                problems.append(f"{where}: a {m.group} mail needs a source")
            if not low <= len(m.facts) <= high:
                problems.append(f"{where}: {len(m.facts)} facts, {low}-{high} expected")
        elif m.facts or m.source:
            problems.append(f"{where}: a {m.group} mail has no facts and no source")
        if m.group == "past_reply" and not m.wrong:
            problems.append(f"{where}: a past_reply mail needs at least one wrong fact")
        if m.group == "past_reply" and any(x not in {h.id for h in s.history} for x in m.source):
            problems.append(f"{where}: a past_reply mail's sources must be history cases")
        texts = []
        for src in m.source:
            text = s.source_text(src)
            if text is None:
                problems.append(f"{where}: source {src!r} does not exist")
            else:
                texts.append(text)
        if texts and m.group in ("past_reply", "article"):
            joined = "\n".join(texts)
            for f in m.facts:
                if not f.found_in(joined):
                    problems.append(f"{where}: fact [{f}] is in none of its sources")


def load_set(path: str | Path) -> LabelledSet:
    """The set at ``path``, validated; SetError lists every problem."""
    path = Path(path)
    if not (path / "set.toml").is_file():
        raise SetError(path, ["not a labelled set folder (no set.toml)"])
    problems: list[str] = []
    meta = _read_meta(path, problems)
    s = LabelledSet(path, str(meta.get("name", path.name)), str(meta.get("team", "")),
                    str(meta.get("mailbox", "")), str(meta.get("signature", "")),
                    tuple(meta.get("languages", LANGUAGES)),
                    int(meta.get("service_hours", 0) or 0),
                    tuple(_read_articles(path, problems)), tuple(_read_saved(path, problems)),
                    tuple(_read_history(path, problems)), tuple(_read_mails(path, problems)))
    _check(s, problems)
    if problems:
        raise SetError(path, problems)
    return s


def set_folders(root: Path) -> list[Path]:
    """Every set folder under ``root`` (a folder holding set.toml)."""
    return sorted(p.parent for p in Path(root).glob("*/set.toml"))
