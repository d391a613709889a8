"""Trust it with years of memories: hostile files, hostile input, crashes and concurrency.

Every test here asserts the same promises: no traceback, one line on stderr with a documented exit code,
no file lost, no stale or wrong result, and an index whose tables agree with each other."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from adversarial import write_corpus
from conftest import SCRIPTS, index, run_process, run_script, search
from psycopg import sql

from memory_search.storage.schema import ManagedTables


def assert_clean_failure(result: subprocess.CompletedProcess, codes=(0, 2, 3)) -> None:
    """A documented exit code, and on failure exactly one line on stderr, never a traceback."""
    assert result.returncode in codes, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and "error: unexpected" not in result.stderr, result.stderr
    if result.returncode not in (0, 4):  # 4: index.py lists what it skipped, in its report
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def check_consistency(database: str, root: Path) -> dict:
    """The managed tables agree: meta counts, document frequencies, postings and files."""
    import psycopg

    tables = ManagedTables.of(root)
    with psycopg.connect(database, autocommit=True) as conn:
        def one(query, *args):
            return conn.execute(sql.SQL(query).format(**{name: tables.sql(name) for name in
                                                          ("chunks", "files", "postings", "terms", "meta")}),
                                args).fetchone()[0]

        facts = {
            "chunks": one("SELECT count(*) FROM {chunks}"),
            "meta_chunks": int(one("SELECT value FROM {meta} WHERE key = 'chunks'")),
            "meta_terms": int(one("SELECT value FROM {meta} WHERE key = 'total_terms'")),
            "terms": one("SELECT coalesce(sum(term_count), 0) FROM {chunks}"),
            "orphan_postings": one("SELECT count(*) FROM {postings} p LEFT JOIN {chunks} c ON c.id = p.chunk_id "
                                   "WHERE c.id IS NULL"),
            "wrong_df": one("SELECT count(*) FROM (SELECT term, count(*) AS n FROM {postings} GROUP BY term) p "
                            "FULL JOIN (SELECT * FROM {terms} WHERE df > 0) t USING (term) "
                            "WHERE p.n IS DISTINCT FROM t.df"),
            "duplicate_chunks": one("SELECT count(*) FROM (SELECT filename, chunk_index FROM {chunks} "
                                    "GROUP BY 1, 2 HAVING count(*) > 1) d"),
            "chunkless_files": one("SELECT count(*) FROM {files} f WHERE f.error IS NULL AND NOT EXISTS "
                                   "(SELECT 1 FROM {chunks} c WHERE c.filename = f.filename)"),
            "files": one("SELECT count(*) FROM {files} WHERE error IS NULL"),
        }
    assert facts["chunks"] == facts["meta_chunks"], facts
    assert facts["terms"] == facts["meta_terms"], facts
    assert facts["orphan_postings"] == 0 and facts["wrong_df"] == 0, facts
    assert facts["duplicate_chunks"] == 0 and facts["chunkless_files"] == 0, facts
    return facts


# --- hostile files ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_every_hostile_file_is_indexed_or_skipped_with_its_reason(env, memories, database):
    cases = write_corpus(memories.root)
    started = time.monotonic()
    result = run_script("index", "--json", env=env, memories=memories)
    assert_clean_failure(result, codes=(4,))
    stats = json.loads(result.stdout)
    reasons = {failure["path"]: failure["reason"] for failure in stats["failures"]}
    for case in cases:
        if case.expect == "skipped":
            assert case.relpath in reasons, (case.relpath, sorted(reasons))
            assert case.reason.lower() in reasons[case.relpath].lower(), (case.relpath, reasons[case.relpath])
        else:
            assert case.relpath not in reasons, (case.relpath, reasons.get(case.relpath))
    assert time.monotonic() - started < 300

    for case in cases:
        hits = search(env, memories, case.word, "--mode", "keyword", "--include-superseded") if case.word else []
        paths = {hit["path"] for hit in hits}
        if case.expect == "indexed":
            assert str(memories.root / case.relpath) in paths, case.relpath
        elif case.expect == "ignored":
            assert not paths, case.relpath
        elif case.expect == "link":
            assert str(memories.root / case.relpath) not in paths and len(paths) == 1, (case.relpath, paths)

    again = run_script("index", "--json", env=env, memories=memories)
    assert_clean_failure(again, codes=(4,))
    rerun = json.loads(again.stdout)
    assert rerun["success"] == 0 and rerun["deleted"] == 0  # nothing changed, nothing redone
    status = json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)
    assert status["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    check_consistency(database, memories.root)


def test_search_output_stays_small_whatever_the_frontmatter(env, memories):
    write_corpus(memories.root)
    index(env, memories)
    result = run_script("search", "quokka", "--format", "json", "--top", "100", "--include-superseded", env=env,
                        memories=memories, check=True)
    assert len(result.stdout) < 2_000_000
    hits = json.loads(result.stdout)
    by_name = {Path(hit["path"]).name: hit for hit in hits}
    assert by_name["inf.md"]["frontmatter"]["weight"] == "inf"
    local_day = dt.datetime.fromisoformat("2026-11-30T23:30:00-08:00").astimezone().date().isoformat()
    assert by_name["tz.md"]["date"] == local_day  # converted to the local time zone, not cut at 10 characters
    assert by_name["only-frontmatter.md"]["title"] == "Quokkatitle only"


def test_recent_lists_every_readable_record_and_never_hangs(env, memories):
    write_corpus(memories.root)
    memories.write("raw/session/2026-11-03/090000_deep0000_deep0000.md", "body",
                   title="deep", nested=json.loads("[" * 200 + "]" * 200))
    result = run_process("recent", "--kind", "all", "--format", "json", env=env, memories=memories, timeout=30)
    assert_clean_failure(result)
    titles = [record["title"] for record in json.loads(result.stdout)]
    assert titles == ["Good session"]  # the FIFO left out, and the deep one, which index.py skips too
    huge = run_process("recent", "--days", "999999999", env=env, memories=memories, timeout=30)
    assert_clean_failure(huge)
    assert "Good session" in huge.stdout


# --- hostile input -----------------------------------------------------------------------------------

BAD_ARGUMENTS = [
    ["search", ""], ["search", "   "], ["search", "x", "--top", "0"], ["search", "x", "--top", "101"],
    ["search", "x", "--top", "ten"], ["search", "x", "--scope", "everything"], ["search", "x", "--mode", "fuzzy"],
    ["search", "x", "--format", "xml"], ["search", "x", "--since", "the 32nd"],
    ["search", "x", "--until", "2026-02-30"],
    ["search", "x", "--where", "{"], ["search", "x", "--where", "[]"], ["search", "x", "--where", "{}"],
    ["search", "x", "--where", '{"a": {}}'], ["search", "x", "--where", '{"$or": [{"a": 1}]}'],
    ["search", "x", "--where", '{"a": {"$regex": "x"}}'], ["search", "x", "--where", '{"a": {"$in": "x"}}'],
    ["search", "x", "--where", '{"a": {"$gt": [1]}}'], ["search", "x", "--where", '{"a": NaN}'],
    ["search", "x", "--where", '{"a": null}'], ["search", "x", "--min-score", "nan"],
    ["search", "x", "--min-score", "inf"], ["search", "x", "--min-score", "high"],
    ["search", "x", "--memories", ""],
    ["search", "x", "--table", "bad name"], ["search", "x", "--table", "x; DROP TABLE y"],
    ["search", "x", "--table", "no_such_table"], ["search", "x", "--nope"], ["search"],
    ["search", "x", "--memories", "/nonexistent/memories"], ["search", "a" * 100_000], ["search", "🙂" * 5000],
    ["search", "'; DROP TABLE x; --"], ["search", "%s %(x)s {}"],
    ["recent", "--kind", "wiki"], ["recent", "--top", "0"], ["recent", "--days", "-1"], ["recent", "--days", "x"],
    ["recent", "--memories", ""], ["recent", "--memories", "/nonexistent"], ["recent", "--format", "csv"],
    ["index", "--memories", "/nonexistent"], ["index", "--nope"], ["stats", "--memories", "/nonexistent"],
    ["db", "restart"], ["eval", "/nonexistent", "--split", "x"],
]


@pytest.mark.slow  # a fresh process per argument
def test_bad_arguments_get_one_line_and_a_documented_exit_code(env, memories):
    memories.write("wiki/a.md", "# A\n\nSome text about x.", title="A")
    index(env, memories)
    surrogate = os.fsdecode(b"caf\xe9")  # a non-UTF-8 argument as the shell passes it
    for arguments in BAD_ARGUMENTS + [["search", surrogate], ["search", "x", "--where", surrogate]]:
        command = [sys.executable, str(SCRIPTS / f"{arguments[0]}.py"), *arguments[1:]]
        if "--memories" not in arguments and arguments[0] != "db":
            command += ["--memories", str(memories.root)]
        result = subprocess.run([os.fsencode(part) for part in command], capture_output=True, env=env, timeout=120)
        stderr = result.stderr.decode("utf-8", "replace")
        completed = subprocess.CompletedProcess(arguments, result.returncode, "", stderr)
        assert_clean_failure(completed, codes=(0, 1, 2, 3) if arguments[0] == "db" else (0, 2, 3))


def test_nul_characters_are_usage_errors_in_the_library_too(env, memories):
    """The shell cannot pass a NUL; MCP, HTTP and Python callers can."""
    import memory_search
    from memory_search.errors import UsageError
    from memory_search.search.filters import Filters, parse_where

    memories.write("wiki/a.md", "# A\n\ntext", title="A")
    with memory_search.open(memories_dir=str(memories.root)) as library:
        library.index()
        for call in (lambda: library.search("x\x00y"), lambda: library.search("x", filters=Filters(project="a\x00")),
                     lambda: parse_where('{"a": "b\\u0000"}'), lambda: library.search("caf\udce9")):
            with pytest.raises(UsageError):
                call()


def test_secrets_never_reach_the_screen(env, memories, tmp_path):
    memories.write("wiki/a.md", "# A\n\ntext", title="A")
    for url in ("postgresql://user:hunter2secret@127.0.0.1:1/db",
                "host=127.0.0.1 port=1 user=u password=hunter2secret dbname=x",
                "postgresql://u@127.0.0.1:1/db?password=hunter2secret"):
        result = run_script("search", "x", env=dict(env, MEMORIES_DATABASE_URL=url), memories=memories)
        assert_clean_failure(result, codes=(1,))
        assert "hunter2secret" not in result.stderr and "cannot connect" in result.stderr
    home = tmp_path / "home"
    (home / ".config/cocoindex").mkdir(parents=True)
    (home / ".config/cocoindex/.env").write_text('export VOYAGE_API_KEY="pa-hunter2key" # a note\n')
    local = dict(env, HOME=str(home), MEMORIES_EMBEDDING_PROVIDER="voyage", MEMORIES_VOYAGE_BASE_URL="http://127.0.0.1:9")
    result = run_script("index", env=local, memories=memories)
    assert_clean_failure(result, codes=(1,))
    assert "pa-hunter2key" not in result.stderr and "cannot reach Voyage" in result.stderr


# --- crashes -------------------------------------------------------------------------------------------

def _notes(memories, count: int, salt: str) -> None:
    for number in range(count):
        memories.write(f"wiki/topic-{number:03d}.md", "".join(
            f"## Part {part}\n\nNote {number} part {part} about subject{number} and {salt} details.\n\n"
            for part in range(3)), title=f"Topic {number}")


def _kill_during(command: list[str], env: dict, delay: float) -> int:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    return process.wait()


@pytest.mark.crash
@pytest.mark.parametrize("phase", ["first build", "incremental", "rebuild"])
def test_kill_9_at_random_moments_loses_nothing(env, memories, database, phase, rng):
    _notes(memories, 40, salt=f"{phase} {rng.randrange(10**9)}")  # new text each run: no cached embeddings
    command = [sys.executable, str(SCRIPTS / "index.py"), "--memories", str(memories.root)]
    if phase != "first build":
        index(env, memories)
        for number in range(0, 40, 3):  # edit a third of the notes, delete a few
            memories.write(f"wiki/topic-{number:03d}.md", f"# Edited {number}\n\nchanged text {number} {phase}",
                           title=f"Topic {number}")
        for number in (1, 2):
            (memories.root / f"wiki/topic-{number:03d}.md").unlink()
    if phase == "rebuild":
        command.append("--rebuild")
    kills = 0
    for _ in range(4):
        _kill_during(command, env, rng.uniform(0.5, 4.0))
        kills += 1
        if _index_exists(database, memories.root):
            check_consistency(database, memories.root)
    final = index(env, memories)
    assert final["failed"] == 0
    facts = check_consistency(database, memories.root)
    on_disk = len(list((memories.root / "wiki").glob("*.md")))
    assert facts["files"] == on_disk
    assert index(env, memories)["success"] == 0  # the next plain run changes nothing
    for number in (0, 3, 5):
        edited = phase != "first build" and number % 3 == 0
        word = f"changed text {number}" if edited else f"subject{number}"
        assert f"topic-{number:03d}.md" in [Path(hit["path"]).name for hit in search(
            env, memories, word, "--mode", "keyword")], (phase, number)


def _index_exists(database: str, root: Path) -> bool:
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (ManagedTables.of(root).meta,)).fetchone()[0]


@pytest.mark.crash
def test_a_database_stopped_mid_run_is_one_line_and_the_next_run_finishes(env, memories, tmp_path):
    from memory_search.storage.database import EmbeddedServer

    server = EmbeddedServer(tmp_path / "own-server")
    server.start()
    own = dict(env, MEMORIES_DATA_DIR=str(tmp_path / "own-server"))
    try:
        _notes(memories, 30, salt=f"stopped {tmp_path.name}")
        process = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--memories", str(memories.root)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=own, text=True)
        time.sleep(3)
        server.stop()
        stdout, stderr = process.communicate(timeout=120)
        completed = subprocess.CompletedProcess([], process.returncode, stdout, stderr)
        if process.returncode != 0:  # it may have finished before the stop
            assert_clean_failure(completed, codes=(1,))
            assert "PostgreSQL" in stderr and ("index.py" in stderr or "db.py" in stderr), stderr
        server.start()
        final = index(own, memories)
        assert final["failed"] == 0
        assert index(own, memories)["success"] == 0
        assert search(own, memories, "subject7", "--mode", "keyword")
    finally:
        server.stop()


# --- concurrency ---------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("during", ["indexing", "rebuild"])
def test_searches_during_indexing_never_fail_or_miss(env, memories, during):
    memories.write("wiki/anchor.md", "# Anchor\n\nThe zebrafinch anchor note stays findable.", title="Anchor")
    index(env, memories)
    _notes(memories, 30, salt=f"{during} {memories.root.parent.name}")
    arguments = ["--rebuild"] if during == "rebuild" else []
    if during == "rebuild":
        index(env, memories)
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), *arguments, "--memories",
                                str(memories.root)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    errors, misses, runs = [], [], 0

    def searcher():
        nonlocal runs
        while process.poll() is None:
            result = run_script("search", "zebrafinch", "--format", "json", env=env, memories=memories)
            runs += 1
            if result.returncode != 0:
                errors.append(result.stderr)
            elif "anchor.md" not in result.stdout:
                misses.append(result.stdout)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert process.wait() == 0, process.stderr.read()
    assert runs >= 3 and errors == [] and misses == []
