"""What real machines do to the memories and to what we write: a folder that cannot be listed, a file that cannot
be read, a memories folder that goes away, a full disk, the database restarted between or during searches.
Nothing indexed is lost, one line says what happened, and the exit code is the documented one.

Faults are made for real where the machine allows: a root process without CAP_DAC_OVERRIDE (setpriv) meets a
chmod 000 folder as any other user does, a small tmpfs fills up, the embedded server is stopped and started.
What cannot be made on demand (an I/O error, a stale network mount) is raised by the system call itself,
patched in this process."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import psycopg
import pytest
from conftest import ROOT, SCRIPTS, index, names, run_script, search, shared_resources

import memory_search
from memory_search.storage.schema import ManagedTables


def _indexed(database: str, memories) -> dict[str, int]:
    """relpath -> chunks the index holds, for every file it lists."""
    tables = ManagedTables.of(memories.root)
    with psycopg.connect(database, autocommit=True) as conn:
        return dict(conn.execute(f"SELECT f.relpath, count(c.id) FROM {tables.files} f LEFT JOIN {tables.chunks} c "
                                 "USING (filename) GROUP BY 1").fetchall())


def _one_clean_line(result, code: int) -> str:
    assert result.returncode == code, (result.returncode, (result.stdout or "")[-2000:], result.stderr)
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def _failures(result) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in json.loads(result.stdout)["failures"]}


@pytest.fixture
def notes(env, memories):
    """Three indexed memories: two wiki pages and a session summary."""
    marker = memories.root.parent.name  # text new to the embedding cache
    memories.write("wiki/apples.md", f"# Apples\n\nThe quokka eats apples in the orchard. {marker}", title="Apples")
    memories.write("wiki/boats.md", f"# Boats\n\nBoats sail on the lake at dawn. {marker}", title="Boats")
    memories.session("2026-11-05", "091130", "Standup", f"# Standup\n\nWe planned the lighthouse release. {marker}")
    index(env, memories)
    return memories


# --- injecting faults -----------------------------------------------------------------------------------

def _refuse_listing(monkeypatch, folder: Path, code: int) -> None:
    """Listing `folder` fails with OSError(code), as on a failing disk or a dropped network mount."""
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(os.fspath(path)) == str(folder):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.fixture
def unprivileged(env, database, tmp_path):
    """run(script, *args, memories=...) runs a script as a process that permissions keep out as they keep out any
    user: root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (setpriv); any other user as itself."""
    prefix, process_env = [], dict(env)
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("setpriv is missing: a root process cannot be kept out of a folder")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
        # The embedded server's socket lies in its data folder, which only its system user may enter: the
        # process reaches it through a link in a folder of its own.
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(database).query)
        host, port = query["host"][0], query.get("port", ["5432"])[0]
        sockets = tmp_path / "sockets"
        sockets.mkdir()
        os.link(Path(host) / f".s.PGSQL.{port}", sockets / f".s.PGSQL.{port}")
        process_env["MEMORIES_DATABASE_URL"] = f"postgresql://postgres@/postgres?host={sockets}&port={port}"
        closed = tmp_path / "closed"
        closed.mkdir(mode=0)
        if subprocess.run([*prefix, "ls", str(closed)], capture_output=True).returncode == 0:
            pytest.skip("setpriv could not drop CAP_DAC_OVERRIDE here: root still reads every folder")

    def run(script: str, *args: str, memories=None, environ=None) -> subprocess.CompletedProcess:
        command = [*prefix, sys.executable, str(SCRIPTS / f"{script}.py") if "/" not in script else script, *args]
        if memories is not None:
            command += ["--memories", str(memories.root)]
        return subprocess.run(command, capture_output=True, text=True, env={**process_env, **(environ or {})},
                              timeout=300, cwd=ROOT)

    return run


@pytest.fixture
def closed(request):
    """closed(path) takes every permission off a folder or file until the test ends."""
    opened = []

    def close(path: Path) -> Path:
        opened.append((path, path.stat().st_mode & 0o7777))
        path.chmod(0)
        return path

    yield close
    for path, mode in reversed(opened):
        if path.exists():
            path.chmod(mode)


# --- unlistable is not deleted --------------------------------------------------------------------------

def test_a_folder_that_cannot_be_listed_keeps_its_memories_in_the_index(env, notes, database, unprivileged, closed):
    closed(notes.root / "wiki")
    result = unprivileged("index", "--json", memories=notes)
    assert result.returncode == 4, result.stderr
    stats, reasons = json.loads(result.stdout), _failures(result)
    assert stats["deleted"] == 0 and stats["unreachable"] == 2
    assert "cannot be listed (Permission denied)" in reasons["wiki"]
    for page in ("wiki/apples.md", "wiki/boats.md"):
        assert "Permission denied" in reasons[page] and "kept in the index" in reasons[page]
    status = json.loads(unprivileged("stats", "--json", memories=notes).stdout)
    assert status["pending"]["deleted"] == 0 and status["files"] == 3
    assert {"wiki", "wiki/apples.md", "wiki/boats.md"} <= {item["path"] for item in status["unreadable"]}
    text = unprivileged("index", memories=notes)
    assert text.returncode == 4 and "skipped wiki/apples.md: its folder wiki cannot be listed" in text.stderr
    assert "Traceback" not in text.stderr

    assert names(search(env, notes, "quokka", "--mode", "keyword")) == ["apples.md"]
    (notes.root / "wiki").chmod(0o755)
    again = index(env, notes)
    assert (again["failed"], again["success"], again["deleted"], again["embedded"]) == (0, 0, 0, 0)


@pytest.mark.parametrize("code", [errno.EIO, errno.ESTALE], ids=["EIO", "ESTALE"])
def test_a_folder_that_fails_to_list_keeps_its_memories_in_the_index(env, notes, database, monkeypatch, code):
    _refuse_listing(monkeypatch, notes.root / "wiki", code)
    dry = run_script("index", "--dry-run", "--json", env=env, memories=notes)
    report = json.loads(dry.stdout)
    assert report["deleted"] == [] and {item["path"] for item in report["kept"]} == {"wiki/apples.md",
                                                                                      "wiki/boats.md"}
    result = run_script("index", "--json", env=env, memories=notes)
    assert result.returncode == 4 and json.loads(result.stdout)["deleted"] == 0
    assert os.strerror(code) in _failures(result)["wiki/boats.md"]
    assert set(_indexed(database, notes)) == {"wiki/apples.md", "wiki/boats.md",
                                              "raw/session/2026-11-05/" + _session_name(notes)}
    assert all(chunks for chunks in _indexed(database, notes).values())


def _session_name(memories) -> str:
    return next((memories.root / "raw/session/2026-11-05").iterdir()).name


def test_recent_says_which_date_folder_it_could_not_read_and_lists_the_rest(env, notes, unprivileged, closed):
    notes.session("2026-11-07", "080000", "Retro", "# Retro\n\nThe lighthouse shipped.")
    closed(notes.root / "raw/session/2026-11-07")
    result = unprivileged("recent", "--format", "paths", memories=notes)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert [Path(line).parent.name for line in result.stdout.splitlines()] == ["2026-11-05"]
    assert "could not read raw/session/2026-11-07 (Permission denied)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("code", [errno.EIO, errno.EACCES], ids=["EIO", "EACCES"])
def test_recent_tells_a_kind_folder_that_fails_to_list_from_one_that_is_not_there(notes, monkeypatch, code):
    _refuse_listing(monkeypatch, notes.root / "raw" / "session", code)
    told = []
    with memory_search.open(memories_dir=str(notes.root), warn=told.append) as opened:
        assert opened.recent(kind="all") == []
    assert told == [f"could not read raw/session ({os.strerror(code)}): the records there are not listed; check "
                    "the folder's permissions, or that its disk is mounted"]
    told.clear()
    with memory_search.open(memories_dir=str(notes.root), warn=told.append) as opened:
        assert opened.recent(kind="web") == [] and told == []  # no web page kept yet: nothing to tell


def test_a_memories_folder_that_cannot_be_listed_leaves_the_index_untouched(env, notes, database, unprivileged,
                                                                          closed):
    before = _indexed(database, notes)
    closed(notes.root)
    for script in ("index", "stats"):
        message = _one_clean_line(unprivileged(script, memories=notes), 3)
        assert f"the memories directory {notes.root} cannot be read (Permission denied)" in message
    assert "the index keeps every memory it holds" in unprivileged("index", memories=notes).stderr
    assert _indexed(database, notes) == before


def test_a_memories_folder_that_fails_to_list_leaves_the_index_untouched(env, notes, database, monkeypatch):
    before = _indexed(database, notes)
    _refuse_listing(monkeypatch, notes.root, errno.EIO)
    message = _one_clean_line(run_script("index", env=env, memories=notes), 3)
    assert "cannot be read (Input/output error)" in message
    assert _indexed(database, notes) == before


def test_a_missing_memories_folder_leaves_the_index_untouched(env, notes, database):
    before = _indexed(database, notes)
    notes.root.rename(notes.root.parent / "elsewhere")
    try:
        message = _one_clean_line(run_script("index", env=env, memories=notes), 3)
        assert "not found" in message
    finally:
        (notes.root.parent / "elsewhere").rename(notes.root)
    assert _indexed(database, notes) == before
    assert index(env, notes)["deleted"] == 0


@pytest.mark.parametrize("when", ["listing", "reading"])
def test_a_memories_folder_that_vanishes_mid_run_leaves_the_index_untouched(env, notes, database, monkeypatch, when):
    """As when a disk is unmounted under a running indexer: whatever it had not looked at yet is not gone."""
    notes.write("wiki/boats.md", "# Boats\n\nCanoes cross the river.", title="Boats")  # changed: read again
    before = _indexed(database, notes)
    away = notes.root.parent / "unmounted"
    real_scandir, real_open = os.scandir, os.open

    def vanish():
        if notes.root.exists():
            notes.root.rename(away)

    def scandir(path="."):
        if when == "listing" and os.path.abspath(os.fspath(path)) != str(notes.root):
            vanish()
        return real_scandir(path)

    def open_(path, *args, **kwargs):
        if when == "reading" and str(path).startswith(str(notes.root) + "/"):
            vanish()
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
    try:
        result = run_script("index", env=env, memories=notes)
    finally:
        monkeypatch.undo()
        if away.exists():
            away.rename(notes.root)
    message = _one_clean_line(result, 3)
    assert "not found" in message and "the index keeps every memory it holds" in message
    assert _indexed(database, notes) == before
    assert names(search(env, notes, "sail lake dawn", "--mode", "keyword")) == ["boats.md"]


def test_what_is_gone_for_real_leaves_the_index(env, notes, database):
    (notes.root / "wiki/boats.md").unlink()
    shutil.rmtree(notes.root / "raw")
    stats = index(env, notes)
    assert (stats["deleted"], stats["failed"], stats["unreachable"]) == (2, 0, 0)
    assert set(_indexed(database, notes)) == {"wiki/apples.md"}


def test_a_file_that_cannot_be_looked_at_keeps_its_rows(env, notes, database, monkeypatch):
    real = os.scandir
    wiki = str(notes.root / "wiki")

    class Failing:
        """A directory entry whose stat fails, as on a disk with a bad sector."""

        def __init__(self, entry):
            self._entry, self.name, self.path = entry, entry.name, entry.path

        def __getattr__(self, name):
            return getattr(self._entry, name)

        def stat(self, *args, **kwargs):
            raise OSError(errno.EIO, os.strerror(errno.EIO), self.path)

    def scandir(path="."):
        entries = real(path)
        if os.path.abspath(os.fspath(path)) != wiki:
            return entries
        return [Failing(entry) if entry.name == "boats.md" else entry for entry in entries]

    monkeypatch.setattr(os, "scandir", scandir)
    result = run_script("index", "--json", env=env, memories=notes)
    assert result.returncode == 4 and "Input/output error" in _failures(result)["wiki/boats.md"]
    assert json.loads(result.stdout)["deleted"] == 0 and _indexed(database, notes)["wiki/boats.md"] == 1


def test_a_file_that_cannot_be_read_keeps_what_the_index_holds_and_is_read_once_it_can_be(env, notes, database,
                                                                                          unprivileged, closed):
    notes.write("wiki/apples.md", "# Apples\n\nThe wombat digs under the orchard.", title="Apples")
    notes.write("wiki/new.md", "# New\n\nThe narwhal surfaces.", title="New")
    closed(notes.root / "wiki/apples.md")
    closed(notes.root / "wiki/new.md")
    result = unprivileged("index", "--json", memories=notes)
    assert result.returncode == 4, result.stderr
    reasons = _failures(result)
    assert "Permission denied" in reasons["wiki/apples.md"] and "kept in the index" in reasons["wiki/apples.md"]
    assert "Permission denied" in reasons["wiki/new.md"] and "once it can be read" in reasons["wiki/new.md"]
    assert names(search(env, notes, "quokka", "--mode", "keyword")) == ["apples.md"]  # what it held stays

    for page in ("apples.md", "new.md"):  # permissions back, the files untouched since
        (notes.root / "wiki" / page).chmod(0o644)
    stats = index(env, notes)
    assert (stats["success"], stats["failed"]) == (2, 0)
    assert names(search(env, notes, "wombat", "--mode", "keyword")) == ["apples.md"]
    assert names(search(env, notes, "narwhal", "--mode", "keyword")) == ["new.md"]


def test_a_file_that_fails_to_read_keeps_what_the_index_holds(env, notes, database, monkeypatch):
    notes.write("wiki/boats.md", "# Boats\n\nCanoes cross the river.", title="Boats")
    real = os.open
    target = str(notes.root / "wiki/boats.md")

    def open_(path, *args, **kwargs):
        if os.fspath(path) == target:
            raise OSError(errno.EIO, os.strerror(errno.EIO), target)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    result = run_script("index", "--json", env=env, memories=notes)
    monkeypatch.undo()
    assert result.returncode == 4 and "Input/output error" in _failures(result)["wiki/boats.md"]
    assert names(search(env, notes, "sail lake dawn", "--mode", "keyword")) == ["boats.md"]
    assert index(env, notes)["success"] == 1
    assert names(search(env, notes, "canoes river", "--mode", "keyword")) == ["boats.md"]


def test_a_rebuild_never_swaps_in_an_index_that_lacks_what_it_could_not_reach(env, notes, database, monkeypatch):
    before = _indexed(database, notes)
    _refuse_listing(monkeypatch, notes.root / "wiki", errno.EIO)
    message = _one_clean_line(run_script("index", "--rebuild", env=env, memories=notes), 1)
    assert "cannot rebuild the index now" in message and "wiki/apples.md" in message
    assert _indexed(database, notes) == before
    with psycopg.connect(database, autocommit=True) as conn:
        leftover = ManagedTables(ManagedTables.of(notes.root).prefix + "_next").files
        assert conn.execute("SELECT to_regclass(%s)", (leftover,)).fetchone()[0] is None


def test_watch_keeps_what_it_cannot_reach_and_waits_for_a_folder_that_went_away(env, notes, database, monkeypatch):
    from memory_search.indexing.indexer import watch

    settings = memory_search.Settings.from_env().with_overrides(memories_dir=str(notes.root))
    wiki, away = notes.root / "wiki", notes.root.parent / "unmounted"
    runs, problems = [], []
    steps = [
        lambda: _refuse_listing(monkeypatch, wiki, errno.EIO),  # wiki out of reach
        lambda: notes.root.rename(away),  # the whole folder gone (an unmounted disk)
        lambda: away.rename(notes.root),  # back
        lambda: monkeypatch.undo(),  # wiki readable again
    ]
    seen = []

    def next_step():
        """Each time the watcher looked (a run or a problem), the next fault or repair."""
        if len(seen) < len(steps):
            steps[len(seen)]()
        seen.append(True)

    def on_run(stats):
        runs.append(stats)
        next_step()

    def on_problem(message):
        problems.append(message)
        next_step()

    thread = threading.Thread(target=watch, args=(settings,), kwargs=dict(
        interval=0.05, settle=0.05, on_run=on_run, on_problem=on_problem,
        should_stop=lambda: len(seen) > len(steps)), daemon=True)
    thread.start()
    thread.join(120)
    monkeypatch.undo()
    if away.exists():
        away.rename(notes.root)
    assert not thread.is_alive(), (runs, problems)
    first, unreachable, back, whole = runs
    assert unreachable.deleted == 0 and unreachable.unreachable == 2
    assert len(problems) == 1 and "not found" in problems[0] and "keeps every memory" in problems[0]
    assert back.deleted == 0 and whole.failed == 0
    assert set(_indexed(database, notes)) == {"wiki/apples.md", "wiki/boats.md",
                                              "raw/session/2026-11-05/" + _session_name(notes)}


def test_the_plugins_catch_up_run_keeps_what_it_cannot_reach(env, notes, database, unprivileged, closed):
    """What the SessionStart and SessionEnd hooks start in the background: environment.py prepare --index DIR."""
    closed(notes.root / "wiki")
    result = unprivileged(str(ROOT / "src/memory_search/faces/environment.py"), "prepare", "--index", str(notes.root))
    assert result.returncode == 4, result.stderr
    assert "skipped wiki/apples.md: its folder wiki cannot be listed" in result.stderr
    assert set(_indexed(database, notes)) >= {"wiki/apples.md", "wiki/boats.md"}
    assert all(_indexed(database, notes).values())


# --- status ---------------------------------------------------------------------------------------------

def test_status_counts_the_chunks_waiting_for_embeddings(env, notes, database):
    from memory_search.faces.mcp_server import Tools

    with psycopg.connect(database, autocommit=True) as conn:  # what a run stopped between its two phases leaves
        conn.execute(f"UPDATE {ManagedTables.of(notes.root).chunks} SET embedding = NULL "
                     "WHERE filename LIKE %s", (str(notes.root / "wiki") + "/%",))
    status = json.loads(run_script("stats", "--json", env=env, memories=notes, check=True).stdout)
    assert status["waiting_for_embeddings"] == 2 and status["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    text = run_script("stats", env=env, memories=notes, check=True).stdout
    assert "up to date" not in text and "2 chunk(s) wait for their embeddings" in text
    settings = memory_search.Settings.from_env().with_overrides(memories_dir=str(notes.root))
    assert Tools(settings, shared_resources()).call("index_status", {})["waiting_for_embeddings"] == 2

    index(env, notes)
    status = json.loads(run_script("stats", "--json", env=env, memories=notes, check=True).stdout)
    assert status["waiting_for_embeddings"] == 0
    assert "; up to date" in run_script("stats", env=env, memories=notes, check=True).stdout


# --- export ---------------------------------------------------------------------------------------------

def test_export_takes_include_superseded_as_search_does(env, notes):
    notes.write("wiki/old.md", "# Old\n\nThe old way.", title="Old", status="superseded")
    index(env, notes)
    complete = run_script("export", env=env, memories=notes, check=True).stdout
    flagged = run_script("export", "--include-superseded", env=env, memories=notes, check=True).stdout
    assert flagged == complete and '"status": "superseded"' in flagged
    help_text = run_script("export", "--help", env=env, check=True).stdout
    assert "--include-superseded" in help_text and "exported by default" in help_text
    both = run_script("export", "--include-superseded", "--active-only", env=env, memories=notes)
    assert "contradict" in _one_clean_line(both, 2)


# --- writing on a full disk, and failing writes ---------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """mount(size) -> a folder on a tmpfs of that size: a disk that fills up (root only)."""
    mounted = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        folder = tmp_path / f"disk-{len(mounted)}"
        folder.mkdir()
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
                                capture_output=True, text=True)
        if result.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(disk: Path, leave: int = 0) -> None:
    """Fill the disk up to `leave` bytes."""
    free = shutil.disk_usage(disk).free - leave
    if free > 0:
        with open(disk / "ballast", "wb") as ballast:
            ballast.write(b"\0" * free)


def test_an_export_to_a_full_disk_leaves_the_old_file_and_nothing_else(env, notes, small_disk):
    disk = small_disk("256k")
    target = disk / "chunks.jsonl"
    target.write_text("the previous export\n")
    _fill(disk, leave=4096)
    result = run_script("export", "--with-vectors", "--output", str(target), env=env, memories=notes)
    assert "No space left on device" in _one_clean_line(result, 1)
    assert target.read_text() == "the previous export\n"
    assert sorted(path.name for path in disk.iterdir()) == ["ballast", "chunks.jsonl"]


def test_an_export_whose_file_cannot_be_put_in_place_leaves_nothing_behind(env, notes, tmp_path, monkeypatch):
    target = tmp_path / "out" / "chunks.jsonl"
    target.parent.mkdir()

    def replace(source, destination):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(destination))

    monkeypatch.setattr(os, "replace", replace)
    result = run_script("export", "--output", str(target), env=env, memories=notes)
    monkeypatch.undo()
    assert "Input/output error" in _one_clean_line(result, 1)
    assert list(target.parent.iterdir()) == []


def test_writing_where_permission_is_refused_is_one_line_and_loses_nothing(env, notes, tmp_path, unprivileged,
                                                                          closed):
    target = tmp_path / "exports" / "chunks.jsonl"
    target.parent.mkdir()
    target.write_text("the previous export\n")
    closed(target.parent)
    result = unprivileged("export", "--output", str(target), memories=notes)
    assert "Permission denied" in _one_clean_line(result, 1)
    target.parent.chmod(0o755)
    assert target.read_text() == "the previous export\n" and list(target.parent.iterdir()) == [target]

    state = tmp_path / "state"
    (state / "memory-search").mkdir(parents=True, mode=0o700)
    closed(state / "memory-search")
    result = unprivileged("search", "quokka", "--mode", "keyword", "--format", "json", memories=notes,
                          environ={"MEMORIES_SEARCH_LOG": "1", "XDG_STATE_HOME": str(state)})
    assert result.returncode == 0 and names(json.loads(result.stdout)) == ["apples.md"]
    assert result.stderr.count("\n") == 1 and "cannot write the search log" in result.stderr
    assert "Permission denied" in result.stderr


def test_an_export_to_standard_output_on_a_full_disk_is_one_line(env, notes, small_disk):
    disk = small_disk("64k")
    with open(disk / "chunks.jsonl", "w") as output:
        _fill(disk, leave=4096)
        result = subprocess.run([sys.executable, str(SCRIPTS / "export.py"), "--with-vectors", "--memories",
                                 str(notes.root)], stdout=output, stderr=subprocess.PIPE, text=True, env=env,
                                timeout=120)
    assert "No space left on device" in _one_clean_line(result, 1)


@pytest.mark.parametrize("fault", ["full disk", "EIO"])
def test_the_search_log_holds_whole_lines_only_when_it_cannot_be_written(env, notes, small_disk, monkeypatch, fault):
    logged = {**env, "MEMORIES_SEARCH_LOG": "1"}
    if fault == "full disk":
        state = small_disk("64k")
        logged["XDG_STATE_HOME"] = str(state)
        search(logged, notes, "quokka")  # the log exists, with one whole line
        log = state / "memory-search" / "searches.jsonl"
        _fill(state, leave=0)
        with open(log, "ab") as handle:  # the log's last page all but full: the next line does not fit
            page = os.fstat(handle.fileno()).st_blocks * 512 or 4096
            room = page - log.stat().st_size
            handle.write(b"x" * max(0, room - 40) + b"\n")
    else:
        logged["XDG_STATE_HOME"] = str(notes.root.parent / "state")
        search(logged, notes, "quokka")
        log = notes.root.parent / "state" / "memory-search" / "searches.jsonl"
        real = os.write

        def write(descriptor, data):
            if os.path.realpath(f"/proc/self/fd/{descriptor}") == str(log):
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real(descriptor, data)

        monkeypatch.setattr(os, "write", write)
    before = log.read_bytes()
    result = run_script("search", "lighthouse release", "--format", "json", env=logged, memories=notes)
    monkeypatch.undo()
    assert result.returncode == 0 and json.loads(result.stdout)
    assert result.stderr.count("\n") == 1 and "cannot write the search log" in result.stderr
    assert log.read_bytes() == before  # no torn line for the next entry to be glued to


@pytest.mark.crash
def test_indexing_on_a_full_database_disk_keeps_what_was_indexed(env, memories, small_disk):
    from memory_search.storage.database import EmbeddedServer

    disk = small_disk("48m")
    server = EmbeddedServer(disk / "data")
    own = {**env, "MEMORIES_DATA_DIR": str(disk / "data")}
    try:
        server.start()
        marker = memories.root.parent.name
        memories.write("wiki/first.md", f"# First\n\nThe axolotl note. {marker}", title="First")
        index(own, memories)
        for number in range(20):  # more rows than the tables' pages have room for
            memories.write(f"wiki/note-{number:02d}.md", f"# Note {number}\n\n{marker} " + " ".join(
                f"term{number}x{word}" for word in range(30)), title=f"Note {number}")
        _fill(disk)
        result = run_script("index", env=own, memories=memories)
        message = _one_clean_line(result, 1)
        assert "disk is full" in message and "No space left on device" in message, message
        assert "every file written so far is kept" in message
        assert names(search(own, memories, "axolotl", "--mode", "keyword")) == ["first.md"]
        (disk / "ballast").unlink()
        stats = index(own, memories)
        assert stats["failed"] == 0 and stats["success"] + stats["skipped"] == 21
        assert names(search(own, memories, "term7x3", "--mode", "keyword")) == ["note-07.md"]
    finally:
        server.stop()


# --- the database restarted -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def own_server(tmp_path_factory, database):
    """An embedded server of these tests' own, to stop and start at will."""
    from memory_search.storage.database import EmbeddedServer

    server = EmbeddedServer(tmp_path_factory.mktemp("own-server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def restartable(env, memories, own_server):
    """(environment, memories) indexed in the own server, which runs."""
    own_server.start()
    own = {**env, "MEMORIES_DATA_DIR": str(own_server.data_dir)}
    memories.write("wiki/kiln.md", f"# Kiln\n\nThe kiln fires at dawn. {memories.root.parent.name}", title="Kiln")
    index(own, memories)
    return own, memories


def test_a_search_after_the_database_restarted_reconnects(restartable, own_server):
    own, memories = restartable
    assert names(search(own, memories, "kiln")) == ["kiln.md"]  # its connection now waits in the shared pool
    own_server.stop()
    own_server.start()
    assert names(search(own, memories, "kiln")) == ["kiln.md"]

    settings = memory_search.Settings.from_env(own).with_overrides(memories_dir=str(memories.root))
    with memory_search.open(settings) as library:  # one long-lived Memories
        assert names([{"path": hit.path} for hit in library.search("kiln")]) == ["kiln.md"]
        own_server.stop()
        own_server.start()
        assert names([{"path": hit.path} for hit in library.search("kiln")]) == ["kiln.md"]
        assert library.status()["files"] == 1


def test_a_knowledge_base_searched_after_the_database_restarted_reconnects(env, own_server):
    """The LangBot engine's searches share a process-wide pool: a connection from before a restart is replaced."""
    from memory_search.config import Settings
    from memory_search.knowledge_base import Document, KnowledgeBase

    own_server.start()
    kb = KnowledgeBase(Settings.from_env({**env, "MEMORIES_DATA_DIR": str(own_server.data_dir)}), "restarted")
    kb.create()
    try:
        kb.ingest(Document("kiln", "kiln.md", "# Kiln\n\nThe kiln fires at dawn.\n"))
        assert [hit.record.path for hit in kb.search("kiln", mode="keyword")] == ["kiln"]  # pooled now
        own_server.stop()
        own_server.start()
        assert [hit.record.path for hit in kb.search("kiln", mode="keyword")] == ["kiln"]
    finally:
        kb.drop()


@pytest.mark.parametrize("database_given", [False, True], ids=["embedded", "url"])
def test_a_database_stopped_during_a_search(restartable, own_server, monkeypatch, database_given):
    """The embedded server starts again on demand, so the search answers; a server at a URL is not ours to start:
    one line says so, exit 1."""
    from memory_search.search import retrieval

    own, memories = restartable
    if database_given:
        own = {**own, "MEMORIES_DATABASE_URL": own_server.running_url()}
    assert names(search(own, memories, "kiln")) == ["kiln.md"]  # the pool holds a live connection
    real = retrieval.Searcher.search
    stopped = []

    def search_once_stopped(self, *args, **kwargs):
        if not stopped:
            stopped.append(own_server.stop())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(retrieval.Searcher, "search", search_once_stopped)
    try:
        result = run_script("search", "kiln", "--format", "json", env=own, memories=memories)
    finally:
        monkeypatch.undo()
        own_server.start()
    assert stopped == [True]
    if database_given:
        message = _one_clean_line(result, 1)
        assert "PostgreSQL" in message
    else:
        assert result.returncode == 0, result.stderr
        assert names(json.loads(result.stdout)) == ["kiln.md"]
    assert names(search(own, memories, "kiln")) == ["kiln.md"]
