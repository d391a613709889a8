"""serve.py as a client sees it: real HTTP requests against a running server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the faces extra is not installed (make install installs it)")

from conftest import ROOT, SCRIPTS, MemoriesDir, index, run_script  # noqa: E402

HNSW = "# Tuning the HNSW index\n\nWe raised ef_search from 40 to 100.\n\n## Result\n\nRecall went from 0.91 to 0.98.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory, base_env, database):
    """serve.py over two indexed dbs (default, and `team` from databases.json), one never indexed (--db), the
    doomed one's index by its prefix alone (as a team server with no memories of its own serves it), and a
    prefix no index has."""
    folder = tmp_path_factory.mktemp("http")
    main = MemoriesDir(folder / "memories")
    main.write("wiki/ops/backup.md", "# バックアップ運用\n\n毎晩 2 時に夜間バッチでデータベースのダンプを取る。\n",
               title="バックアップ運用")
    main.session("2026-11-02", "101500", "Tuning the HNSW index", HNSW)
    main.write("wiki/dev/commits-old.md", "# コミット規約 (旧版)\n\n件名は英語のみ。\n", status="superseded")
    team = MemoriesDir(folder / "team")
    team.write("wiki/release.md", "# Release\n\nThe code freeze is on November 20.\n", title="Release")
    unindexed = MemoriesDir(folder / "unindexed")
    unindexed.write("wiki/a.md", "# A\n")
    doomed = MemoriesDir(folder / "doomed")
    doomed.write("wiki/b.md", "# B\n\nThe code freeze moved.\n")
    for memories in (main, team, doomed):
        index(base_env, memories)
    config = folder / "config"
    (config / "memory-search").mkdir(parents=True)
    (config / "memory-search" / "databases.json").write_text(json.dumps({"databases": [
        {"db": "team", "memories_dir": str(team.root), "createAt": "2026-07-14T07:00:00Z"}]}))
    env = {**base_env, "MEMORIES_DIR": str(main.root), "XDG_CONFIG_HOME": str(config)}
    endpoint = config / "memory-search" / "endpoint"
    listed = json.loads(run_script("db", "indexes", "--json", env=base_env, check=True).stdout)
    prefix = next(entry["prefix"] for entry in listed if entry["memories_dir"] == str(doomed.root))
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "serve.py"), "--db", f"unindexed={unindexed.root}",
                                "--db", f"doomed={doomed.root}", "--db", f"remote=index:{prefix}",
                                "--db", "nowhere=index:memsearch_nowhere_0"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not endpoint.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"serve.py did not start: {process.communicate()[1]}")
        time.sleep(0.2)
    base = endpoint.read_text().strip()
    yield {"base": base, "main": main, "doomed": doomed, "process": process, "endpoint": endpoint}
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=30)


def get(server, path: str, method: str = "GET", **params):
    url = server["base"] + path + ("?" + urllib.parse.urlencode(params) if params else "")
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers.get("content-type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", ""), error.read().decode()


def get_json(server, path, **params):
    status, _, body = get(server, path, **params)
    return status, json.loads(body)


def test_binds_loopback_and_writes_its_url_to_the_endpoint_file(server):
    assert server["base"].startswith("http://127.0.0.1:")
    assert get(server, "/api/health") == (200, "text/plain; charset=utf-8", "OK")


def test_list_shows_loaded_and_registered_dbs(server):
    status, body = get_json(server, "/api/list")
    assert status == 200
    assert body["loaded"] == ["default", "team", "doomed", "remote"]  # unindexed, nowhere: registered, not loaded
    registered = {entry["db"]: entry["createAt"] for entry in body["registered"]}
    assert set(registered) == {"default", "team", "unindexed", "doomed", "remote", "nowhere"}
    assert registered["team"] == "2026-07-14T07:00:00Z"
    assert all(value.endswith("Z") for value in registered.values())


def test_search_runs_both_branches_grouped_by_source(server):
    status, body = get_json(server, "/api/search", db="default", q="HNSW ef_search recall")
    assert status == 200 and set(body) == {"keyword", "semantic"}
    session = str(next(server["main"].root.glob("raw/session/*/*.md")))
    for branch in ("keyword", "semantic"):
        sources = [group["source"] for group in body[branch]]
        assert sources[0] == session and len(sources) == len(set(sources))
        for group in body[branch]:
            assert Path(group["source"]).is_absolute() and set(group) == {"source", "matches"}
            for match in group["matches"]:
                assert set(match) == {"chunk", "content"} and isinstance(match["chunk"], int) and match["content"]
    assert any("ef_search" in match["content"] for match in body["keyword"][0]["matches"])


def test_an_index_served_by_its_prefix_answers_from_the_index_alone(server):
    status, body = get_json(server, "/api/search", db="remote", q="code freeze", target="keyword")
    assert status == 200
    assert [group["source"] for group in body["keyword"]] == [str(server["doomed"].root / "wiki/b.md")]


def test_status_rule_hides_superseded_records_as_search_py_does(server):
    status, body = get_json(server, "/api/search", db="default", q="コミット規約 件名", target="keyword")
    assert status == 200 and body == {"keyword": []}


def test_target_and_the_deprecated_routes_return_one_branch(server):
    assert set(get_json(server, "/api/search", db="team", q="code freeze", target="keyword")[1]) == {"keyword"}
    assert set(get_json(server, "/api/search", db="team", q="code freeze", target="semantic")[1]) == {"semantic"}
    status, keyword = get_json(server, "/api/keyword", db="team", q="code freeze")
    assert status == 200 and set(keyword) == {"keyword"}
    assert keyword["keyword"][0]["source"].endswith("/team/wiki/release.md")
    status, semantic = get_json(server, "/api/semantic", db="team", q="when is the code freeze")
    assert status == 200 and set(semantic) == {"semantic"}
    assert semantic["semantic"][0]["source"].endswith("/team/wiki/release.md")


def test_an_empty_branch_is_an_empty_list(server):
    status, body = get_json(server, "/api/search", db="team", q="zzqxv")
    assert status == 200 and body["keyword"] == [] and isinstance(body["semantic"], list)


def test_limit_counts_rows_and_falls_back_to_ten(server):
    def rows(**params):
        body = get_json(server, "/api/search", db="default", q="the index", target="semantic", **params)[1]
        return sum(len(group["matches"]) for group in body["semantic"])

    assert rows(limit="1") == 1
    assert rows(limit="2") == 2
    ten = rows(limit="10")
    assert ten >= 2  # every chunk of the active files (a short section is one chunk with the section it opens)
    for fallback in ("0", "-3", "abc", "101", "", "2.5"):
        assert rows(limit=fallback) == ten, fallback
    assert rows() == ten


@pytest.mark.parametrize("params, message", [
    ({"q": "x"}, "db is required"),
    ({"db": "", "q": "x"}, "db is required"),
    ({"db": "nope", "q": "x"}, '"nope" not exist'),
    ({"db": "unindexed", "q": "x"}, '"unindexed" not exist'),
    ({"db": "default"}, "q is required"),
    ({"db": "default", "q": "  "}, "q is required"),
])
def test_the_seed_error_rows(server, params, message):
    assert get_json(server, "/api/search", **params) == (400, {"error": message})


def test_a_query_postgresql_cannot_take_is_400(server):
    status, body = get_json(server, "/api/search", db="default", q="nul\x00byte")
    assert (status, body) == (400, {"error": "q holds a NUL character: remove it"})


def test_a_failing_search_is_500_with_one_line_and_no_partial_result(server, tmp_path):
    moved = tmp_path / "moved-away"
    shutil.move(str(server["doomed"].root), moved)
    try:
        status, body = get_json(server, "/api/search", db="doomed", q="code freeze")
    finally:
        shutil.move(str(moved), server["doomed"].root)
    assert status == 500 and set(body) == {"error"}
    assert "memories directory" in body["error"] and "\n" not in body["error"]
    assert "Traceback" not in body["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_no_route_accepts_writes(server, method):
    for path in ("/api/health", "/api/list", "/api/search", "/api/keyword", "/api/semantic"):
        status, content_type, body = get(server, path, method=method)
        assert status == 405 and json.loads(body) == {"error": "Method Not Allowed"}
    assert get(server, "/api/nothing")[0] == 404
    assert get(server, "/api/nothing", method="POST")[0] == 404


def test_concurrent_requests_get_the_same_answers_as_one_at_a_time(server):
    queries = ["HNSW recall", "夜間バッチ", "データベースのダンプ", "ef_search"]
    alone = {query: get_json(server, "/api/search", db="default", q=query) for query in queries}
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda n: (queries[n % 4], get_json(server, "/api/search", db="default",
                                                                     q=queries[n % 4])), range(64)))
    for query, answer in answers:
        assert answer == alone[query]


def test_load_report_has_no_errors(server):
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from faces_lib import measure

    report = measure(server["base"], clients=16, seconds=3)
    assert report["errors"] == 0 and report["requests"] > 0 and report["p95_ms"] >= report["p50_ms"]


def test_stopping_removes_the_endpoint_file(server):
    server["process"].send_signal(signal.SIGTERM)
    server["process"].wait(timeout=30)
    assert not server["endpoint"].exists()
    said = server["process"].stderr.read()
    assert "Traceback" not in said
    assert "db 'nowhere' not loaded: no index 'memsearch_nowhere_0' in this database: use one of" in said
