"""LangBot knowledge bases kept by memory-search: a thin adapter from the SDK's entities to the library.

Chunking, embedding, storage, fusion and filters are the library's (memory_search.knowledge_base);
this module reads settings, moves the blocking library calls off the event loop, and turns results
and failures into the SDK's entities."""

from __future__ import annotations

import asyncio

from langbot_plugin.api.definition.components.knowledge_engine.engine import (
    KnowledgeEngine,
    KnowledgeEngineCapability,
)
from langbot_plugin.api.entities.builtin.provider.message import ContentElement
from langbot_plugin.api.entities.builtin.rag.context import (
    RetrievalContext,
    RetrievalResponse,
    RetrievalResultEntry,
)
from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus
from langbot_plugin.api.entities.builtin.rag.errors import RAGError, RetrievalError
from langbot_plugin.api.entities.builtin.rag.models import IngestionContext, IngestionResult

try:  # imported now: the runtime puts the plugin's folder on sys.path only while it loads this module
    from memory_search.config import Settings
    from memory_search.errors import EmbeddingFailed, MemorySearchError
    from memory_search.knowledge_base import (
        BadMemory,
        Document,
        KnowledgeBase,
        ModelSpec,
        check_query_length,
        decode_document,
    )
except ImportError as missing:
    raise ImportError(f"the memory_search library is missing ({missing}): install the package that "
                      "`make langbot-plugin` builds, which bundles it, or pip install memory-search "
                      "into the plugin's Python") from None

DEFAULT_TOP_K = 5
DEFAULT_SCORE_THRESHOLD = 0.5
MODES = {"hybrid": "hybrid", "semantic": "semantic", "keyword": "keyword",
         "vector": "semantic", "full_text": "keyword"}  # the SDK's SearchType names too
HOST_EMBEDDING_BATCH = 64
HOST_EMBEDDING_TIMEOUT = 120


class MemorySearchKnowledgeBase(KnowledgeEngine):
    """Each knowledge base is its own memory-search index; documents are chunked, embedded (the
    local model offline by default, or a LangBot embedding model) and searched hybrid, CJK aware."""

    @classmethod
    def get_capabilities(cls) -> list[str]:
        # DOC_PARSING: Markdown (YAML frontmatter) and UTF-8 plain text are read here; other formats
        # need a parser plugin, whose text arrives as parsed_content.
        return [KnowledgeEngineCapability.DOC_INGESTION, KnowledgeEngineCapability.DOC_PARSING]

    async def on_knowledge_base_create(self, kb_id: str, config: dict) -> None:
        knowledge_base = await self._knowledge_base(kb_id, config or {})
        await self._call(knowledge_base.create, error=RAGError)

    async def on_knowledge_base_delete(self, kb_id: str) -> None:
        knowledge_base = await self._knowledge_base(kb_id, {}, embed=False)
        await self._call(knowledge_base.drop, error=RAGError)

    async def ingest(self, context: IngestionContext) -> IngestionResult:
        file = context.file_object
        document_id = file.metadata.document_id
        settings = context.creation_settings or {}
        try:
            if context.parsed_content is not None:
                text, markdown = context.parsed_content.text, False
                extra = dict(context.parsed_content.metadata or {})
            else:
                data = await self.plugin.get_knowledge_file_stream(file.storage_path)
                text, markdown = decode_document(data, file.metadata.filename, file.metadata.mime_type)
                extra = {}
            document = Document(document_id=document_id, file_name=file.metadata.filename, text=text,
                                markdown=markdown, metadata={**_scalars(file.metadata.extra), **_scalars(extra),
                                                             "file_id": document_id,
                                                             "mime_type": file.metadata.mime_type})
            knowledge_base = await self._knowledge_base(context.knowledge_base_id, settings)
            chunks = await self._call(knowledge_base.ingest, document, settings.get("chunk_size"),
                                      settings.get("chunk_overlap"))
        except (BadMemory, _Failure) as failure:
            return _failed(document_id, str(failure))
        except Exception as error:  # the host's file API, an embedding service: any failure is this document's
            return _failed(document_id, f"cannot ingest {file.metadata.filename}: {_first_line(error)}")
        return IngestionResult(document_id=document_id, status=DocumentStatus.COMPLETED, chunks_created=chunks,
                               metadata={"knowledge_base": context.knowledge_base_id})

    async def retrieve(self, context: RetrievalContext) -> RetrievalResponse:
        options = context.retrieval_settings or {}
        top_k = _number(options.get("top_k"), DEFAULT_TOP_K, int, "top_k")
        threshold = _number(options.get("score_threshold"), DEFAULT_SCORE_THRESHOLD, float, "score_threshold")
        mode = MODES.get(str(options.get("retrieval_mode") or "hybrid").lower())
        if mode is None:
            raise RetrievalError(f"unknown retrieval_mode {options.get('retrieval_mode')!r}: "
                                 "use hybrid, semantic or keyword")
        # before a LangBot embedding model is asked for the query's vector
        await self._call(check_query_length, context.query, error=RetrievalError)
        knowledge_base = await self._knowledge_base(context.get_collection_id(), context.creation_settings or {},
                                                    embed=mode != "keyword", query=context.query)
        hits = await self._call(
            knowledge_base.search, context.query, top=top_k, mode=mode, where=context.filters or {},
            min_score=threshold or None, include_superseded=bool(options.get("include_superseded", False)),
            one_per_document=bool(options.get("one_chunk_per_document", True)),
            time=bool(options.get("time_words", False)), error=RetrievalError)
        results = [_entry(hit, mode) for hit in hits]
        return RetrievalResponse(results=results, total_found=len(results),
                                 metadata={"mode": mode, "score_threshold": threshold})

    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        knowledge_base = await self._knowledge_base(kb_id, {}, embed=False)
        return await self._call(knowledge_base.delete, document_id, error=RAGError)

    # --- helpers ----------------------------------------------------------------------------

    async def _knowledge_base(self, kb_id: str, creation_settings: dict, embed: bool = True, query: str = ""):
        config = self.get_plugin_config() or {}
        settings = Settings.from_env().with_overrides(
            database_url=(config.get("database_url") or "").strip() or None,
            provider=(config.get("embedding_provider") or "").strip() or None,
            voyage_api_key=(config.get("voyage_api_key") or "").strip() or None,
        )
        model = (creation_settings.get("embedding_model") or "").strip() if embed else ""
        embedder = await self._host_embedder(model, query) if model else None
        return KnowledgeBase(settings, kb_id, embedder)

    async def _host_embedder(self, model_uuid: str, query: str):
        """An embedder over a LangBot model, its vector size learnt from a first call: the query's own
        embedding when there is a query, else a probe. Nothing is kept between calls."""
        text = query or "dimension"
        try:
            (vector,) = await self.plugin.invoke_embedding(model_uuid, [text])
        except Exception as error:
            raise _Failure(f"LangBot embedding model {model_uuid} failed: {_first_line(error)}") from None
        return HostEmbedder(self.plugin, model_uuid, len(vector), asyncio.get_running_loop(),
                            known={text: vector} if query else {})

    async def _call(self, function, *args, error=None, **kwargs):
        """Run a blocking library call in a worker thread; any failure becomes `error` with one line."""
        error = error or _Failure
        try:
            return await asyncio.to_thread(function, *args, **kwargs)
        except (MemorySearchError, BadMemory, _Failure) as failure:
            raise error(str(failure)) from None
        except Exception as failure:  # a database or driver error the library did not foresee
            raise error(f"memory-search failed: {_first_line(failure)}") from None


