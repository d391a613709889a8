"""The one write pipeline, for memory files and for knowledge-base documents alike.

  prepare()        a parsed memory -> its chunks, what the model reads of each, BM25 terms and links
  write()          whole files' rows in one transaction, with the embeddings the cache already has
  embed_pending()  the chunks written without a vector: embedded (the cache first), newest records first
  finish()         exact counts for BM25, fresh planner statistics, the HNSW index once it pays

Writing before embedding makes a file findable by keywords within seconds of being read; a run that
stops between the two leaves whole files behind, and the next one embeds what is still missing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..directory.files import BadMemory, Memory
from ..directory.records import Record
from ..embedding import Embedder, ModelSpec, vector_literal
from ..errors import first_line
from ..storage import packing, writer
from ..storage.embedding_cache import cache_embeddings, cached_embeddings
from ..storage.schema import ManagedIndex
from ..text.chunking import MAX_CHARS, Chunk, chunk_markdown, embedding_context, join_context
from ..text.links import Link, extract_links
from ..text.tokens import chunk_terms, term_frequencies

EMBED_BATCH = 32  # texts per embedding call: keeps the local model's threads busy
MAX_CHUNKS_PER_FILE = 2_000  # about 2 MB of text; a larger file is refused with the reason
HNSW_MIN_CHUNKS = 5_000  # exact scans measured 9.6 ms at 5,000 chunks and 41 ms at 20,000 (bench.py)
# From here each kind of record gets a vector graph of its own: walking the graph of all, a search kept to
# sessions took 135 ms at p95 at 300,000 chunks and 202 ms at a million, against 36 at 20,000 (bench_scale.py).
KIND_GRAPH_CHUNKS = 200_000


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Prepared:
    """One file or document, ready to be written."""

    record: Record
    state: writer.FileState
    rows: list[writer.ChunkRow]
    hashes: list[str]  # per row: the hash of what the model reads, the embedding cache's key
    links: list[Link] = field(default_factory=list)

    @property
    def files_rows(self) -> writer.FileRows:
        return writer.FileRows(self.record, self.state, self.rows, self.links)


def chunks_of(memory: Memory, size: int = MAX_CHARS, overlap: int = 0) -> tuple[list[Chunk], list[str | None]]:
    """A parsed memory's chunks and what the model reads before each; a memory with no body is one chunk, its
    title, with nothing before it. Raises BadMemory when the chunks are too many."""
    title = memory.record.title
    chunks = chunk_markdown(memory.body, memory.body_start_line, size, overlap)
    if len(chunks) > MAX_CHUNKS_PER_FILE:
        raise BadMemory(f"too many chunks ({len(chunks)} > {MAX_CHUNKS_PER_FILE}): split the file")
    if not chunks:  # frontmatter only: its title is what there is to find
        return [Chunk(title, 1, max(1, memory.body_start_line - 1), "")], [None]
    return chunks, [embedding_context(title, chunk) for chunk in chunks]


def prepare(memory: Memory, state: writer.FileState, size: int = MAX_CHARS, overlap: int = 0,
            links: bool = True) -> Prepared:
    """Chunk, tokenize and hash a parsed memory. Raises BadMemory when it holds too many chunks."""
    record = memory.record
    title = record.title
    chunks, contexts = chunks_of(memory, size, overlap)
    if memory.body.strip():
        terms = [chunk_terms(title, chunk.text) for chunk in chunks]
    else:  # the title alone
        terms = [term_frequencies(title)]
    rows = [writer.ChunkRow(i, chunk.start_line, chunk.end_line, chunk.text, None, dict(counts), context)
            for i, (chunk, counts, context) in enumerate(zip(chunks, terms, contexts))]
    hashes = [content_hash(join_context(context, chunk.text)) for context, chunk in zip(contexts, chunks)]
    found = extract_links(memory.body, record.relpath, memory.body_start_line) if links else []
    return Prepared(record, state, rows, hashes, found)


@dataclass
class Refused:
    item: Prepared
    reason: str


def write(index: ManagedIndex, spec: ModelSpec, items: list[Prepared]) -> tuple[list[Prepared], list[Refused]]:
    """Write the items with the embeddings the cache already has, in one transaction; when PostgreSQL
    refuses a value, each item in its own, so that only the item it refused is left out.
    Returns (written, refused); the number of vectors the cache supplied is `cached_count(items)`."""
    conn = index.conn
    import psycopg

    vectors = cached_embeddings(conn, spec, sorted({text_hash for item in items for text_hash in item.hashes}))
    for item in items:
        for row, text_hash in zip(item.rows, item.hashes):
            row.embedding = vectors.get(text_hash)
    try:
        writer.replace_files(index, [item.files_rows for item in items])
        return list(items), []
    except psycopg.OperationalError:
        raise
    except psycopg.Error:
        pass
    written, refused = [], []
    for item in items:
        try:
            writer.replace_files(index, [item.files_rows])
            written.append(item)
        except psycopg.OperationalError:
            raise
        except psycopg.Error as error:
            refused.append(Refused(item, f"refused by PostgreSQL ({first_line(error)})"))
    return written, refused


def cached_count(items: list[Prepared]) -> int:
    """How many of the items' chunks were written with a vector from the cache."""
    return sum(row.embedding is not None for item in items for row in item.rows)


@dataclass
class Embedded:
    embedded: int = 0  # texts the model embedded
    cached: int = 0  # chunks whose vector came from the cache


def embed_pending(index: ManagedIndex, spec: ModelSpec, embedder: Embedder, progress=None) -> Embedded:
    """Embed every chunk written without a vector, newest records first, a batch per transaction."""
    conn = index.conn
    done = Embedded()
    waiting = writer.count_pending(index)
    if not waiting:
        return done
    if progress:
        progress.start(waiting, label="embedding", unit="chunks")
    while True:
        rows = writer.pending_chunks(index, EMBED_BATCH)
        if not rows:
            break
        texts = {chunk_id: join_context(context, text) for chunk_id, context, text in rows}
        hashes = {chunk_id: content_hash(text) for chunk_id, text in texts.items()}
        vectors = cached_embeddings(conn, spec, sorted(set(hashes.values())))
        missing = {text_hash: texts[chunk_id] for chunk_id, text_hash in hashes.items() if text_hash not in vectors}
        if missing:
            fresh = {text_hash: vector_literal(vector)
                     for text_hash, vector in zip(missing, embedder.embed_documents(list(missing.values())))}
            cache_embeddings(conn, spec, fresh)
            vectors.update(fresh)
            done.embedded += len(missing)
        done.cached += len(rows) - len(missing)
        writer.set_embeddings(index, [(chunk_id, vectors[hashes[chunk_id]]) for chunk_id in texts])
        if progress:
            progress.advance(len(rows), len(rows))
    if progress:
        progress.finish()
    return done


def finish(index: ManagedIndex, spec: ModelSpec, say=lambda message: None) -> dict[str, str]:
    """Recount what BM25 reads, refresh the planner's statistics, pack the keyword index's postings once
    they are many, and build the HNSW index once the chunks are many enough for it to pay."""
    statistics = writer.refresh_statistics(index)
    writer.vacuum(index)
    if packing.due(index, int(statistics["chunks"])):
        packing.pack(index, say)
        writer.vacuum(index)
    if int(statistics["chunks"]) >= HNSW_MIN_CHUNKS:
        writer.ensure_hnsw(index, spec, say)
    if int(statistics["chunks"]) >= KIND_GRAPH_CHUNKS:
        writer.ensure_kind_graphs(index, spec, HNSW_MIN_CHUNKS, say)
    return statistics
