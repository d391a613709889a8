"""Speed on synthetic memories: fresh-process wall time, in-process latency, memory, indexing.

Everything runs against its own embedded PostgreSQL in a temporary folder, so the user's index,
cache and helper are never touched."""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"

KINDS = ("session", "web", "minutes", "wiki")
_SYLLABLES = "ka ri to mo ne sa lu vi de po an el or us ti ba ge xi qu ze".split()
_KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのアイウエオカキクケコサシスセソ"
_KANJI = ("検索記憶要約会議録決定担当期限障害復旧設定環境移行性能遅延品質評価運用監視通"
          "知手順確認修正対応課題計画改善共有資料仕様実装試験公開保存夜間形態素埋込順位")


def vocabulary(size: int = 6000, seed: int = 1) -> tuple[list[str], list[str]]:
    """Pseudo-words in both scripts; used with Zipf weights, as words are in real text."""
    rng = random.Random(seed)
    english = sorted({"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(size)})
    japanese = sorted({"".join(rng.choice(_KANJI) for _ in range(2)) + rng.choice(_KANA) * rng.randint(0, 1)
                       for _ in range(size)})
    rng.shuffle(english)
    rng.shuffle(japanese)
    return english, japanese


EN_WORDS, JA_WORDS = vocabulary()
_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(EN_WORDS))]
_JA_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(JA_WORDS))]
_QUERY_RNG = random.Random(99)
QUERIES = [" ".join(_QUERY_RNG.choice((EN_WORDS, JA_WORDS)[i % 2][20:1500])  # neither rare nor common
                    for _ in range(_QUERY_RNG.randint(2, 4))) for i in range(10)]


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "".join(rng.choices(JA_WORDS, _JA_WEIGHTS, k=rng.randint(6, 14))) + "。"
    return " ".join(rng.choices(EN_WORDS, _WEIGHTS, k=rng.randint(8, 18))).capitalize() + "."


def generate(root: Path, files: int, chunks_per_file: int = 1, seed: int = 7, salt: str = "",
             kinds: tuple[str, ...] = KINDS) -> int:
    """Write `files` memories of the kinds given in turn, each about `chunks_per_file` chunks long; returns
    the count."""
    rng = random.Random(seed)
    for number in range(files):
        kind = kinds[number % len(kinds)]
        day = f"2026-{1 + number % 11:02d}-{1 + number % 28:02d}"
        if kind == "wiki":
            relpath = f"wiki/topic{number % 97}/page{number}.md"
        else:
            relpath = f"raw/{kind}/{day}/{number % 240000:06d}_{number:08x}.md"
        sections = []
        for section in range(chunks_per_file):
            body = " ".join(_sentence(rng) for _ in range(rng.randint(4, 7)))
            sections.append(f"## Section {section}\n\n{body}")
        title = f"{rng.choice(JA_WORDS)} {rng.choice(EN_WORDS)} {number}"
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {title}\nkind: {kind}\nproject: p{number % 13}\ntags: [t{number % 7}]\n"
                        f"---\n{salt}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    return files


FIRST_INDEX_WORD = "quillnavarre"  # the generated vocabulary's syllables cannot spell it


def embedding_texts(root: Path) -> list[str]:
    """What the indexer would send to the model for the memories under `root`."""
    from memory_search.directory.files import discover, read_memory
    from memory_search.text.chunking import chunk_markdown, embedding_text

    texts = []
    for memory_file in discover(root)[0]:
        memory, _ = read_memory(memory_file)
        texts += [embedding_text(memory.record.title, chunk) for chunk in chunk_markdown(memory.body, 1)]
    return texts


def raw_embedder_rate(texts: list[str]) -> float:
    """Texts/s of the local model alone, in the indexer's batch size, the model loaded beforehand."""
    from memory_search.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed_documents(texts[:4])
    started = time.perf_counter()
    for offset in range(0, len(texts), 32):
        embedder.embed_documents(texts[offset:offset + 32])
    return len(texts) / (time.perf_counter() - started)


class PoolEmbedder:
    """Vectors made without the model, for sizes it cannot embed in reasonable time: each text gets
    a real embedding of one of a small pool of texts, plus noise, chosen by the text's hash."""

    def __init__(self, base, pool_size: int = 64):
        import numpy

        self.spec = base.spec
        rng = random.Random(11)
        pool_texts = [" ".join(_sentence(rng) for _ in range(4)) for _ in range(pool_size)]
        self.pool = numpy.asarray(base.embed_documents(pool_texts), dtype="float32")
        self.numpy = numpy

    def embed_documents(self, texts):
        vectors = []
        for text in texts:
            digest = int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)
            generator = self.numpy.random.default_rng(digest)
            vector = self.pool[digest % len(self.pool)] + generator.normal(0, 0.02, self.pool.shape[1])
            vectors.append((vector / self.numpy.linalg.norm(vector)).tolist())
        return vectors


