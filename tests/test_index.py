"""index.py: incremental by content, safe under concurrency and crashes, tolerant of bad files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from conftest import SCRIPTS, index, names, run_script, search

from memory_search.storage.schema import SCHEMA_VERSION, ManagedTables
from memory_search.storage.writer import lock_key
from memory_search.text.chunking import CHUNKER_VERSION


def _tables(memories):
    return ManagedTables.of(memories.root)


def _rows_per_file(database, memories) -> dict[str, tuple[int, int]]:
    """filename -> (chunks the files table promises, chunk rows present)."""
    tables = _tables(memories)
    with psycopg.connect(database) as conn:
        return {row[0]: (row[1], row[2]) for row in conn.execute(
            f"SELECT f.filename, f.chunk_count, count(c.id) FROM {tables.files} f "
            f"LEFT JOIN {tables.chunks} c USING (filename) GROUP BY 1, 2").fetchall()}


def _embedded_chunks(database, memories) -> int:
    with psycopg.connect(database) as conn:
        table = _tables(memories).chunks
        return conn.execute(f"SELECT count(*) FROM {table} WHERE embedding IS NOT NULL").fetchone()[0]


def test_add_edit_delete_rename_and_unchanged(env, memories, database):
    marker = memories.root.parent.name  # text new to the embedding cache
    memories.write("wiki/a.md", f"# Apples\n\nApples grow in the orchard. {marker}", title="Apples")
    memories.write("wiki/b.md", f"# Boats\n\nBoats sail on the lake. {marker}", title="Boats")
    first = index(env, memories)
    assert (first["total"], first["success"], first["embedded"], first["failed"]) == (2, 2, 2, 0)
    assert set(first) >= {"total", "success", "failed", "skipped", "deleted", "chunks", "duration_secs"}

    again = index(env, memories)
    assert (again["success"], again["skipped"], again["embedded"]) == (0, 2, 0)

    os.utime(memories.root / "wiki/a.md", ns=(time.time_ns(), time.time_ns() + 10**9))  # touched, same text
    touched = index(env, memories)
    assert (touched["success"], touched["skipped"], touched["embedded"]) == (0, 2, 0)

    memories.write("wiki/b.md", f"# Boats\n\nCanoes paddle across the river. {marker}", title="Boats")
    edited = index(env, memories)
    assert (edited["success"], edited["embedded"]) == (1, 1)
    assert names(search(env, memories, "canoes paddle river", "--mode", "keyword")) == ["b.md"]
    assert search(env, memories, "sail lake", "--mode", "keyword") == []

    (memories.root / "wiki/a.md").rename(memories.root / "wiki/apples.md")
    renamed = index(env, memories)
    assert (renamed["success"], renamed["deleted"], renamed["embedded"]) == (1, 1, 0)
    assert names(search(env, memories, "orchard apples"))[0] == "apples.md"

    (memories.root / "wiki/b.md").unlink()
    deleted = index(env, memories)
    assert deleted["deleted"] == 1
    assert set(_rows_per_file(database, memories)) == {str(memories.root / "wiki/apples.md")}


def test_rebuild_starts_over_but_reuses_cached_embeddings(env, memories):
    memories.write("wiki/a.md", "# Kites\n\nKites fly on windy days.", title="Kites")
    index(env, memories)
    rebuilt = index(env, memories, "--rebuild")
    assert (rebuilt["success"], rebuilt["embedded"], rebuilt["cached"]) == (1, 0, 1)


def test_another_model_is_refused(env, memories):
    memories.write("wiki/a.md", "# Owls\n\nOwls hunt at night.")
    index(env, memories)
    result = run_script("index", env=dict(env, MEMORIES_EMBEDDING_PROVIDER="voyage", VOYAGE_API_KEY="k"),
                        memories=memories)
    assert result.returncode == 1
    assert "multilingual-e5-small" in result.stderr and "voyage-3-large" in result.stderr
    assert "--rebuild" in result.stderr


def test_a_second_indexer_waits_or_exits(env, memories, database):
    memories.write("wiki/a.md", "# Lock\n\nOnly one writer at a time.")
    index(env, memories)
    key = lock_key(_tables(memories))
    with psycopg.connect(database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (key,))
        busy = run_script("index", "--no-wait", env=env, memories=memories)
        assert busy.returncode == 1 and "another indexer" in busy.stderr
        waiting = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--json", "--memories",
                                    str(memories.root)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        deadline = time.monotonic() + 120
        while not holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                                 ).fetchone()[0]:
            assert waiting.poll() is None and time.monotonic() < deadline  # it must queue for the lock
            time.sleep(0.1)
        holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
        out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0 and "waiting" in err
    assert json.loads(out)["skipped"] == 1


def _until_its_server_session_ends(database) -> None:
    """Wait until no other session works on the server: the killed client's ends once its last command has."""
    deadline = time.monotonic() + 30
    with psycopg.connect(database, autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                           "AND pid <> pg_backend_pid() AND state <> 'idle'").fetchone()[0]:
            assert time.monotonic() < deadline
            time.sleep(0.05)


