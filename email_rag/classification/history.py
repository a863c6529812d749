"""The team's history per mailbox: its labelled examples (``db.examples``) fitted into a
``HistoryModel`` (``history_model``), kept per mailbox in this process (``FitCache``) and
refitted when the examples change, and what it says about one mail (``TeamView``).

The history is an aid: when the embedder or the examples are unavailable the view is None
and the LLM decides alone (a warning is logged). MariaDB lost or busy while the examples'
state is read with the mail is raised (the run's read fails: the worker waits).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| the mailbox has no examples (or none with a vector of this embedder) | - | yes | no view: the LLM decides |
| embedder or examples unavailable | no (the LLM decides) | yes | no view (warning logged) |
| an example without vector (embedder down at the staff action, or another embedder) | embedded at the next mail | yes | used once embedded |
| the examples changed since the last fit (a new example, new labels, a vector) | - | yes | refitted before this mail |
| the server refuses the read-ahead of the examples' state | - | yes | read again by the view; on failure no view |
| MariaDB lost or busy during the read-ahead | the worker waits | yes | the run's read fails |
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..core.errors import DatabaseBusyError, DatabaseUnavailableError
from ..core.index_ports import Embedder
from ..core.jsonvalue import JsonObject
from ..core.records import Mail
from ..core.settings import Settings
from ..db import examples as stored_examples
from .history_model import (
    Anchor,
    Example,
    FieldVote,
    HistoryDecision,
    HistoryModel,
    Shot,
    Thresholds,
    anchor_texts,
    nearest,
)
from .values import Category, Classification, FieldSource, Priority

if TYPE_CHECKING:
    from ..db.connection import Cursor, Database

log = logging.getLogger(__name__)


class HistoryDeps(Protocol):
    """What the history reads: the settings (thresholds), MariaDB (the examples) and the
    embedder (built on first use; its failure leaves the LLM to decide alone)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def embedder(self) -> Embedder: ...


@dataclass(frozen=True)
class TeamView:
    """What the mailbox's labelled examples say about one mail."""

    decision: HistoryDecision
    shots: list[Shot]
    nearest_similarity: float  # of the most similar example

    def source(self, name: str) -> FieldSource:
        vote = self.decision.votes[name]
        if vote.source != "history":  # a rule decided it
            return FieldSource(source=vote.source, confidence=None)
        found = FieldSource(source="history", confidence=round(vote.probability, 3),
                            examples=self.decision.examples_known)
        if vote.via:
            found["via"] = vote.via
        return found

    def ruled(self, name: str, value: str | bool) -> TeamView:
        """This view with ``name`` decided by a rule (``HistoryDecision.ruled``)."""
        return TeamView(self.decision.ruled(name, value), self.shots, self.nearest_similarity)

    def merge(self, value: Classification, other: str
              ) -> tuple[Classification, dict[str, FieldSource]]:
        """The LLM's classification with the fields the history decided replaced."""
        updates: dict[str, Category | Priority | bool] = {}
        sources: dict[str, FieldSource] = {}
        for name, vote in self.decision.votes.items():
            if vote.decided:
                updates[name] = field_value(name, vote.value)
                sources[name] = self.source(name)
            else:
                sources[name] = FieldSource(source=other, confidence=None)
        return value.model_copy(update=updates), sources

    def summary(self) -> JsonObject:
        return {"examples": self.decision.examples_known,
                "nearest_similarity": self.nearest_similarity,
                **{n: {"value": v.value, "probability": round(v.probability, 3),
                       "decided": v.decided, "source": v.source,
                       **({"via": v.via} if v.via else {})}
                   for n, v in self.decision.votes.items()}}


def field_value(name: str, value: str | bool | None) -> Category | Priority | bool:
    if name == "category":
        return Category(value)
    if name == "priority":
        return Priority(value)
    return bool(value)


@dataclass(frozen=True)
class Fitted:
    """A mailbox's history model, fitted on its examples as they were at ``key``."""

    key: tuple[Any, ...]
    model: HistoryModel
    examples: list[Example]


class FitCache:
    """The fitted history model per mailbox, in this process; one fit at a time."""

    def __init__(self) -> None:
        self._fits: dict[int, Fitted] = {}
        self._lock = threading.Lock()

    def get(self, mailbox_id: int, key: tuple[Any, ...],
            fit: Callable[[], Fitted | None]) -> Fitted | None:
        """The model fitted at ``key``; ``fit()`` when the cached one is older (None: no
        examples to fit, nothing cached)."""
        with self._lock:
            found = self._fits.get(mailbox_id)
            if found is not None and found.key == key:
                return found
            found = fit()
            if found is not None:
                self._fits[mailbox_id] = found
            return found


PROCESS_FITS = FitCache()  # the worker process's models: a staff correction counts for the
# next mail without any retraining command
_anchors: dict[str, tuple[Anchor, ...]] = {}  # per embedder name, in this worker process