@dataclass
class Timing:
    median_ms: float
    p95_ms: float
    peak_rss_mb: float | None = None
    baseline_ms: float | None = None  # `python3 -c pass`, timed interleaved with this figure
    ratio: float | None = None  # median / baseline median

    @classmethod
    def of(cls, seconds: list[float], peaks: list[int] | None = None, baseline: list[float] | None = None) -> "Timing":
        ordered = sorted(seconds)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        peak = round(max(peaks) / 1024, 1) if peaks else None
        median = statistics.median(ordered)
        if not baseline:
            return cls(round(median * 1000, 1), round(p95 * 1000, 1), peak)
        floor = statistics.median(baseline)
        return cls(round(median * 1000, 1), round(p95 * 1000, 1), peak, round(floor * 1000, 1),
                   round(median / floor, 2))


def system_python() -> str:
    """The interpreter `#!/usr/bin/env python3` finds outside the skill's venv (through pyenv-style shims)."""
    import shutil

    venv_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep)
                           if os.path.abspath(part) != os.path.abspath(venv_bin))
    found = shutil.which("python3", path=path) or "/usr/bin/python3"
    try:  # a shim is a shell script: time the interpreter it runs, not the shim
        return subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                              env=dict(os.environ, PATH=path), timeout=60, check=True).stdout.strip() or found
    except (OSError, subprocess.SubprocessError):
        return found


@dataclass
class Report:
    notes: list[str] = field(default_factory=list)
    indexing: dict = field(default_factory=dict)
    sizes: list[dict] = field(default_factory=list)
    recent: dict = field(default_factory=dict)
    freshness: dict = field(default_factory=dict)
    knowledge: dict = field(default_factory=dict)
    first_index: dict = field(default_factory=dict)


# Fresh processes are started by a small runner process: a child forked from this (large) process
# would report this process's memory as its own peak.
_RUNNER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    job = json.loads(line)
    started = time.perf_counter()
    child = subprocess.Popen(job["command"], env=job["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "peak_kb": usage.ru_maxrss, "code": os.waitstatus_to_exitcode(status),
                      "stderr": child.stderr.read().decode(errors="replace")[:300]}), flush=True)
