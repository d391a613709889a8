"""Embedding models behind one small interface, and the registry of the providers that make them.

A provider is one module of this package with a class named `Provider` (see local.py, voyage.py);
registering it is one line in PROVIDERS. Provider modules are imported only when used: the Voyage
client alone costs a second to import."""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..config import Settings
from ..errors import IndexMismatch, UsageError, quoted
from ..hints import command

# name -> module; the first whose `configured` says so is the default, local the fallback.
PROVIDERS = {"voyage": "memory_search.embedding.voyage", "local": "memory_search.embedding.local"}
FALLBACK = "local"


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
    thread_safe = False  # may embed for several threads at once (a web API's client), else one at a time

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


class BaseProvider:
    """What a provider module's `Provider` offers; the registry calls nothing else."""

    name: str
    runs_locally = False  # embeds in this process without the network: a query may be embedded early

    def configured(self, settings: Settings) -> bool:
        """Whether the settings choose this provider when none is named."""
        return False

    def owns(self, model: str) -> bool:
        """Whether a model name, given without a provider, names one of this provider's models."""
        return False

    takes_any_model = False  # a model name no provider owns means this provider (its catalogue is open)

    def spec(self, model: str | None, dimension: int | None, recorded: ModelSpec | None) -> ModelSpec:
        """The model to use: `model` when asked for, else the one `recorded` by an index of this provider,
        else the default; `dimension` is the size a table holds. Raises UsageError or IndexMismatch."""
        raise NotImplementedError

    def embedder(self, spec: ModelSpec, settings: Settings) -> Embedder:
        raise NotImplementedError

    def configuration(self, settings: Settings) -> tuple:
        """What besides the model makes its embedders differ (a key, an address): they are cached by both."""
        return ()

    def reranker(self, settings: Settings):
        """A function (query, documents) -> relevance scores, or None when this provider has none."""
        return None


_LOADED: dict[str, BaseProvider] = {}


def provider(name: str) -> BaseProvider:
    """The registered provider `name`. Raises UsageError for an unknown one."""
    if name not in PROVIDERS:
        raise UsageError(f"unknown MEMORIES_EMBEDDING_PROVIDER {quoted(name)}: use one of "
                         f"{', '.join(sorted(PROVIDERS))}")
    if name not in _LOADED:
        _LOADED[name] = importlib.import_module(PROVIDERS[name]).Provider()
    return _LOADED[name]


def is_known(name: str) -> bool:
    return name in PROVIDERS


def choose_spec(settings: Settings, recorded: ModelSpec | None = None, dimension: int | None = None) -> ModelSpec:
    """The model to use: what the user asked for, else what built the index, else the configured provider's.

    `recorded` is the model a managed index names; `dimension` is a table's vector size."""
    name = settings.provider
    if name is not None:
        provider(name)  # unknown: say so first
    if name is None and settings.model is None and recorded is not None:
        return recorded
    if name is None:
        if settings.model is not None:
            name = next((candidate for candidate in PROVIDERS if provider(candidate).owns(settings.model)), None) \
                or next((candidate for candidate in PROVIDERS if provider(candidate).takes_any_model), None)
        if name is None and recorded is not None:
            name = recorded.provider
        if name is None:
            name = next((candidate for candidate in PROVIDERS if provider(candidate).configured(settings)), FALLBACK)
    same = recorded if recorded is not None and recorded.provider == name else None
    asked = settings.model if settings.provider == name or settings.provider is None else None
    spec = provider(name).spec(asked, None, same)
    if recorded is not None and spec != recorded:
        raise IndexMismatch(
            f"the index was built with {recorded}, but {spec} was asked for: unset "
            f"MEMORIES_EMBEDDING_PROVIDER/MEMORIES_EMBEDDING_MODEL, or rebuild with `{command('index', '--rebuild')}`"
        )
    if dimension is not None:
        spec = provider(name).spec(asked, dimension, same)
        if spec.dimension != dimension:
            raise cannot_make(spec, dimension)
    return spec


def cannot_make(spec: ModelSpec, dimension: int) -> IndexMismatch:
    return IndexMismatch(
        f"the table holds {dimension}-dimension vectors, which {spec.provider}/{spec.model} cannot make: "
        "set MEMORIES_EMBEDDING_PROVIDER/MEMORIES_EMBEDDING_MODEL to the model that built it")


def make_embedder(spec: ModelSpec, settings: Settings) -> Embedder:
    return provider(spec.provider).embedder(spec, settings)


def reranker(settings: Settings):
    """The first configured provider's reranker, or None."""
    for name in PROVIDERS:
        candidate = provider(name)
        if candidate.configured(settings):
            found = candidate.reranker(settings)
            if found is not None:
                return found
    return None


class Embedders:
    """Embedders by model, each made on first use and kept. Shared between threads (`shared=True`), each
    model is loaded once, and one that is not thread-safe (the local model) embeds for one thread at a time."""

    def __init__(self, shared: bool = False):
        self._made: dict[tuple, Embedder] = {}
        self._lock = threading.Lock() if shared else None

    def get(self, spec: ModelSpec, settings: Settings) -> Embedder:
        key = (spec.key, *provider(spec.provider).configuration(settings))
        embedder = self._made.get(key)
        if embedder is not None:
            return embedder
        if self._lock is None:
            embedder = self._made[key] = make_embedder(spec, settings)
            return embedder
        with self._lock:
            if key not in self._made:
                self._made[key] = _Shared(make_embedder(spec, settings))
            return self._made[key]

    def __len__(self) -> int:
        return len(self._made)


class _Shared(Embedder):
    """A shared embedder (a server's, the warm helper's): a model that is not thread-safe embeds for one thread
    at a time, a web API for many at once; and a question asked again soon (the page with other filters, an
    agent repeating itself) is answered from the last vectors instead of the model or the API."""

    RECENT_QUERIES = 64

    def __init__(self, embedder: Embedder):
        self.inner, self.spec = embedder, embedder.spec
        self.thread_safe = embedder.thread_safe
        self.lock = threading.Lock()  # the recent vectors; and the model itself unless it is thread-safe
        self.recent: OrderedDict[str, list[float]] = OrderedDict()

    def embed_query(self, text: str) -> list[float]:
        with self.lock:
            vector = self.recent.get(text)
            if vector is not None:
                self.recent.move_to_end(text)
                return list(vector)
            if not self.thread_safe:
                return list(self._keep(text, self.inner.embed_query(text)))
        vector = self.inner.embed_query(text)  # outside the lock: a slow answer holds up no other question
        with self.lock:
            return list(self._keep(text, vector))

    def _keep(self, text: str, vector: list[float]) -> list[float]:
        """Keep the vector among the recent ones (under the lock)."""
        self.recent[text] = vector
        self.recent.move_to_end(text)
        if len(self.recent) > self.RECENT_QUERIES:
            self.recent.popitem(last=False)
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.thread_safe:
            return self.inner.embed_documents(texts)
        with self.lock:
            return self.inner.embed_documents(texts)


def vector_literal(vector) -> str:
    """pgvector's text form, so neither numpy nor pgvector.psycopg is needed to bind a vector."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"