@pytest.mark.crash
def test_a_killed_run_loses_nothing_and_the_next_run_completes(env, memories, database):
    marker = memories.root.parent.name
    for i in range(40):
        memories.write(f"wiki/note{i:02}.md", f"# Note {i}\n\nNote number {i} about topic {i * 7} {marker}.",
                       title=f"Note {i}")
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--memories", str(memories.root)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        try:
            if len(_rows_per_file(database, memories)) >= 5:
                break
        except psycopg.errors.UndefinedTable:
            pass
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    _until_its_server_session_ends(database)  # a COMMIT the run had sent still lands after the kill
    partial = _rows_per_file(database, memories)  # all 40 when the kill lands while embedding
    assert len(partial) > 0
    assert all(promised == present for promised, present in partial.values())  # no file half-written
    embedded_before = _embedded_chunks(database, memories)
    finished = index(env, memories)
    assert finished["success"] == 40 - len(partial) and finished["skipped"] == len(partial)
    assert finished["embedded"] <= 40 - embedded_before  # nothing embedded twice
    complete = _rows_per_file(database, memories)
    assert len(complete) == 40 and all(promised == present for promised, present in complete.values())
    assert _embedded_chunks(database, memories) == 40


def test_bad_files_are_skipped_with_their_reason(env, memories, tmp_path):
    memories.write("wiki/good.md", "# Good\n\nA perfectly fine note.")
    (memories.root / "wiki/yaml.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (memories.root / "wiki/latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (memories.root / "wiki/binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (memories.root / "wiki/empty.md").write_text("")
    with open(memories.root / "wiki/huge.md", "wb") as huge:
        huge.truncate(50 * 1024 * 1024)
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nNot part of the memories.")
    (memories.root / "wiki/escape.md").symlink_to(outside)
    (memories.root / "wiki/dangling.md").symlink_to(memories.root / "wiki/nothing-here.md")
    stats = index(env, memories)
    reasons = {failure["path"]: failure["reason"] for failure in stats["failures"]}
    assert stats["success"] == 1 and stats["failed"] == 7
    assert "invalid YAML" in reasons["wiki/yaml.md"]
    assert "UTF-8" in reasons["wiki/latin1.md"]
    assert "binary" in reasons["wiki/binary.md"]
    assert "empty" in reasons["wiki/empty.md"]
    assert "too large" in reasons["wiki/huge.md"]
    assert "symlink" in reasons["wiki/escape.md"]
    assert "unreadable" in reasons["wiki/dangling.md"]
    assert names(search(env, memories, "fine note")) == ["good.md"]


def test_default_and_given_exclusions(env, memories):
    for relpath in ("wiki/kept.md", "raw/web/2026-11-01/090000_page.md", "trashbox/2026-11-01/old.md",
                    "wiki/_draft.md", ".git/notes.md", "wiki/.hidden/secret.md", ".obsidian/x.md"):
        memories.write(relpath, "# Lighthouse\n\nThe lighthouse keeper's log.")
    stats = index(env, memories, "--exclude", "raw/web/**")
    assert stats["total"] == 1
    assert names(search(env, memories, "lighthouse keeper")) == ["kept.md"]
    only_web = run_script("index", "--dry-run", "--json", "--include", "raw/**", env=env, memories=memories,
                          check=True)
    plan = json.loads(only_web.stdout)
    assert plan["new"] == ["raw/web/2026-11-01/090000_page.md"] and plan["deleted"] == ["wiki/kept.md"]


def test_a_two_character_japanese_word_is_found_inside_a_longer_run(env, memories):
    memories.write("wiki/plan.md", "# 計画\n\n来期のサーバー配置計画を見直した。", title="計画")
    memories.write("wiki/other.md", "# 会議\n\n予算の会議をした。", title="会議")
    index(env, memories)
    assert names(search(env, memories, "配置", "--mode", "keyword")) == ["plan.md"]


def test_dry_run_lists_changes_and_writes_nothing(env, memories):
    memories.write("wiki/a.md", "# One\n\nfirst")
    index(env, memories)
    memories.write("wiki/b.md", "# Two\n\nsecond")
    memories.write("wiki/a.md", "# One\n\nfirst, edited")
    result = run_script("index", "--dry-run", env=env, memories=memories, check=True)
    assert "new\twiki/b.md" in result.stdout and "changed\twiki/a.md" in result.stdout
    assert "b.md" not in names(search(env, memories, "second", "--mode", "keyword"))


def test_stats_reports_contents_and_pending_changes(env, memories):
    memories.write("wiki/a.md", "# A\n\nalpha", title="A")
    memories.write("wiki/old.md", "# Old\n\nbeta", title="Old", status="superseded")
    memories.session("2026-11-01", "100000", "S", "gamma")
    index(env, memories)
    memories.write("wiki/new.md", "# New\n\ndelta")
    result = run_script("stats", "--json", env=env, memories=memories, check=True)
    status = json.loads(result.stdout)
    assert status["files"] == 3 and status["model"]["provider"] == "local"
    groups = {(group["kind"], group["status"]): group["files"] for group in status["by_kind_and_status"]}
    assert groups == {("wiki", "active"): 1, ("wiki", "superseded"): 1, ("session", "active"): 1}
    assert status["pending"]["new"] == 1 and status["last_indexed_at"]
    text = run_script("stats", env=env, memories=memories, check=True).stdout
    assert "3 files" in text and "1 new" in text


def test_stats_says_what_each_part_of_the_index_takes(env, memories):
    for number in range(6):
        memories.write(f"wiki/p{number}.md", f"# Page {number}\n\n" + " ".join(f"word{number}x{i}" for i in range(300)))
    index(env, memories)
    status = json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)
    parts = status["index_parts"]
    assert set(parts) == {"records", "vector_graphs", "keywords", "other"}
    assert sum(parts.values()) == status["index_bytes"]
    assert parts["keywords"] > 0 and parts["records"] > 0
    text = run_script("stats", env=env, memories=memories, check=True).stdout
    assert "KB a chunk (records " in text and "keywords " in text


def test_search_sessions_are_read_only(env, memories):
    from memory_search.config import Settings
    from memory_search.storage.database import connect

    with connect(Settings.from_env(), read_only=True) as conn:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("CREATE TABLE should_not_exist (id int)")


def test_watch_picks_up_a_new_file(env, memories):
    memories.write("wiki/a.md", "# Start\n\nThe watcher starts here.")
    watcher = subprocess.Popen([sys.executable, str(SCRIPTS / "index.py"), "--watch", "--json", "--memories",
                                str(memories.root)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        first = json.loads(_read_json_object(watcher.stdout))
        assert first["success"] == 1
        memories.write("wiki/b.md", "# Zeppelin\n\nThe zeppelin landed at dawn.")
        second = json.loads(_read_json_object(watcher.stdout))
        assert second["success"] == 1 and second["skipped"] == 1
        assert names(search(env, memories, "zeppelin", "--mode", "keyword")) == ["b.md"]
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)


def _read_json_object(stream) -> str:
    lines = []
    for line in stream:
        lines.append(line)
        if line.rstrip() == "}":
            return "".join(lines)
    raise AssertionError("the watcher stopped before printing its stats")


def test_a_bad_file_is_remembered_until_it_changes(env, memories):
    memories.write("wiki/good.md", "# Good\n\nA fine note.")
    broken = memories.root / "wiki/broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\nThe quokka smiles.\n")
    assert index(env, memories)["failed"] == 1
    again = index(env, memories)
    assert (again["failed"], again["skipped"]) == (0, 2)
    status = json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)
    assert status["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    assert [item["path"] for item in status["unreadable"]] == ["wiki/broken.md"]
    broken.write_text("---\ntitle: Quokka\n---\nThe quokka smiles.\n")
    assert index(env, memories)["success"] == 1
    assert names(search(env, memories, "quokka", "--mode", "keyword")) == ["broken.md"]


def test_a_selection_is_remembered_so_a_plain_run_changes_nothing(env, memories):
    for relpath in ("wiki/a.md", "wiki/deep/b.md", "raw/web/2026-11-01/090000_page.md"):
        memories.write(relpath, f"# Harbour\n\nThe harbour master's log, {relpath}.")
    first = index(env, memories, "--include", "wiki/*")  # * stays inside one folder
    assert first["total"] == 1 and names(search(env, memories, "harbour master")) == ["a.md"]
    plain = index(env, memories)
    assert plain["success"] == 0 and plain["deleted"] == 0 and plain["skipped"] == 1
    status = json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)
    assert status["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    wider = index(env, memories, "--include", "wiki/**")
    assert wider["success"] == 1 and wider["skipped"] == 1
    everything = index(env, memories, "--reset-selection")
    assert everything["success"] == 1 and everything["total"] == 3
    assert index(env, memories)["success"] == 0


def test_an_index_a_newer_memory_search_upgraded_is_left_alone_and_the_message_says_to_update(env, memories,
                                                                                                database):
    # A team's shared index, upgraded by a teammate's newer version: a rebuild by this one would undo it.
    memories.write("wiki/a.md", "# Tide\n\nTide tables for the bay.")
    index(env, memories)
    newer = str(int(SCHEMA_VERSION) + 1)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"UPDATE {_tables(memories).meta} SET value = %s WHERE key = 'schema_version'", (newer,))
    for script, arguments in (("search", ("tide",)), ("index", ())):
        refused = run_script(script, *arguments, env=env, memories=memories)
        assert refused.returncode == 1 and "newer memory-search" in refused.stderr, refused.stderr
        assert "--rebuild" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    with psycopg.connect(database) as conn:
        assert conn.execute(f"SELECT value FROM {_tables(memories).meta} WHERE key = 'schema_version'"
                            ).fetchone()[0] == newer


def test_search_refuses_an_index_of_another_tokenizer_version(env, memories, database):
    memories.write("wiki/a.md", "# Tide\n\nTide tables for the bay.")
    index(env, memories)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"UPDATE {_tables(memories).meta} SET value = '0' WHERE key = 'tokenizer_version'")
    refused = run_script("search", "tide", env=env, memories=memories)
    assert refused.returncode == 1 and "index.py --rebuild" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    index(env, memories, "--rebuild")
    assert names(search(env, memories, "tide tables")) == ["a.md"]


def test_an_index_of_an_earlier_chunker_is_searched_as_it_is_and_chunked_anew_by_the_next_run(env, memories,
                                                                                              database):
    talk = "\n".join(f"**{'Ann' if i % 2 else 'Bob'}**: about the tide table, turn {i} " + "word " * 30
                     for i in range(12))
    memories.write("raw/session/2025-05-01/100000_abcd1234_00000001.md", f"# Ann and Bob\n\n{talk}\n",
                   kind="session", title="Ann and Bob")
    memories.write("wiki/a.md", "# Tide\n\nTide tables for the bay.")
    index(env, memories)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"UPDATE {_tables(memories).meta} SET value = '1' WHERE key = 'chunker_version'")
    found = run_script("search", "tide tables", env=env, memories=memories)
    assert found.returncode == 0 and "a.md" in found.stdout and found.stderr == ""
    again = run_script("index", "--json", env=env, memories=memories)
    assert again.returncode == 0 and "chunked by an earlier version" in again.stderr
    with psycopg.connect(database, autocommit=True) as conn:
        version = conn.execute(f"SELECT value FROM {_tables(memories).meta} WHERE key = 'chunker_version'").fetchone()
    assert version == (CHUNKER_VERSION,)
    assert names(search(env, memories, "tide tables for the bay"))[0] == "a.md"
    assert index(env, memories)["success"] == 0  # chunked once


def test_a_file_postgresql_refuses_is_skipped_alone(env, memories, database):
    for i in range(6):  # one batch: the refused file is written alongside the others
        memories.write(f"wiki/note{i}.md", f"# Note {i}\n\nPlain note {i} about gardening.\n", title=f"Note {i}")
    index(env, memories)
    tables = _tables(memories)
    with psycopg.connect(database, autocommit=True) as conn:  # a rule of this server the files do not know
        conn.execute(f"ALTER TABLE {tables.chunks} ADD CONSTRAINT no_tomatoes CHECK (chunk_text NOT LIKE '%tomato%')")
    memories.write("wiki/note2.md", "# Note 2\n\nA note about tomato seedlings.\n", title="Note 2")
    for i in range(6, 10):
        memories.write(f"wiki/note{i}.md", f"# Note {i}\n\nPlain note {i} about compost.\n", title=f"Note {i}")
    stats = index(env, memories)
    assert stats["success"] == 4 and stats["failed"] == 1
    [failure] = stats["failures"]
    assert failure["path"] == "wiki/note2.md" and "refused by PostgreSQL" in failure["reason"]
    compost = names(search(env, memories, "compost", "--mode", "keyword"))
    assert sorted(compost) == [f"note{i}.md" for i in range(6, 10)]
    assert search(env, memories, "tomato", "--mode", "keyword") == []


def test_a_run_records_its_progress_in_the_index_for_other_readers_files_then_embeddings(env, memories):
    import memory_search

    for number in range(5):
        memories.write(f"wiki/note{number}.md", f"# Note {number}\n\nbody {number}", title=f"Note {number}")
    seen = []

    class Watcher:  # a terminal's progress bar, which looks at the index from another connection meanwhile
        def __init__(self):
            self.reader = memory_search.open(memories_dir=memories.root)

        def start(self, total, label=None, unit="files"):
            pass

        def advance(self, files, chunks):
            seen.append(self.reader.progress())

        def note(self, message):
            pass

        def finish(self):
            pass

    index(env, memories)  # the index exists; the second run is the one watched
    for number in range(5):
        memories.write(f"wiki/note{number}.md", f"# Note {number}\n\nchanged {number}", title=f"Note {number}")
    watcher = Watcher()
    with memory_search.open(memories_dir=memories.root) as library:
        library.index(progress=watcher)
        assert library.progress() == {"building": False, "progress": None,
                                      "last_indexed_at": library.status()["last_indexed_at"]}
        assert "progress" not in library.status() or library.status()["progress"] is None
    watcher.reader.close()
    assert all(state["building"] for state in seen)
    files = [state["progress"] for state in seen if state["progress"]["phase"] == "files"]
    embeddings = [state["progress"] for state in seen if state["progress"]["phase"] == "embeddings"]
    assert files and files[0]["files"]["total"] == 5 and files[0]["current"].startswith("wiki/note")
    assert embeddings and embeddings[0]["embeddings"]["total"] == 5 and embeddings[0]["files"]["total"] == 5


def test_stats_counts_chunks_waiting_for_their_embedding_and_names_the_stale_files(env, memories, database):
    memories.write("wiki/a.md", "# A\n\nalpha", title="A")
    memories.write("wiki/b.md", "# B\n\nbeta", title="B")
    index(env, memories)
    tables = ManagedTables.of(memories.root)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"UPDATE {tables.chunks} SET embedding = NULL WHERE filename LIKE %s", ("%/b.md",))
    memories.write("wiki/a.md", "# A\n\nalpha, changed", title="A")
    memories.write("wiki/c.md", "# C\n\ngamma", title="C")
    (memories.root / "wiki" / "b.md").unlink()
    status = json.loads(run_script("stats", "--json", env=env, memories=memories, check=True).stdout)
    assert (status["embedded"], status["waiting_for_embeddings"]) == (status["chunks"] - 1, 1)
    assert status["stale"] == {"new": ["wiki/c.md"], "changed": ["wiki/a.md"], "deleted": ["wiki/b.md"]}
    assert status["progress"] is None


def test_an_index_of_single_precision_vectors_is_searched_then_upgraded_in_place_with_every_record(env, memories,
                                                                                                  database):
    memories.write("wiki/a.md", "# Tide\n\nTide tables for the bay.", title="Tide")
    memories.write("wiki/b.md", "# Boats\n\nBoats sail on the lake.", title="Boats")
    index(env, memories)
    tables = _tables(memories)
    with psycopg.connect(database, autocommit=True) as conn:  # as schema 3 wrote it
        conn.execute(f"ALTER TABLE {tables.chunks} ALTER COLUMN embedding TYPE vector(384) "
                     "USING embedding::vector(384)")
        conn.execute(f"UPDATE {tables.meta} SET value = '3' WHERE key = 'schema_version'")
        conn.execute(f"DROP TABLE {tables.packed}, {tables.packed_dead}")
    assert names(search(env, memories, "tide tables", "--mode", "semantic"))[0] == "a.md"
    assert names(search(env, memories, "tide tables", "--mode", "keyword"))[0] == "a.md"
    again = index(env, memories)
    assert (again["success"], again["embedded"], again["failed"]) == (0, 0, 0)
    with psycopg.connect(database) as conn:
        column = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                              "to_regclass(%s) AND attname = 'embedding'", (tables.chunks,)).fetchone()[0]
        version = conn.execute(f"SELECT value FROM {tables.meta} WHERE key = 'schema_version'").fetchone()[0]
    assert (column, version) == ("halfvec(384)", SCHEMA_VERSION)
    assert _rows_per_file(database, memories) == {str(memories.root / "wiki/a.md"): (1, 1),
                                                  str(memories.root / "wiki/b.md"): (1, 1)}
    assert names(search(env, memories, "tide tables", "--mode", "semantic"))[0] == "a.md"
    assert names(search(env, memories, "boats sail on the lake"))[0] == "b.md"


def test_the_vector_index_is_built_with_memory_for_its_whole_graph_on_a_server_of_this_machine(database):
    from memory_search.storage.writer import hnsw_build_settings, hnsw_graph_bytes

    graph = hnsw_graph_bytes(1_000_000, "halfvec", 384)
    assert 1.2e9 < graph < hnsw_graph_bytes(1_000_000, "vector", 384) < 2.5e9
    with psycopg.connect(database) as conn:
        chosen = hnsw_build_settings(conn, 300 * 1048576)
    assert chosen["maintenance_work_mem"] == "375MB"
    assert int(chosen["max_parallel_maintenance_workers"]) == min(max((os.cpu_count() or 1) - 1, 0), 7)


def test_stats_names_what_a_configured_server_elsewhere_lacks_for_a_large_index(env, memories, database,
                                                                                monkeypatch):
    from memory_search.indexing import status

    memories.write("wiki/a.md", "# Tide\n\nTide tables for the bay.")
    index(env, memories)
    assert json.loads(run_script("stats", "--json", env=env, memories=memories).stdout)["server"] == []
    monkeypatch.setattr(status, "server_on_this_machine", lambda conn: False)  # its memory is not ours to size
    with psycopg.connect(database) as conn:
        notes = status.server_shortfalls(_tables(memories).on(conn), 1_000_000, 384, configured=True)
        assert status.server_shortfalls(_tables(memories).on(conn), 1_000_000, 384, configured=False) == []
    (short,) = [note for note in notes if note.startswith("maintenance_work_mem is")]
    assert "1,000,000 chunks" in short and "set maintenance_work_mem to 1,787 MB on the server" in short


def test_progress_is_reported_off_a_terminal_only_when_asked(env, memories):
    memories.write("wiki/a.md", "# A\n\nAlpha notes.\n", title="A")
    memories.write("wiki/b.md", "# B\n\nBeta notes.\n", title="B")
    quiet = run_script("index", env=env, memories=memories, check=True)
    assert "indexing:" not in quiet.stderr and "\r" not in quiet.stderr
    memories.write("wiki/c.md", "# C\n\nGamma notes.\n", title="C")
    shown = run_script("index", "--progress", "--rebuild", env=env, memories=memories, check=True)
    lines = shown.stderr.splitlines()
    assert any(line.startswith("indexing: 3/3 files") for line in lines), shown.stderr
    assert any(line.startswith("embedding: ") and " chunks, " in line for line in lines), shown.stderr
    assert "\r" not in shown.stderr and "\033" not in shown.stderr
