"""A first index is searchable by keyword before the model has embedded it, and resumes where it stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest
from conftest import SCRIPTS, index, names, run_script, search

import memory_search
from memory_search.storage.schema import ManagedTables

# Sections long enough to be chunks of their own (a short section is chunked with the one it opens).
_LONG = ("We read the logs, wrote a test for the failing case, ran it against staging, and checked the numbers "
         "again the next morning before anyone merged the change into the main branch. ") * 2


def _notes(memories, count: int) -> None:
    marker = memories.root.parent.name  # text new to the embedding cache
    for number in range(count):
        memories.session(f"2026-11-{1 + number % 28:02d}", f"{100000 + number:06d}", f"Session {number}",
                         f"We worked on feature{number} today and wrote notes about it. {marker} {_LONG}\n\n"
                         f"## Details\n\nfeature{number} needed a second pass. {marker} {_LONG}", project="agents")


def _counts(database: str, memories) -> tuple[int, int]:
    """(chunks, chunks with an embedding)."""
    chunks = ManagedTables.of(memories.root).chunks
    with psycopg.connect(database) as conn:
        return conn.execute(f"SELECT count(*), count(embedding) FROM {chunks}").fetchone()


class GatedEmbedder:
    """The real local model, held at its first call until the test lets it go."""

    def __init__(self):
        from memory_search.embedding.local import LocalEmbedder

        self.model = LocalEmbedder()
        self.spec = self.model.spec
        self.reached, self.release = threading.Event(), threading.Event()

    def embed_query(self, text):
        return self.model.embed_query(text)

    def embed_documents(self, texts):
        self.reached.set()
        self.release.wait(120)
        return self.model.embed_documents(texts)


def test_keyword_search_works_while_the_model_still_embeds(env, memories, database):
    _notes(memories, 12)
    embedder = GatedEmbedder()
    from memory_search.indexing.indexer import Indexer

    settings = memory_search.Settings.from_env().with_overrides(memories_dir=str(memories.root))
    result = {}
    run = threading.Thread(target=lambda: result.update(stats=Indexer(settings, embedder=embedder).run()))
    run.start()
    try:
        assert embedder.reached.wait(120), "the indexer never reached the model"
        chunks, embedded = _counts(database, memories)
        assert chunks == 24 and embedded == 0  # every file written, none embedded yet
        early = run_script("search", "feature7", "--format", "json", env=env, memories=memories, check=True)
        assert "Session 7" in early.stdout  # hybrid search answers from the keyword leg
        assert "still being embedded" in early.stderr and len(early.stderr.strip().splitlines()) == 1
    finally:
        embedder.release.set()
        run.join(300)
    assert result["stats"].embedded == 24
    assert _counts(database, memories) == (24, 24)
    late = run_script("search", "feature7", env=env, memories=memories, check=True)
    assert "Session 7" in late.stdout and late.stderr == ""


def test_newest_records_are_embedded_first(env, memories, database):
    _notes(memories, 6)
    embedder = GatedEmbedder()
    embedder.release.set()
    seen = []
    original = embedder.embed_documents

    def remember(texts):
        seen.extend(texts)
        return original(texts)

    embedder.embed_documents = remember
    from memory_search.indexing.indexer import Indexer

    settings = memory_search.Settings.from_env().with_overrides(memories_dir=str(memories.root))
    Indexer(settings, embedder=embedder).run()
    order = [int(text.split("feature")[1].split()[0]) for text in seen]
    days = [1 + number % 28 for number in order]
    assert days == sorted(days, reverse=True)


@pytest.mark.crash
def test_a_run_killed_while_embedding_resumes_without_redoing_work(env, memories, database):
    _notes(memories, 30)
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--memories", str(memories.root)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    chunks = embedded = 0
    while time.monotonic() < deadline and process.poll() is None:
        try:
            chunks, embedded = _counts(database, memories)
        except psycopg.errors.UndefinedTable:
            pass
        if chunks == 60 and 0 < embedded < 60:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    chunks, embedded = _counts(database, memories)
    assert chunks == 60 and embedded < 60, (chunks, embedded)  # killed in the embedding phase
    assert search(env, memories, "feature3", "--mode", "keyword")  # searchable by keyword meanwhile
    finished = index(env, memories)
    assert finished["success"] == 0 and finished["skipped"] == 30  # no file read again
    assert finished["embedded"] <= 60 - embedded  # nothing embedded twice
    assert _counts(database, memories) == (60, 60)


@pytest.mark.crash
def test_a_run_killed_while_writing_keywords_resumes_without_redoing_work(env, memories, database):
    marker = memories.root.parent.name  # text new to the embedding cache
    for number in range(300):  # short notes: the model embeds them quickly once the run resumes
        memories.write(f"wiki/card-{number:03d}.md", f"Card {number}: term{number}. {marker}", title=f"Card {number}")
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--memories", str(memories.root)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    chunks = embedded = 0
    while time.monotonic() < deadline and process.poll() is None:
        try:
            chunks, embedded = _counts(database, memories)
        except psycopg.errors.UndefinedTable:
            pass
        if 0 < chunks < 300:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    chunks, embedded = _counts(database, memories)
    assert 0 < chunks < 300 and embedded == 0, (chunks, embedded)  # killed in the keyword phase
    with psycopg.connect(database) as conn:
        written = conn.execute(f"SELECT max(filename) FROM {ManagedTables.of(memories.root).chunks}").fetchone()[0]
    number = int(written.removesuffix(".md").rsplit("-", 1)[1])  # .../card-NNN.md
    assert names(search(env, memories, f"term{number}", "--mode", "keyword")) == [f"card-{number:03d}.md"]
    finished = index(env, memories)
    assert finished["success"] == 300 - chunks and finished["skipped"] == chunks  # written files not read again
    assert _counts(database, memories) == (300, 300)
