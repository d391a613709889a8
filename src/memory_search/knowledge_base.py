"""Knowledge bases: indexes of documents handed over by a host (a chat bot), not read from a directory.

Each knowledge base is one managed index of its own (storage/writer.py's tables under its own prefix),
created and dropped whole. A document is what a file is to a memories index: its chunks are replaced
in one transaction, its metadata sits in the frontmatter column so `where` filters run in SQL, and it
is searched by the same pipeline as the memories, with the same fusion and filters."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from psycopg import sql

from .config import Settings
from .directory.files import MAX_FILE_BYTES, BadMemory, Memory, parse_memory
from .directory.records import make_record
from .embedding import Embedder, ModelSpec, choose_spec, is_known
from .errors import IndexMismatch, IndexMissing, UsageError, quoted
from .indexing import pipeline
from .resources import Resources
from .search.engine import Engine, Reader
from .search.filters import Filters, where_conditions
from .search.layouts import ManagedLayout
from .search.query import check_query_length
from .search.retrieval import Hit, SearchRequest
from .storage import schema, writer
from .storage.database import connect

# What a host's adapter (integrations/langbot) uses: this module is its door to the library.
__all__ = ["KnowledgeBase", "Document", "decode_document", "tables_for", "BadMemory", "ModelSpec",
           "check_query_length", "DEFAULT_CHUNK_SIZE", "DEFAULT_CHUNK_OVERLAP"]

DEFAULT_CHUNK_SIZE = 500  # characters, as LangBot's knowledge engines default to
DEFAULT_CHUNK_OVERLAP = 50
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
TEXT_SUFFIXES = (".txt", ".text", ".log", ".csv", ".tsv")


def tables_for(kb_id: str) -> schema.ManagedTables:
    """memsearch_kb_<readable part of the id>_<hash of the id>: one set of tables per knowledge base."""
    if not kb_id or not str(kb_id).strip():
        raise UsageError("a knowledge base needs a non-empty id")
    readable = re.sub(r"[^a-z0-9]+", "_", str(kb_id).lower()).strip("_")[:16] or "kb"
    digest = hashlib.sha1(str(kb_id).encode()).hexdigest()[:10]
    return schema.ManagedTables(f"memsearch_kb_{readable}_{digest}")


@dataclass
class Document:
    """A document as the host hands it over: raw text, or text a parser extracted."""

    document_id: str
    file_name: str
    text: str
    markdown: bool = True  # read YAML frontmatter and take the title from it or the first heading
    metadata: dict = field(default_factory=dict)  # searchable with `where`, next to the frontmatter


def decode_document(data: bytes, file_name: str, mime_type: str = "") -> tuple[str, bool]:
    """(text, is Markdown) of a file this module parses itself: Markdown (with YAML frontmatter) and
    plain text in UTF-8. Raises BadMemory saying why not."""
    suffix = PurePosixPath(file_name).suffix.lower()
    markdown = suffix in MARKDOWN_SUFFIXES or mime_type in ("text/markdown", "text/x-markdown")
    if not markdown and suffix not in TEXT_SUFFIXES and not mime_type.startswith("text/"):
        raise BadMemory(f"{file_name}: unsupported file type ({mime_type or suffix or 'no extension'}); "
                        "Markdown and plain text are read directly, other formats need a parser plugin")
    if len(data) > MAX_FILE_BYTES:
        raise BadMemory(_too_large(file_name, len(data)))
    if b"\x00" in data[:8192]:
        raise BadMemory(f"{file_name}: binary content, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadMemory(f"{file_name}: not UTF-8 text") from None
    if not text.strip():
        raise BadMemory(f"{file_name}: empty")
    return text, markdown


def _too_large(file_name: str, size: int) -> str:
    return f"{file_name}: too large ({size // (1024 * 1024)} MB > {MAX_FILE_BYTES // (1024 * 1024)} MB)"


class KnowledgeBase:
    """One knowledge base in the configured database. Writes open their own connection; searches take one
    from the shared resources' pool."""

    def __init__(self, settings: Settings, kb_id: str, embedder: Embedder | None = None,
                 resources: Resources | None = None):
        """embedder: None for the provider the settings choose (local by default). resources: what several
        knowledge bases share (the model, read-only connections); by default the process-wide one."""
        self.settings = settings
        self.kb_id = str(kb_id)
        self.tables = tables_for(self.kb_id)
        self.embedder = embedder
        self.resources = resources or Resources.default()

    # --- life cycle -------------------------------------------------------------------------

    def create(self) -> ModelSpec:
        """Create the tables (again: a no-op when they exist) and bind the index to its model."""
        with connect(self.settings, read_only=False) as conn:
            recorded = self._recorded(conn)
            spec = self._spec(recorded)
            with self._locked(conn):
                index = self.tables.on(conn)
                writer.create_schema(index, spec, Path(f"knowledge-base:{self.kb_id}"))
                writer.refresh_statistics(index)
        return spec

    def drop(self) -> bool:
        """Drop every table of the knowledge base; False when it had none."""
        with connect(self.settings, read_only=False) as conn:
            with self._locked(conn):
                existed = bool(schema.read_meta(self.tables.on(conn)))
                writer.drop_schema(self.tables.on(conn))
        return existed

    def exists(self) -> bool:
        with connect(self.settings, read_only=True) as conn:
            return bool(schema.read_meta(self.tables.on(conn)))

    # --- documents --------------------------------------------------------------------------

    def ingest(self, document: Document, chunk_size: int = DEFAULT_CHUNK_SIZE,
               chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> int:
        """Chunk, embed and write a document, replacing what it held before. Returns its chunk count.

        Raises BadMemory when the text cannot be read as a document, UsageError on bad chunk settings."""
        chunk_size, chunk_overlap = _chunk_settings(chunk_size, chunk_overlap)
        memory = self._parse(document)
        if not memory.body.strip() and not memory.record.title:
            raise BadMemory(f"{document.file_name}: no text to index")
        record = replace(memory.record, kind=None, frontmatter={
            **memory.record.frontmatter, **document.metadata,
            "document_id": document.document_id, "file_name": document.file_name})
        data = document.text.encode("utf-8")
        state = writer.FileState(hashlib.sha256(data).hexdigest(), len(data), 0)
        try:
            item = pipeline.prepare(replace(memory, record=record), state, chunk_size, chunk_overlap, links=False)
        except BadMemory as reason:
            raise BadMemory(f"{document.file_name}: {reason}") from None
        with connect(self.settings, read_only=False) as conn:
            spec = self._spec(self._require(conn))
            with self._locked(conn):
                self._require(conn)  # dropped meanwhile: write nothing
                index = self.tables.on(conn)
                _, refused = pipeline.write(index, spec, [item])
                if refused:
                    raise BadMemory(f"{document.file_name}: {refused[0].reason}")
                pipeline.embed_pending(index, spec, self._embedder(spec))
                pipeline.finish(index, spec)
        return len(item.rows)

    def delete(self, document_id: str) -> bool:
        """Remove every chunk of a document; False when the knowledge base did not hold it."""
        with connect(self.settings, read_only=False) as conn:
            self._require(conn)
            with self._locked(conn):
                held = conn.execute(sql.SQL("SELECT 1 FROM {} WHERE filename = %s").format(self.tables.sql("files")),
                                    (str(document_id),)).fetchone() is not None
                if held:
                    writer.delete_files(self.tables.on(conn), [str(document_id)])
                    pipeline.finish(self.tables.on(conn), self._spec(self._require(conn)))
        return held

    def documents(self) -> dict[str, int]:
        """document id -> chunk count."""
        with connect(self.settings, read_only=True) as conn:
            self._require(conn)
            return dict(conn.execute(sql.SQL("SELECT filename, chunk_count FROM {}").format(
                self.tables.sql("files"))).fetchall())

    # --- search -----------------------------------------------------------------------------

    def search(self, query: str, top: int = 5, mode: str | None = None, where: dict | None = None,
               min_score: float | None = None, include_superseded: bool = False,
               one_per_document: bool = True, time: bool = False) -> list[Hit]:
        """Hybrid (or semantic, or keyword) search, the `where` conditions applied in SQL. Each hit's
        record.path is its document's id, record.relpath the document's file name. time: read time words in
        the query as a window on the documents' frontmatter dates (off: documents are rarely dated)."""
        filters = Filters(include_superseded=include_superseded,
                          where=where_conditions(where, "filters") if where else ())
        request = SearchRequest(query=query, top=top, mode=mode, filters=filters, dedupe=one_per_document,
                                min_score=min_score, time=time)
        reader = Reader(self.settings, self.resources.connections)
        engine = Engine(self.settings, reader, self.resources.embedders, find=self._find,
                        layout=lambda info: KnowledgeBaseLayout(info, Path("/")),
                        model=lambda info: self._embedder(self._spec(info.spec)), ahead=False)
        try:
            return engine.search(request)
        finally:
            reader.close()

    # --- helpers ----------------------------------------------------------------------------

    def _parse(self, document: Document) -> Memory:
        size = len(document.text.encode("utf-8", "surrogatepass"))
        if size > MAX_FILE_BYTES:  # text a host's parser extracted is held to the same limit as a file
            raise BadMemory(_too_large(document.file_name, size))
        if document.markdown:
            try:
                return parse_memory(document.document_id, document.file_name, document.text)
            except BadMemory as reason:
                raise BadMemory(f"{document.file_name}: {reason}") from None
        if not document.text.strip():
            raise BadMemory(f"{document.file_name}: empty")
        return Memory(make_record(document.document_id, document.file_name, {}), document.text, 1)

    def _find(self, conn) -> schema.IndexInfo:
        """The description of the knowledge base's index, or IndexMissing naming it."""
        self._require(conn)
        return schema.find_index(conn, Path("/"), self.tables.prefix)

    def _recorded(self, conn) -> ModelSpec | None:
        meta = schema.read_meta(self.tables.on(conn))
        return ModelSpec(meta["provider"], meta["model"], int(meta["dimension"])) if meta else None

    def _require(self, conn) -> ModelSpec:
        recorded = self._recorded(conn)
        if recorded is None:
            raise IndexMissing(f"knowledge base {self.kb_id} does not exist in this database: create it first")
        return recorded

    def _spec(self, recorded: ModelSpec | None) -> ModelSpec:
        if self.embedder is None:
            if recorded is not None and not is_known(recorded.provider):
                raise IndexMismatch(f"knowledge base {self.kb_id} was built with {recorded}, "
                                    "which only its host can run: embed with that model")
            return choose_spec(self.settings, recorded)
        if recorded is not None and recorded != self.embedder.spec:
            raise IndexMismatch(f"knowledge base {self.kb_id} was built with {recorded}, "
                                f"not {self.embedder.spec}: keep its embedding model, or create a new one")
        return self.embedder.spec

    def _embedder(self, spec: ModelSpec) -> Embedder:
        if self.embedder is not None:
            return self.embedder
        return self.resources.embedders.get(spec, self.settings)

    def _locked(self, conn):
        """One writer per knowledge base at a time; other knowledge bases never wait for it."""
        return writer.writing_lock(self.tables.on(conn))


class KnowledgeBaseLayout(ManagedLayout):
    """The managed layout over documents that exist in the database only: every chunk the SQL returns
    is shown (the filters ran there), under its document's id and file name."""

    def admit(self, candidate, filters):
        return replace(candidate.record, path=candidate.filename,
                       relpath=str(candidate.record.frontmatter.get("file_name", "")))

    def indexed_state(self, conn, paths):
        return None


def _chunk_settings(size, overlap) -> tuple[int, int]:
    try:
        size = DEFAULT_CHUNK_SIZE if size in (None, "") else int(size)
        overlap = DEFAULT_CHUNK_OVERLAP if overlap in (None, "") else int(overlap)
    except (TypeError, ValueError):
        raise UsageError(f"chunk_size {quoted(size)} and chunk_overlap {quoted(overlap)} must be whole "
                         "numbers") from None
    if size < 50 or overlap < 0 or overlap >= size:
        raise UsageError(f"chunk_size {size} and chunk_overlap {overlap}: need chunk_size >= 50 "
                         "and 0 <= chunk_overlap < chunk_size")
    return size, overlap