"""


class Runner:
    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", _RUNNER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def run(self, command: list[str], env: dict) -> tuple[float, int]:
        """Wall time (s) and peak RSS (KB) of one fresh process."""
        self.process.stdin.write(json.dumps({"command": command, "env": env}) + "\n")
        self.process.stdin.flush()
        result = json.loads(self.process.stdout.readline())
        if result["code"] != 0:
            raise RuntimeError(f"{' '.join(command[1:3])} failed: {result['stderr']}")
        return result["seconds"], result["peak_kb"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


class Bench:
    def __init__(self, runs: int, say=print, python: str | None = None):
        self.runs = runs
        self.say = say
        self.python = python or system_python()
        self.workdir = Path(tempfile.mkdtemp(prefix="memsearch-bench-"))
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("MEMORIES_", "VOYAGE_", "COCOINDEX_"))}
        self.env.update({"MEMORIES_DATA_DIR": str(self.workdir / "data"), "XDG_RUNTIME_DIR": str(self.workdir / "run"),
                         "HOME": str(self.workdir / "home")})
        # As installed: modules compiled once and cached, not compiled again by every process.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.runner = Runner()
        (self.workdir / "run").mkdir()
        (self.workdir / "home").mkdir()
        os.environ.update({key: self.env[key] for key in ("MEMORIES_DATA_DIR", "XDG_RUNTIME_DIR")})
        os.environ.pop("MEMORIES_DATABASE_URL", None)
        os.environ.pop("COCOINDEX_DATABASE_URL", None)

    def settings(self, root: Path):
        from memory_search.config import Settings

        return Settings.from_env(dict(self.env, MEMORIES_DIR=str(root)))

    def script(self, name: str, *args: str, root: Path, helper: bool = False, python: str | None = None) -> list[str]:
        return [python or sys.executable, str(SCRIPTS / f"{name}.py"), *args, "--memories", str(root)] + (
            [] if helper or name != "search" else ["--no-daemon"])

    def timed(self, commands, env: dict | None = None) -> Timing:
        """Fresh processes, each run right after a `python3 -c pass` (the same interpreter Claude Code finds):
        the ratio of the medians holds even when the machine is busy. `commands(run)` gives run's command."""
        times, peaks, baseline = [], [], []
        for run in range(self.runs):
            baseline.append(self.runner.run([self.python, "-c", "pass"], self.env)[0])
            elapsed, peak = self.runner.run(commands(run), env or self.env)
            times.append(elapsed)
            peaks.append(peak)
        return Timing.of(times, peaks, baseline)

    def indexing_throughput(self, files: int) -> dict:
        """Real model, salted texts so the cache cannot help: chunks/s next to the raw embedder's texts/s."""
        from memory_search.indexing.indexer import Indexer

        root = self.workdir / "throughput"
        generate(root, files, chunks_per_file=1, seed=3, salt=f"run {time.time_ns()}")
        raw = raw_embedder_rate(embedding_texts(root))
        stats = Indexer(self.settings(root)).run()
        indexed = stats.chunks / stats.duration_secs
        return {"files": files, "chunks": stats.chunks, "raw_embedder_texts_per_s": round(raw, 2),
                "index_chunks_per_s": round(indexed, 2), "ratio": round(indexed / raw, 3),
                "cold_index_s": stats.duration_secs}

    def first_index(self, files: int, sample: int = 320) -> dict:
        """A new user's first index.py over `files` session-like files, real model: the seconds until a keyword
        search finds the last file the keyword phase writes (the oldest) by a word only it holds, polled with
        fresh search.py processes; then the whole run's chunks/s next to the raw embedder's on `sample` of its texts."""
        root = self.workdir / "first"
        generate(root, files, chunks_per_file=1, seed=11, salt=f"run {time.time_ns()}", kinds=("session",))
        target = min(root.glob("raw/session/*/*.md"))
        with target.open("a", encoding="utf-8") as handle:
            handle.write(f"\nThe deploy checklist mentions {FIRST_INDEX_WORD} once.\n")
        texts = embedding_texts(root)
        raw = raw_embedder_rate(random.Random(11).sample(texts, min(sample, len(texts))))
        log = (self.workdir / "first-index.log").open("w")
        started = time.perf_counter()
        index = subprocess.Popen(self.script("index", "--json", root=root), env=self.env, stdout=subprocess.PIPE,
                                 stderr=log, text=True)
        probe = self.script("search", FIRST_INDEX_WORD, "--mode", "keyword", "--format", "json", root=root)
        found_s = None
        while found_s is None:
            finished = index.poll() is not None
            answer = subprocess.run(probe, env=dict(self.env, MEMORIES_NO_DAEMON="1"), capture_output=True, text=True)
            if answer.returncode == 0 and any(hit["path"] == str(target) for hit in json.loads(answer.stdout)):
                found_s = time.perf_counter() - started
            elif finished:
                break
            else:
                time.sleep(0.2)
        stats = json.loads(index.communicate()[0])
        log.close()
        indexed = stats["chunks"] / stats["duration_secs"]
        return {"files": files, "chunks": stats["chunks"], "embedded": stats["embedded"] + stats["cached"],
                "keyword_found_s": round(found_s, 1) if found_s is not None else None,
                "index_s": stats["duration_secs"], "index_chunks_per_s": round(indexed, 2),
                "raw_embedder_texts_per_s": round(raw, 2), "ratio": round(indexed / raw, 3)}

    def load(self, root: Path, chunks: int, chunks_per_file: int) -> float:
        from memory_search.embedding.local import LocalEmbedder
        from memory_search.indexing.indexer import Indexer

        generate(root, chunks // chunks_per_file, chunks_per_file=chunks_per_file, seed=chunks)
        started = time.perf_counter()
        Indexer(self.settings(root), embedder=PoolEmbedder(LocalEmbedder())).run()
        return time.perf_counter() - started

    def size(self, chunks: int, chunks_per_file: int = 4) -> dict:
        from memory_search.embedding.local import LocalEmbedder
        from memory_search.search.layouts import layout_for
        from memory_search.search.retrieval import Searcher, SearchRequest
        from memory_search.storage.database import connect
        from memory_search.storage.schema import find_index

        root = self.workdir / f"size{chunks}"
        self.say(f"loading {chunks} chunks (vectors from a pool of real embeddings plus noise, not the model)")
        load_seconds = self.load(root, chunks, chunks_per_file)
        result = {"chunks": chunks, "files": chunks // chunks_per_file, "load_s": round(load_seconds, 1)}
        settings = self.settings(root)
        embedder = LocalEmbedder()
        with connect(settings) as conn:
            layout = layout_for(find_index(conn, settings.memories_root), settings.memories_root)
            result["hnsw"] = layout.info.has_hnsw
            result["actual_chunks"] = layout.chunk_count
            searcher = Searcher(conn, layout, embedder)
            searcher.search(SearchRequest(query="warm up"))
            vectors = {query: embedder.embed_query(query) for query in QUERIES}

            class Remembered:
                spec = embedder.spec

                @staticmethod
                def embed_query(text):
                    return vectors[text]

            searcher.embedder = Remembered()
            for mode in ("semantic", "keyword", "hybrid"):
                times = []
                for _ in range(max(1, self.runs // len(QUERIES))):
                    for query in QUERIES:
                        started = time.perf_counter()
                        searcher.search(SearchRequest(query=query, mode=mode))
                        times.append(time.perf_counter() - started)
                result[f"in_process_{mode}"] = Timing.of(times).__dict__
            result["vector_exact_scan"] = self._exact_scan(conn, layout.info, vectors)
        query = lambda run: QUERIES[run % len(QUERIES)]  # noqa: E731
        cold = dict(self.env, MEMORIES_NO_DAEMON="1")
        result["search_no_helper"] = self.timed(lambda run: self.script("search", query(run), root=root), cold).__dict__
        result["search_no_helper_system_python"] = self.timed(
            lambda run: self.script("search", query(run), root=root, helper=True, python=self.python), cold).__dict__
        self._warm_helper(root, "search", "warm up")
        result["search_helper"] = self.timed(
            lambda run: self.script("search", query(run), root=root, helper=True)).__dict__
        result["search_helper_system_python"] = self.timed(
            lambda run: self.script("search", query(run), root=root, helper=True, python=self.python)).__dict__
        result["breakdown"] = self.breakdown(root)
        self._stop_helper()
        return result

    def _exact_scan(self, conn, info, vectors: dict) -> dict:
        """The semantic leg's nearest-30 query as an exact scan, to set against in_process_semantic."""
        from memory_search.embedding import vector_literal

        times = []
        for vector in list(vectors.values()) * 2:
            with conn.transaction():
                conn.execute("SELECT set_config('enable_indexscan', 'off', true)")
                started = time.perf_counter()
                conn.execute(f"SELECT id FROM {info.table} ORDER BY embedding <=> %s::vector LIMIT 30",
                             (vector_literal(vector),)).fetchall()
                times.append(time.perf_counter() - started)
        return Timing.of(times).__dict__

    def _warm_helper(self, root: Path, script: str, *args: str) -> None:
        """Start the helper as a user's first call does, wait until it listens, then call it twice."""
        from memory_search.faces import client, helper

        path = str(helper.socket_path(self.env))
        self.runner.run(self.script(script, *args, root=root, helper=True), self.env)
        for _ in range(600):
            if client.parse_reply(client._exchange(path, self._ping()) or b"") is not None:
                break
            time.sleep(0.1)
        for _ in range(2):
            self.runner.run(self.script(script, *args, root=root, helper=True), self.env)

    @staticmethod
    def _ping() -> bytes:
        from memory_search.faces import client

        return client.encode({"protocol": client.PROTOCOL, "ping": True}).encode() + b"\n"

    def breakdown(self, root: Path) -> dict:
        """Where a warm search's time goes, each part timed on its own (medians, ms).

        client_start: a fresh `python3` importing the helper's client and hashing the configuration, less
        `python3 -c pass`; socket: a round trip to the helper; then the helper's work: parse (click), index
        lookup, query embedding, each leg's SQL, the whole search, render."""
        from collections import Counter

        from memory_search.api import Memories
        from memory_search.embedding.local import LocalEmbedder
        from memory_search.faces import cli, client, helper
        from memory_search.render import hits_markdown
        from memory_search.search.filters import Filters
        from memory_search.search.layouts import layout_for
        from memory_search.storage.schema import find_index
        from memory_search.text.tokens import tokenize

        def median_ms(action, times: int = 20) -> float:
            samples = []
            for number in range(times):
                started = time.perf_counter()
                action(number)
                samples.append(time.perf_counter() - started)
            return round(statistics.median(samples) * 1000, 2)

        probe = ("import sys, os; sys.path.insert(0, %r); from memory_search.faces import client; "
                 "client.identity(os.environ, os.getcwd())" % str(ROOT / "src"))
        start = self.timed(lambda run: [self.python, "-c", probe])
        path = str(helper.socket_path(self.env))
        ping = self._ping()
        parts = {"python3 -c pass": start.baseline_ms,
                 "client_start": round(start.median_ms - start.baseline_ms, 2),
                 "socket": median_ms(lambda _: client._exchange(path, ping))}
        settings = self.settings(root)
        query = lambda number: QUERIES[number % len(QUERIES)]  # noqa: E731
        parts["parse"] = median_ms(lambda number: cli.search_command.make_context(
            "search.py", [query(number), "--memories", str(root)]))
        with Memories(settings) as memories:
            conn = memories.connection
            parts["index_lookup"] = median_ms(lambda _: find_index(conn, settings.memories_root, None))
            layout = layout_for(find_index(conn, settings.memories_root, None), settings.memories_root)
            embedder = LocalEmbedder()
            embedder.embed_query("warm up")
            parts["query_embedding"] = median_ms(lambda number: embedder.embed_query(query(number)))
            vectors = [embedder.embed_query(query(number)) for number in range(len(QUERIES))]
            parts["sql_semantic_leg"] = median_ms(
                lambda number: layout.semantic(conn, vectors[number % len(vectors)], Filters(), 30))
            if layout.has_keyword_leg:
                parts["sql_keyword_leg"] = median_ms(
                    lambda number: layout.keyword(conn, Counter(tokenize(query(number))), Filters(), 30))
            memories.search("warm up")
            parts["whole_search_in_process"] = median_ms(lambda number: memories.search(query(number)))
            hits = memories.search(QUERIES[0])
        parts["render"] = median_ms(lambda _: hits_markdown(hits, False))
        return parts

    def _stop_helper(self) -> None:
        from memory_search.faces import helper_processes

        helper_processes.stop()

    def recent(self, files: int) -> dict:
        root = self.workdir / "recent"
        generate(root, files, seed=5)
        result = {"files": files}
        recent = lambda python=None: lambda run: self.script("recent", "--kind", "all", root=root,  # noqa: E731
                                                            python=python)
        result["no_helper"] = self.timed(recent(), dict(self.env, MEMORIES_NO_DAEMON="1")).__dict__
        result["no_helper_system_python"] = self.timed(recent(self.python),
                                                       dict(self.env, MEMORIES_NO_DAEMON="1")).__dict__
        self._warm_helper(root, "recent", "--kind", "all")
        result["helper"] = self.timed(recent()).__dict__
        result["helper_system_python"] = self.timed(recent(self.python)).__dict__
        self._stop_helper()
        return result

    def freshness(self, files: int) -> dict:
        """A no-op index run over `files` files, then a one-file edit (real model for that file)."""
        root = self.workdir / "fresh"
        self.load(root, files, 1)
        noop = [self.runner.run(self.script("index", root=root), self.env)[0] for _ in range(3)]
        target = next(iter(sorted((root / "wiki").rglob("*.md"))))
        target.write_text(target.read_text(encoding="utf-8") + f"\nEdited at {time.time_ns()}.\n", encoding="utf-8")
        edit = self.runner.run(self.script("index", root=root), self.env)[0]
        return {"files": files, "noop_index_s": round(statistics.median(noop), 3), "one_file_edit_s": round(edit, 3)}

    def knowledge(self, chunks: int, files: int) -> dict:
        """export.py over `chunks` chunks (each format; time, chunks/s, peak memory), then stats.py --verify over
        `files` one-chunk files. Reuses the indexes the other parts loaded."""
        root = self.workdir / f"size{chunks}"
        if not root.exists():
            self.say(f"loading {chunks} chunks for export")
            self.load(root, chunks, 4)
        result: dict = {"export_chunks": chunks, "verify_files": files}
        for output_format in ("jsonl", "csv"):
            target = self.workdir / f"export.{output_format}"
            times, peaks = [], []
            for _ in range(3):
                elapsed, peak = self.runner.run(self.script("export", "--format", output_format, "--output",
                                                            str(target), "--include-superseded", root=root), self.env)
                times.append(elapsed)
                peaks.append(peak)
            timing = Timing.of(times, peaks)
            result[f"export_{output_format}"] = {**timing.__dict__, "bytes": target.stat().st_size,
                                                 "chunks_per_s": round(chunks / (timing.median_ms / 1000))}
            target.unlink()
        fresh = self.workdir / "fresh"
        if not fresh.exists():
            self.say(f"loading {files} files for verify")
            self.load(fresh, files, 1)
        times, peaks = [], []
        for _ in range(3):
            elapsed, peak = self.runner.run(self.script("stats", "--verify", root=fresh), self.env)
            times.append(elapsed)
            peaks.append(peak)
        result["verify"] = Timing.of(times, peaks).__dict__
        return result

    def close(self) -> None:
        import shutil

        from memory_search.storage.database import EmbeddedServer

        self._stop_helper()
        self.runner.close()
        EmbeddedServer(self.workdir / "data").stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