def meaning_anchors(embedder: Any) -> tuple[Anchor, ...]:
    """The phrases of the categories' and priorities' meanings (``anchor_texts``) embedded
    by ``embedder``: one embedder call per process and embedder (some 40 short phrases).
    The embedder's errors propagate (``TeamHistory.view``: the LLM decides alone)."""
    found = _anchors.get(embedder.name)
    if found is None:
        texts = anchor_texts()
        vectors = embedder.embed([t for _, _, t, _ in texts])
        found = tuple(Anchor(f, v, np.frombuffer(stored_examples.pack(vec), dtype="<f4"), w)
                      for (f, v, _, w), vec in zip(texts, vectors, strict=True))
        _anchors[embedder.name] = found
    return found


def history_limits(s: Settings) -> Thresholds:
    """The per-field probabilities and example count from which the history decides."""
    return Thresholds(category=s.history_category_threshold,
                      priority=s.history_priority_threshold,
                      needs_reply=s.history_needs_reply_threshold,
                      min_examples=s.history_min_examples)


def view_of(model: HistoryModel, examples: list[Example], vector: np.ndarray, s: Settings,
            texts: Callable[[list[int]], dict[int, tuple[str, str]]]) -> TeamView:
    """What the examples say about a mail's (L2-normalised) vector: the model's decision,
    none when the mail is unlike every example, and the nearest examples as few-shot
    material (``texts``: example email ids -> (subject, body)). ``bench quality``'s
    learning curve asks exactly this."""
    close = nearest(vector, examples, max(s.history_shots, 1))
    decision = model.decide(vector)
    if close[0][1] < s.history_min_similarity:  # unlike every example: a linear model is
        decision = HistoryDecision(  # confident far from its data, so it decides nothing
            {n: FieldVote(v.value, v.probability, False) for n, v in decision.votes.items()},
            decision.examples_known)
    found = texts([e.email_id for e, _ in close[:s.history_shots]])
    shots = [Shot(*found.get(e.email_id, ("", "")), e.category, e.priority, e.needs_reply,
                  round(sim, 3), e.confirmed) for e, sim in close[:s.history_shots]]
    return TeamView(decision, shots, round(close[0][1], 3))


class TeamHistory:
    """The team's history as the classifier asks it, on ``deps`` (settings, MariaDB, the
    embedder), with the process's fitted models (``fits``)."""

    def __init__(self, deps: HistoryDeps, fits: FitCache = PROCESS_FITS) -> None:
        self.deps = deps
        self.fits = fits

    def state(self, cur: Cursor, mail: Mail) -> stored_examples.ExamplesVersion | None:
        """The mailbox's examples state, read with the mail at the start of the run
        (``StepSpec.read_ahead``: no transaction of its own); None without a mailbox, when
        the embedder cannot be built or the server refuses the read (``view`` then asks
        again and goes on without the history, as when it reads it itself). MariaDB lost or
        busy is raised (the run's read fails: the worker waits)."""
        if mail.mailbox_id is None:
            return None
        try:
            return stored_examples.state(cur, mail.mailbox_id,
                                         stored_examples.vector_name(self.deps.embedder))
        except (DatabaseUnavailableError, DatabaseBusyError):
            raise
        except Exception:  # noqa: BLE001 - the history is an aid (view logs it)
            return None

    def fitted(self, mailbox_id: int | None,
               known: stored_examples.ExamplesVersion | None = None) -> Fitted | None:
        """The mailbox's history model, refitted when its examples changed (a new example,
        new labels, a vector filled in): the next mail after a staff correction uses it,
        with no retraining command. None without examples. ``known``: the examples' state
        read ahead with the mail (None: read here)."""
        if mailbox_id is None:
            return None
        db, embedder = self.deps.db, self.deps.embedder
        name = stored_examples.vector_name(embedder)
        v = known if known is not None else stored_examples.state(db, mailbox_id, name)
        if v.unembedded:
            stored_examples.embed_missing(db, embedder, mailbox_id)
            v = stored_examples.version(db, mailbox_id)
        if not v.count:
            return None

        def fit() -> Fitted | None:
            examples = [Example(r.email_id, r.array(), r.category, r.priority,
                                bool(r.needs_reply), r.source)
                        for r in stored_examples.of_mailbox(db, mailbox_id)
                        if r.vector is not None and r.embedder == name]
            if not examples:
                return None
            model = HistoryModel(examples, history_limits(self.deps.settings), version=key,
                                 anchors=meaning_anchors(embedder))
            return Fitted(key, model, examples)

        key = (name, v.count, v.max_id, v.changed)
        return self.fits.get(mailbox_id, key, fit)

    def view(self, mail: Mail, known: stored_examples.ExamplesVersion | None = None
             ) -> TeamView | None:
        """The history's decision and the nearest examples for ``mail``; None when the
        mailbox has no examples or the embedder fails (the LLM decides, as without
        history)."""
        try:
            fitted = self.fitted(mail.mailbox_id, known)
            if fitted is None:
                return None
            packed = stored_examples.mail_vectors(self.deps.embedder,
                                                  [(mail.subject, mail.body_text)])[0]
            vector = np.frombuffer(packed, dtype="<f4")
        except Exception as e:  # the history is an aid: without it the LLM decides alone
            log.warning("mail %s: team history unavailable (%s)", mail.id, type(e).__name__)
            return None
        return view_of(fitted.model, fitted.examples, vector, self.deps.settings,
                       lambda ids: stored_examples.texts(self.deps.db, ids))