class HostEmbedder:
    """Embeds with a LangBot embedding model through the host (invoke_embedding); called from the
    library's worker thread, it hands each request to the plugin's event loop and waits for it."""

    def __init__(self, plugin, model_uuid: str, dimension: int, loop: asyncio.AbstractEventLoop,
                 known: dict | None = None):
        self.plugin, self.model_uuid, self.loop = plugin, model_uuid, loop
        self.spec = ModelSpec("langbot", model_uuid, dimension)
        self.known = known or {}  # text -> vector already fetched

    def _embed(self, texts: list[str]) -> list[list[float]]:
        future = asyncio.run_coroutine_threadsafe(self.plugin.invoke_embedding(self.model_uuid, texts), self.loop)
        try:
            vectors = future.result(HOST_EMBEDDING_TIMEOUT)
        except Exception as error:
            future.cancel()
            raise EmbeddingFailed(f"LangBot embedding model {self.model_uuid} failed: {_first_line(error)}") from None
        if len(vectors) != len(texts) or any(len(vector) != self.spec.dimension for vector in vectors):
            raise EmbeddingFailed(f"LangBot embedding model {self.model_uuid} returned vectors of another size "
                                  f"than its {self.spec.dimension}: keep one model per knowledge base")
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.known[text] if text in self.known else self._embed([text])[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), HOST_EMBEDDING_BATCH):
            vectors += self._embed(texts[start:start + HOST_EMBEDDING_BATCH])
        return vectors


class _Failure(RAGError):
    """A failure whose message is the one line to show."""


def _entry(hit, mode: str) -> RetrievalResultEntry:
    record = hit.record  # path: the document's id; relpath: its file name
    metadata = {
        **record.frontmatter,
        "document_id": record.path,
        "file_name": record.relpath,
        "title": record.title,
        "chunk_index": hit.chunk_index,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "legs": hit.legs,  # each leg's rank and own score: cosine similarity, BM25
    }
    # score: the relevance score, the estimated probability (0..1) that the chunk answers the query, in every
    # mode (memory_search/search/relevance.py); with a LangBot embedding model, which it is not fitted for, semantic
    # scores are cosines and hybrid ones rank fusion (1.0 = first in both legs). distance = 1 - score.
    distance = 1.0 - hit.score
    return RetrievalResultEntry(id=f"{record.path}:{hit.chunk_index}",
                                content=[ContentElement.from_text(hit.chunk_text)], metadata=metadata,
                                distance=round(distance, 6), score=hit.score)


def _failed(document_id: str, message: str) -> IngestionResult:
    return IngestionResult(document_id=document_id, status=DocumentStatus.FAILED, chunks_created=0,
                           error_message=message)


def _scalars(values: dict) -> dict:
    """Metadata a `where` filter can match: strings, numbers, booleans and lists of them."""
    kept = {}
    for key, value in (values or {}).items():
        if isinstance(value, (str, int, float, bool)) or (
                isinstance(value, list) and all(isinstance(item, (str, int, float, bool)) for item in value)):
            kept[str(key)] = value
    return kept


def _number(value, default, kind, name):
    if value in (None, ""):
        return default
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise RetrievalError(f"{name} must be a number, not {value!r}") from None
    if number < 0 or (name == "top_k" and number < 1):
        raise RetrievalError(f"{name} must be {'at least 1' if name == 'top_k' else 'zero or more'}, not {value!r}")
    return number


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__

