"""Voyage AI embeddings and reranking; the voyageai package is imported on first use (it costs a second)."""

from __future__ import annotations

import time

from ..errors import EmbeddingFailed, first_line
from . import BaseProvider, Embedder, ModelSpec, cannot_make

DEFAULT_MODEL = "voyage-3-large"
DEFAULT_DIMENSION = 1024
RERANK_MODEL = "rerank-2.5"
# Output sizes of the Voyage models that offer a choice; others are passed through as they are.
DIMENSIONS = {model: (256, 512, 1024, 2048) for model in
              ("voyage-3-large", "voyage-3.5", "voyage-3.5-lite", "voyage-code-3", "voyage-4", "voyage-4-large",
               "voyage-4-lite")}
BATCH_TEXTS = 128  # well inside 1000 texts / 120K tokens per request
BATCH_CHARS = 200_000
RETRIES = 3  # for document batches; a query is tried twice
# Seconds one request may take, connect and read: a service that accepts and never answers costs a query
# at most two attempts, an indexing batch at most four.
QUERY_TIMEOUT = 5
DOCUMENTS_TIMEOUT = 15


class Provider(BaseProvider):
    name = "voyage"
    takes_any_model = True  # only Voyage has models to choose from

    def configured(self, settings) -> bool:
        return bool(settings.voyage_api_key)

    def owns(self, model: str) -> bool:
        return model.startswith("voyage-")

    def spec(self, model, dimension, recorded) -> ModelSpec:
        model = model or (recorded.model if recorded else DEFAULT_MODEL)
        spec = ModelSpec(self.name, model, dimension or (recorded.dimension if recorded else DEFAULT_DIMENSION))
        sizes = DIMENSIONS.get(model)
        if dimension is not None and sizes and dimension not in sizes:
            raise cannot_make(spec, dimension)
        return spec

    def embedder(self, spec, settings) -> Embedder:
        return VoyageEmbedder(spec.model, spec.dimension, settings.voyage_api_key, settings.voyage_base_url)

    def configuration(self, settings) -> tuple:
        return settings.voyage_api_key, settings.voyage_base_url

    def reranker(self, settings):
        return rerank_with(settings, RERANK_MODEL) if settings.voyage_api_key else None


class VoyageEmbedder(Embedder):
    thread_safe = True  # the voyageai client keeps an HTTP session per thread

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
        timeout = QUERY_TIMEOUT if input_type == "query" else DOCUMENTS_TIMEOUT
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
            if batch and (len(batch) >= BATCH_TEXTS or size + len(text) > BATCH_CHARS):
                vectors += self._embed(batch, "document", retries=RETRIES)
                batch, size = [], 0
            batch.append(text)
            size += len(text)
        if batch:
            vectors += self._embed(batch, "document", retries=RETRIES)
        return vectors


def rerank_with(settings, model: str):
    """A function (query, documents) -> relevance scores, backed by Voyage's rerank API."""

    def rerank(query: str, documents: list[str]) -> list[float]:
        import voyageai

        client = voyageai.Client(api_key=settings.voyage_api_key, max_retries=0, timeout=QUERY_TIMEOUT,
                                 base_url=settings.voyage_base_url)
        result = client.rerank(query, documents, model=model)
        scores = [0.0] * len(documents)
        for item in result.results:
            scores[item.index] = float(item.relevance_score)
        return scores

    return rerank
