"""search.py as a user sees it: ranking, scope, status, dedupe, formats, filters and failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import index, names, run_script, search

import memory_search

BACKUP = """# バックアップ運用

毎晩 2 時に夜間バッチでデータベースのダンプを取り、オブジェクトストレージへ送る。
復元手順は月に一度リハーサルする。保存期間は 30 日。
"""
HNSW = """# Tuning the HNSW index

We raised ef_search from 40 to 100 and rebuilt the index with m = 16 and ef_construction = 64.
Recall on our evaluation queries went from 0.91 to 0.98 while latency stayed under 10 ms.
"""
COMMITS = """# コミット規約

Conventional Commits に従う。件名は日本語でもよい。feat: fix: docs: を使い分ける。
"""
RELEASE = """# Release planning v1.2

The code freeze is on November 20. The release manager publishes the notes on Friday.
"""


@pytest.fixture
def sample(memories):
    memories.write("wiki/ops/backup.md", BACKUP, title="バックアップ運用", tags=["ops", "backup"])
    memories.session("2026-11-02", "101500", "Tuning the HNSW index", HNSW, project="search", tags=["pgvector"])
    memories.write("wiki/dev/commits.md", COMMITS, title="コミット規約", status="active", tags=["git"])
    memories.write("wiki/dev/commits-old.md", COMMITS.replace("日本語でもよい", "英語のみ"),
                   title="コミット規約 (旧版)", status="superseded", tags=["git"])
    memories.write("raw/minutes/2026-10-10/140000_release.md", RELEASE, kind="minutes", title="Release planning v1.2")
    memories.write("raw/web/2026-10-02/084500_reader.md",
                   "# Jina Reader\n\nPrefix any URL with r.jina.ai to get Markdown.\n",
                   kind="web", title="Jina Reader API", status="deprecated")
    return memories


def test_japanese_and_english_queries_find_the_right_record(env, sample):
    index(env, sample)
    assert names(search(env, sample, "データベースのバックアップはいつ取る?"))[0] == "backup.md"
    assert names(search(env, sample, "how did we tune the vector index recall"))[0].startswith("101500_")


def test_markdown_output_has_the_seed_shape(env, sample):
    index(env, sample)
    result = run_script("search", "夜間バッチ", "--top", "1", env=env, memories=sample, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("### 1. バックアップ運用  _(score: ")
    assert lines[1] == f"- **path**: `{sample.root / 'wiki/ops/backup.md'}`"
    assert lines[2] == "- **status**: active  **tags**: ops, backup"
    assert lines[3].startswith("- **snippet**: ") and "夜間バッチ" in lines[3]
    assert len(lines[3]) <= len("- **snippet**: ") + 200


def test_json_output_is_pure_json_with_the_seed_keys(env, sample):
    index(env, sample)
    result = run_script("search", "release", "--format", "json", env=env, memories=sample, check=True)
    hits = json.loads(result.stdout)
    assert hits, result.stderr
    for key in ("score", "path", "snippet", "frontmatter", "start_line", "end_line", "kind", "date"):
        assert key in hits[0]
    top = next(hit for hit in hits if hit["path"].endswith("140000_release.md"))
    assert top["kind"] == "minutes" and top["date"] == "2026-10-10"
    assert top["frontmatter"]["title"] == "Release planning v1.2"


def test_no_hits_prints_the_seed_text_and_exits_zero(env, sample):
    index(env, sample)
    markdown = run_script("search", "x", "--scope", "web", env=env, memories=sample)  # the only web page is deprecated
    assert markdown.returncode == 0 and markdown.stdout.strip() == "検索結果なし"
    as_json = run_script("search", "x", "--scope", "web", "--format", "json", env=env, memories=sample)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


@pytest.mark.parametrize("scope, expected", [
    ("wiki", {"backup.md", "commits.md"}),
    ("minutes", {"140000_release.md"}),
    ("session", None),  # checked below: the one session file
])
def test_scope_keeps_only_that_part_of_the_directory(env, sample, scope, expected):
    index(env, sample)
    found = set(names(search(env, sample, "release backup index commits", "--scope", scope)))
    if expected is None:
        assert len(found) == 1 and next(iter(found)).startswith("101500_")
    else:
        assert found == expected


def test_superseded_and_deprecated_are_hidden_unless_asked(env, sample):
    index(env, sample)
    default = names(search(env, sample, "コミット規約 件名"))
    assert "commits.md" in default and "commits-old.md" not in default
    everything = search(env, sample, "コミット規約 件名", "--include-superseded")
    statuses = {Path(hit["path"]).name: hit["status"] for hit in everything}
    assert statuses["commits-old.md"] == "superseded"
    assert statuses["backup.md"] == "active"  # no status in its frontmatter: active
    web = names(search(env, sample, "jina reader", "--scope", "web", "--include-superseded"))
    assert web == ["084500_reader.md"]


def test_one_best_chunk_per_file_unless_no_dedupe(env, memories):
    sections = "\n\n".join(f"## Part {i}\n\n" + f"Section {i} about the deploy pipeline and its caches. " * 8
                           for i in range(6))
    memories.write("wiki/long.md", "# Deploy pipeline\n\n" + sections, title="Deploy pipeline")
    memories.write("wiki/short.md", "# Lunch\n\nThe team lunch is on Friday.", title="Lunch")
    index(env, memories)
    deduped = search(env, memories, "deploy pipeline caches")
    assert names(deduped).count("long.md") == 1
    every_chunk = search(env, memories, "deploy pipeline caches", "--no-dedupe", "--top", "20")
    assert names(every_chunk).count("long.md") >= 3
    lines = {(hit["start_line"], hit["end_line"]) for hit in every_chunk if hit["path"].endswith("long.md")}
    assert len(lines) == names(every_chunk).count("long.md")


def test_top_counts_files_after_dedupe(env, memories):
    for i in range(5):
        memories.write(f"wiki/page{i}.md", "\n\n".join(f"## S{j}\n\n" + "Garden notes about tomatoes. " * 3
                                                       for j in range(3)), title=f"Garden {i}")
    index(env, memories)
    hits = search(env, memories, "tomatoes in the garden", "--top", "3")
    assert len(hits) == 3 and len(set(names(hits))) == 3


def test_a_deleted_file_is_never_returned(env, sample):
    index(env, sample)
    (sample.root / "wiki/ops/backup.md").unlink()
    assert "backup.md" not in names(search(env, sample, "夜間バッチ バックアップ"))


def test_keyword_mode_finds_exact_identifiers(env, memories):
    memories.write("wiki/a.md", "# Error\n\nThe upsert failed with ERR_PGVECTOR_DIM_MISMATCH after the model change.")
    memories.write("wiki/b.md", "# Errors in general\n\nDatabase errors and dimension problems happen.")
    index(env, memories)
    hits = search(env, memories, "ERR_PGVECTOR_DIM_MISMATCH", "--mode", "keyword")
    assert names(hits) == ["a.md"]
    explained = search(env, memories, "ERR_PGVECTOR_DIM_MISMATCH", "--explain")
    assert names(explained)[0] == "a.md"
    assert explained[0]["explain"]["keyword"]["rank"] == 1 and "semantic" in explained[0]["explain"]


def test_filters_project_tag_dates_and_where(env, memories):
    memories.session("2026-10-01", "090000", "Old agents work", "Refactored the agent loop.", project="agents",
                     tags=["loop"], duration_minutes=30)
    memories.session("2026-11-01", "090000", "New agents work", "Refactored the agent loop again.", project="agents",
                     tags=["loop", "refactor"], duration_minutes=90)
    memories.session("2026-11-02", "090000", "Webapp work", "Refactored the login form.", project="webapp",
                     tags=["refactor"], duration_minutes=45)
    index(env, memories)
    titles = lambda hits: sorted(hit["title"] for hit in hits)  # noqa: E731
    assert titles(search(env, memories, "refactor", "--project", "agents")) == ["New agents work", "Old agents work"]
    assert titles(search(env, memories, "refactor", "--tag", "loop", "--tag", "refactor")) == ["New agents work"]
    assert titles(search(env, memories, "refactor", "--since", "2026-11-01")) == ["New agents work", "Webapp work"]
    assert titles(search(env, memories, "refactor", "--until", "2026-10-31")) == ["Old agents work"]
    assert titles(search(env, memories, "refactor", "--since", "2026-11-02", "--mode", "semantic")) == ["Webapp work"]
    assert titles(search(env, memories, "refactor", "--where", '{"duration_minutes": {"$gte": 45}}')) == \
        ["New agents work", "Webapp work"]
    assert titles(search(env, memories, "refactor", "--where", '{"project": {"$nin": ["agents"]}}')) == ["Webapp work"]
    assert titles(search(env, memories, "refactor", "--where", '{"tags": "loop", "project": {"$ne": "webapp"}}')) == \
        ["New agents work", "Old agents work"]
    active_webapp = '{"status": "active", "project": {"$in": ["webapp"]}}'
    assert titles(search(env, memories, "refactor", "--where", active_webapp)) == ["Webapp work"]


@pytest.mark.slow  # a hundred files: one percent is the point
def test_a_filter_matching_one_percent_of_files_still_fills_the_list(env, memories):
    for i in range(100):
        project = "rare" if i == 37 else "common"
        memories.session("2026-11-01", f"{i:06d}", f"Note {i}", f"Daily standup note number {i}.", project=project)
    index(env, memories)
    hits = search(env, memories, "standup note", "--project", "rare", "--top", "5")
    assert [hit["title"] for hit in hits] == ["Note 37"]


def test_min_score_drops_weak_hits(env, sample):
    index(env, sample)
    everything = search(env, sample, "バックアップ", "--mode", "semantic")
    cut = everything[0]["score"] - 1e-6
    assert len(search(env, sample, "バックアップ", "--mode", "semantic", "--min-score", str(cut))) == 1


@pytest.mark.parametrize("args, message", [
    (["   "], "query is empty"),
    (["x", "--top", "0"], "--top"),
    (["x", "--top", "101"], "--top"),
    (["x", "--scope", "docs"], "--scope"),
    (["x", "--format", "xml"], "--format"),
    (["x", "--where", "{bad json"], "--where"),
    (["x", "--where", '{"a": {"$regex": "b"}}'], "$regex"),
    (["x", "--since", "the 32nd"], "--since"),
])
def test_bad_input_is_one_line_and_exit_two(env, sample, args, message):
    result = run_script("search", *args, env=env, memories=sample)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_missing_memories_directory_exits_three(env, tmp_path):
    result = run_script("search", "x", "--memories", str(tmp_path / "nowhere"), env=env)
    assert result.returncode == 3 and "MEMORIES_DIR" in result.stderr


def test_missing_index_exits_three_and_says_how_to_build_it(env, memories):
    memories.write("wiki/a.md", "hello")
    result = run_script("search", "hello", env=env, memories=memories)
    assert result.returncode == 3 and "index.py" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_database_down_names_the_url_and_exits_one(env, sample):
    down = dict(env, MEMORIES_DATABASE_URL="postgresql://postgres:secret@127.0.0.1:9/postgres")
    result = run_script("search", "x", env=down, memories=sample)
    assert result.returncode == 1
    assert "127.0.0.1" in result.stderr and "secret" not in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_model_mismatch_names_both_models(env, sample):
    index(env, sample)
    other = dict(env, MEMORIES_EMBEDDING_PROVIDER="voyage", VOYAGE_API_KEY="k")
    result = run_script("search", "x", env=other, memories=sample)
    assert result.returncode == 1
    assert "multilingual-e5-small" in result.stderr and "voyage-3-large" in result.stderr


def test_search_never_writes(env, sample):
    index(env, sample)
    before = {path: path.stat().st_mtime_ns for path in sample.root.rglob("*")}
    search(env, sample, "バックアップ")
    assert {path: path.stat().st_mtime_ns for path in sample.root.rglob("*")} == before


def test_a_file_edited_after_indexing_is_flagged_stale(env, sample):
    index(env, sample)
    assert search(env, sample, "夜間バッチ")[0]["stale"] is False
    backup = sample.root / "wiki/ops/backup.md"
    backup.write_text(backup.read_text(encoding="utf-8") + "\n追記: 保存期間を 60 日に延ばした。\n", encoding="utf-8")
    hit = search(env, sample, "夜間バッチ")[0]
    assert hit["path"] == str(backup) and hit["stale"] is True
    markdown = run_script("search", "夜間バッチ", "--top", "1", env=env, memories=sample, check=True).stdout
    assert "changed after it was indexed" in markdown


def test_marks_are_the_words_of_a_text_the_query_matches_as_the_keyword_search_does():
    from memory_search.search.snippets import marks

    def marked(text, query):
        return [text[start:end] for start, end in marks(text, query)]

    assert marked("We raised ef_search while tuning the HNSW index.", "tune hnsw indexes") == [
        "tuning", "HNSW", "index"]
    assert marked("毎晩 2 時に夜間バッチでデータベースのダンプを取る。", "データベースのダンプ") == [
        "データベース", "ダンプ"]
    assert marked("ＨＮＳＷ and hnsw", "HNSW") == ["ＨＮＳＷ", "hnsw"]
    assert marks("nothing here", "") == [] and marks("", "query") == []


def test_marks_leave_out_the_words_of_a_questions_grammar():
    """方, なる, する, what, about: words every question has, marked they only add noise to a snippet."""
    from memory_search.search.snippets import marks

    def marked(text, query):
        return [text[start:end] for start, end in marks(text, query)]

    assert marked("埋め込みモデルの選び方は、なるべく速い方にすることになる。", "埋め込みモデルの選び方はどうなる") == [
        "埋め込みモデル", "選び"]
    assert marked("What we decided about the embedding model", "what did we decide about the embedding model") == [
        "decided", "embedding", "model"]
    assert marked("It is what it is", "what is it") == []


def test_a_snippet_for_the_page_shows_text_not_markdown():
    from memory_search.search.snippets import plain

    assert plain("**User**: see [the hub](hub.md), [[wiki/topic|Topic]] and ![[embedded]] with `pg_dump` "
                 "and *care*; ~~old~~ | a | b | |---|---| end **cut") == (
        "User: see the hub, Topic and embedded with pg_dump and care; old a b end cut")
    assert plain("2 * 3 * 4 and __init__ and snake_case") == "2 * 3 * 4 and __init__ and snake_case"


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_a_pasted_page_as_query_finds_its_topic_and_explain_says_what_was_read(env, sample, mode):
    index(env, sample)
    filler = " ".join(f"aside{number}" for number in range(400))
    english = ("We tune the HNSW index: ef_search, m and ef_construction decide recall and latency. " * 3
               + filler)[:2000]
    japanese = ("夜間バッチでデータベースのダンプを取り、"
                "オブジェクトストレージへ送るバックアップの運用について。" * 60)[:2000]
    for query, expected in ((english, "Tuning the HNSW index"), (japanese, "バックアップ運用")):
        result = run_script("search", query, "--mode", mode, "--explain", "--format", "json", env=env,
                            memories=sample, check=True)
        hits = json.loads(result.stdout)
        assert hits[0]["title"] == expected
        read = hits[0]["explain"].get("read", {})
        if mode != "keyword":  # the model reads the leading part
            assert read["meaning"]["of"] == 2000 and 0 < read["meaning"]["characters"] < 2000
        if mode != "semantic" and query is english:  # the keyword leg, the rarest terms the index holds
            assert len(read["keywords"]["terms"]) <= 32 < read["keywords"]["of"]
    shown = run_script("search", english, "--mode", mode, "--explain", env=env, memories=sample, check=True).stdout
    assert "; read " in shown


def _chat(topics: list[str]) -> str:
    """A dated chat between Ann and Bob, one turn per line, each turn about one of `topics` at length."""
    filler = "and we talked it over at length, the way friends do when there is time "
    return "# Ann and Bob, 3 May 2026\n\n" + "\n".join(
        f"**{'Ann' if i % 2 == 0 else 'Bob'}**: {topic}, {filler * 2}".rstrip() for i, topic in enumerate(topics))


def test_a_hit_in_a_conversation_shows_the_turn_before_its_window_and_the_turn_after(env, memories):
    topics = [f"turn {i} about the weather" for i in range(16)]
    topics[8] = "What did you bake for the potluck"
    path = memories.session("2026-05-03", "200000", "Ann and Bob", _chat(topics))
    memories.write("wiki/baking.md", "# Baking\n\n" + "\n\n".join(f"Paragraph {i} on bread. " * 30 for i in range(6)),
                   title="Baking")
    index(env, memories)
    from memory_search.text.chunking import chunk_markdown

    lines = path.read_text(encoding="utf-8").split("\n")
    body_start = lines.index("# Ann and Bob, 3 May 2026") + 1
    windows = chunk_markdown("\n".join(lines[body_start - 1:]), body_start)
    (hit,) = search(env, memories, "potluck", "--mode", "keyword", "--top", "1")
    widened = [(max(window.start_line - 1, windows[0].start_line) if window is not windows[0] else window.start_line,
                window.end_line + 1 if window is not windows[-1] else window.end_line)
               for window in windows if "potluck" in window.text]
    assert (hit["start_line"], hit["end_line"]) in widened
    assert hit["end_line"] - hit["start_line"] + 1 >= 2 + min(window.end_line - window.start_line + 1
                                                              for window in windows if "potluck" in window.text)
    # Chunks of a page do not overlap: a page's hit keeps its chunk's lines.
    (page,) = search(env, memories, "Paragraph 3 bread", "--mode", "keyword", "--top", "1")
    text = (memories.root / "wiki/baking.md").read_text(encoding="utf-8").split("\n")
    assert "Paragraph" in text[page["start_line"] - 1] and text[page["end_line"] - 1].strip()


def test_a_hit_in_a_conversation_of_long_turns_still_shows_the_turn_before_and_after(env, memories):
    # A long turn ends a window and is too long to open the next one: windows then meet without sharing a turn.
    filler = "and we talked it over at length, the way friends do when there is time "
    turns = []
    for i in range(6):
        turns.append(f"**Ann**: short question {i} about the weather, {filler * 2}".rstrip())
        turns.append(f"**Bob**: long answer {i} about the weather, {filler * 7}".rstrip())
    turns[4] = "**Ann**: What did you bake for the potluck, " + filler * 2
    path = memories.session("2026-05-03", "200000", "Ann and Bob", "# Ann and Bob, 3 May 2026\n\n" + "\n".join(turns))
    index(env, memories)
    from memory_search.text.chunking import chunk_markdown

    lines = path.read_text(encoding="utf-8").split("\n")
    body_start = lines.index("# Ann and Bob, 3 May 2026") + 1
    windows = chunk_markdown("\n".join(lines[body_start - 1:]), body_start)
    (window,) = [window for window in windows if "potluck" in window.text]
    assert all(before.end_line < after.start_line for before, after in zip(windows, windows[1:]))  # none shared
    (hit,) = search(env, memories, "potluck", "--mode", "keyword", "--top", "1")
    assert (hit["start_line"], hit["end_line"]) == (window.start_line - 1, window.end_line + 1)
    assert lines[hit["start_line"] - 1].startswith("**Bob**: long answer 1")
    assert lines[hit["end_line"] - 1].startswith("**Ann**: short question 3")


def test_a_conversation_hit_widened_by_its_neighbours_is_its_files_lines_and_holds_what_matched(env, memories, rng):
    # Random chats: short and long turns (some too long to share a window, some longer than one), Japanese and
    # English, a heading or a blank line now and then; every turn carries a word of its own to search for.
    words = ["we talked it over", "話し合いました", "at length", "ゆっくりと", "the weather", "週末の予定"]
    markers, paths = {}, []
    for chat in range(4):
        speakers, lines = rng.sample(["**Ann**", "**Bob**", "**Kei**", "Aiko", "- **Tom**"], 2), []
        for turn in range(rng.randrange(8, 30)):
            marker = f"zq{chat}x{turn}w"
            text = " ".join(rng.choice(words) for _ in range(rng.choice([3, 10, 40, 90])))
            lines.append(f"{speakers[turn % 2]}: {text} {marker}" if rng.random() < 0.5 else
                         f"{speakers[turn % 2]}: {marker} {text}")
            markers[marker] = chat
            if rng.random() < 0.25:
                lines.append(rng.choice(["", "", "## Later that day", "(a pause)"]))
        paths.append(memories.session("2026-05-0" + str(chat + 1), "200000", f"Chat {chat}",
                                      f"# Chat {chat}\n\n" + "\n".join(lines)))
    index(env, memories)
    with memory_search.open(memories_dir=str(memories.root)) as library:
        for marker in rng.sample(sorted(markers), min(40, len(markers))):
            (hit,) = library.search(marker, top=1, mode="keyword")
            lines = Path(hit.path).read_text(encoding="utf-8").split("\n")
            # The file's lines from the hit's first to its last, blank ones at the end aside; a line longer than a
            # window is cut to the window's part of it.
            shown, held = hit.chunk_text.rstrip().split("\n"), "\n".join(lines[hit.start_line - 1:hit.end_line])
            assert len(shown) == len(held.rstrip().split("\n"))
            assert all(part.strip() in line for part, line in zip(shown, held.split("\n")))
            assert marker in hit.chunk_text and hit.path == str(paths[markers[marker]])


def test_a_hit_on_a_page_of_key_value_lines_keeps_its_chunks_lines(env, memories):
    # "Key: value" lines open lines as turns do, but by as many keys as lines: no conversation to widen.
    body = ("# Plan\n\n" + "We planned the season's gatherings together. " * 15 + "\n\nNote: the first list\nOwner: Ann"
            + "\n\nStatus: potluck planning is done\nDue: Friday\n" + "Everyone brings a dish to share. " * 25)
    path = memories.write("wiki/plan.md", body, title="Plan")
    index(env, memories)
    from memory_search.text.chunking import chunk_markdown

    lines = path.read_text(encoding="utf-8").split("\n")
    body_start = lines.index("# Plan") + 1
    (chunk,) = [chunk for chunk in chunk_markdown("\n".join(lines[body_start - 1:]), body_start)
                if "potluck" in chunk.text]
    assert lines[chunk.start_line - 1].startswith("Status:") and lines[chunk.start_line - 3].startswith("Owner:")
    (hit,) = search(env, memories, "potluck", "--mode", "keyword", "--top", "1")
    assert (hit["start_line"], hit["end_line"]) == (chunk.start_line, chunk.end_line)

    with memory_search.open(memories_dir=str(memories.root)) as opened:
        (found,) = opened.search("potluck", top=1, mode="keyword")
    assert found.chunk_text == "\n".join(lines[found.start_line - 1:found.end_line]).strip()


def test_a_word_in_more_chunks_than_the_budget_is_read_for_the_chunks_where_it_weighs_most(
        env, memories, monkeypatch, database):
    import psycopg
    from psycopg import sql

    from memory_search.search import layouts
    from memory_search.storage.schema import ManagedTables

    for number in range(6):
        memories.write(f"wiki/kettle-{number}.md", f"# Note {number}\n\nThe kettle is in cupboard {number}, "
                       "behind the plates and the bowls and the cups we rarely use.\n")
    memories.write("wiki/kettle-guide.md", "# Kettle\n\nKettle care: descale the kettle, dry the kettle.\n")
    index(env, memories)
    monkeypatch.setattr(layouts, "POSTINGS_BUDGET", 3)  # "kettle" is in 7 chunks: more than the budget
    hits = search(env, memories, "kettle", "--mode", "keyword")
    assert names(hits)[0] == "kettle-guide.md" and len(hits) == 3
    explained = run_script("search", "kettle", "--mode", "keyword", "--explain", env=env, memories=memories,
                           check=True).stdout
    assert "keywords: kettl in 3 of its 7 chunks, those that hold it most often" in explained  # the stem

    # An index made before reads the same once index.py has replaced its keyword b-tree.
    tables = ManagedTables.of(memories.root)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX {}; CREATE INDEX {} ON {} (term) INCLUDE (chunk_id, tf, dl)").format(
            sql.Identifier(f"{tables.prefix}__postings_by_term"), sql.Identifier(f"{tables.prefix}__postings_term"),
            tables.sql("postings")))
        assert names(search(env, memories, "kettle", "--mode", "keyword"))[0] == "kettle-guide.md"
        upgraded = run_script("index", env=env, memories=memories, tty=True)
        assert upgraded.returncode == 0 and "building the keyword index's b-tree by term and count, once" in \
            upgraded.stderr, upgraded.stderr
        kept = {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s",
                                               (tables.postings,))}
    assert f"{tables.prefix}__postings_by_term" in kept and f"{tables.prefix}__postings_term" not in kept


def test_terms_the_budget_leaves_out_still_order_the_chunks_the_rarest_terms_found(env, memories, monkeypatch):
    # Over a large index the keyword leg reads the rarest terms' postings first and leaves the commonest out
    # (layouts.POSTINGS_BUDGET); the chunks it found are then scored by all the query's terms, so the one that
    # holds them all comes before a shorter one that holds only the rare term.
    from memory_search.search import layouts

    for number in range(10):
        memories.write(f"wiki/plates-{number}.md", f"# Note {number}\n\nThe plates are in cupboard {number}.\n")
    for number in range(3):
        memories.write(f"wiki/kettle-{number}.md", f"# Kettle {number}\n\nThe kettle is on shelf {number}.\n")
    memories.write("wiki/boiler.md", "# Boiler\n\nDescale the boiler.\n")
    memories.write("wiki/kettle-care.md", "# Care\n\nDescale the kettle with vinegar, then rinse it.\n")
    index(env, memories)
    assert names(search(env, memories, "descale kettle", "--mode", "keyword"))[:2] == ["kettle-care.md", "boiler.md"]
    monkeypatch.setattr(layouts, "POSTINGS_BUDGET", 2)  # "descale" is in 2 chunks, "kettle" in 4: left out
    hits = search(env, memories, "descale kettle", "--mode", "keyword")
    assert names(hits) == ["kettle-care.md", "boiler.md"]
    assert hits[0]["score"] > hits[1]["score"]
    explained = run_script("search", "descale kettle", "--mode", "keyword", "--explain", env=env, memories=memories,
                           check=True).stdout
    assert "keywords: kettl (in 4 chunks) left out, counted only in the chunks the rarer terms found" in explained


def test_a_japanese_query_the_budget_cuts_short_keeps_the_order_of_the_terms_read_and_says_so(
        env, memories, monkeypatch):
    # Counting Japanese words takes Sudachi milliseconds a chunk, too long for a hundred chunks at each search.
    from memory_search.search import layouts

    for number in range(3):
        memories.write(f"wiki/kaigi-{number}.md", f"# 議事録 {number}\n\n会議は水曜日です。\n")
    memories.write("wiki/yosan.md", "# 予算\n\n予算の会議は木曜日です。\n")
    memories.write("wiki/keihi.md", "# 経費\n\n予算を見直す。\n")
    index(env, memories)
    monkeypatch.setattr(layouts, "POSTINGS_BUDGET", 2)  # "予算" is in 2 chunks, "会議" in 4: left out
    explained = run_script("search", "予算 会議", "--mode", "keyword", "--explain", env=env, memories=memories,
                           check=True).stdout
    assert "keywords: 会議 (in 4 chunks) left out, not counted" in explained
    assert set(names(search(env, memories, "予算 会議", "--mode", "keyword"))) == {"yosan.md", "keihi.md"}


def test_a_few_days_of_an_index_with_a_vector_graph_are_ranked_exactly_without_it(env, memories, database):
    # A date range of few chunks is read by the dates b-tree and ranked exactly (layouts.EXACT_DATED_CHUNKS):
    # the graph's walk passes chunks of other dates and may miss some of the nearest (tools/bench/scale.py).
    import datetime as dt
    import time

    import psycopg
    from psycopg import sql

    from memory_search.config import Settings
    from memory_search.search.filters import Filters
    from memory_search.storage.schema import ManagedTables

    memories.session("2026-11-02", "090000", "Webapp work", "Refactored the login form.")
    memories.session("2025-01-05", "090000", "Old work", "Fixed the login page and its redirect.")
    index(env, memories)
    tables = ManagedTables.of(memories.root)
    graph = f"{tables.prefix}__chunks_hnsw"
    settings = Settings.from_env(env).with_overrides(memories_dir=memories.root)

    def titles(**filters) -> list[str]:
        with memory_search.open(settings) as found:  # its server process reports what it read as it ends
            return sorted(hit.record.title for hit in found.search("login", mode="semantic",
                                                                   filters=Filters(**filters)))

    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding halfvec_cosine_ops)").format(
            sql.Identifier(graph), sql.Identifier(tables.chunks)))  # as an index of many chunks has

        def graph_reads() -> int:
            time.sleep(0.5)
            conn.execute("SELECT pg_stat_clear_snapshot()")
            return conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
                                (graph,)).fetchone()[0]

        # Two chunks are cheaper to read whole and sort than through any index: the planner is told to avoid
        # both, as it would over a large table, for the connections made meanwhile.
        name = sql.Identifier(conn.execute("SELECT current_database()").fetchone()[0])
        conn.execute(sql.SQL("ALTER DATABASE {} SET enable_seqscan = off").format(name))
        conn.execute(sql.SQL("ALTER DATABASE {} SET enable_sort = off").format(name))
        try:
            before = graph_reads()
            assert titles(since=dt.date(2026, 11, 1)) == ["Webapp work"] and graph_reads() == before
            assert titles() == ["Old work", "Webapp work"] and graph_reads() > before
        finally:
            conn.execute(sql.SQL("ALTER DATABASE {} RESET enable_seqscan").format(name))
            conn.execute(sql.SQL("ALTER DATABASE {} RESET enable_sort").format(name))


def test_a_search_kept_to_one_kind_walks_that_kinds_own_vector_graph(env, memories, database):
    # A large index gets a vector graph per kind of record (indexing/pipeline.py's KIND_GRAPH_CHUNKS): a search
    # kept to sessions walks the sessions' graph, not every other kind's chunks around the question first.
    import time

    import psycopg
    from psycopg import sql

    from memory_search.config import Settings
    from memory_search.search.filters import Filters
    from memory_search.storage import writer
    from memory_search.storage.schema import ManagedTables, find_index

    memories.session("2026-11-02", "090000", "Webapp work", "Refactored the login form.")
    memories.session("2026-11-03", "090000", "Deploy work", "Fixed the login redirect after deploy.")
    memories.write("wiki/login.md", "# Login\n\nHow the login form and its redirect work.\n", title="Login")
    index(env, memories)
    tables = ManagedTables.of(memories.root)
    settings = Settings.from_env(env).with_overrides(memories_dir=memories.root)

    def titles(**filters) -> list[str]:
        with memory_search.open(settings) as found:
            return sorted(hit.record.title for hit in found.search("login", mode="semantic",
                                                                   filters=Filters(**filters)))

    with psycopg.connect(database, autocommit=True) as conn:
        spec = find_index(conn, memories.root).spec
        writer.ensure_hnsw(tables.on(conn), spec)
        writer.ensure_kind_graphs(tables.on(conn), spec, min_chunks=2)  # as a large index has them
        graphs = {row[0] for row in conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND i.indisvalid", (tables.chunks,))}
        sessions = writer.kind_graph(tables, "session")
        assert sessions in graphs and writer.kind_graph(tables, "wiki") not in graphs  # one wiki chunk: too few

        def reads(graph: str) -> int:
            time.sleep(0.5)
            conn.execute("SELECT pg_stat_clear_snapshot()")
            return conn.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
                                (graph,)).fetchone()[0]

        name = sql.Identifier(conn.execute("SELECT current_database()").fetchone()[0])
        conn.execute(sql.SQL("ALTER DATABASE {} SET enable_seqscan = off").format(name))  # as over a large table
        conn.execute(sql.SQL("ALTER DATABASE {} SET enable_sort = off").format(name))
        try:
            before = reads(sessions)
            assert titles() == ["Deploy work", "Login", "Webapp work"] and reads(sessions) == before
            assert titles(scope="session") == ["Deploy work", "Webapp work"] and reads(sessions) > before
        finally:
            conn.execute(sql.SQL("ALTER DATABASE {} RESET enable_seqscan").format(name))
            conn.execute(sql.SQL("ALTER DATABASE {} RESET enable_sort").format(name))


def test_a_graph_per_kind_left_invalid_by_an_interrupted_build_is_built_again(env, memories, database):
    # CREATE INDEX CONCURRENTLY that is killed leaves an invalid index behind, which no search uses: the next
    # index run drops it and builds it again, as it does the graph of all.
    import psycopg

    from memory_search.storage import writer
    from memory_search.storage.schema import ManagedTables, find_index

    memories.session("2026-11-02", "090000", "Webapp work", "Refactored the login form.")
    memories.session("2026-11-03", "090000", "Deploy work", "Fixed the login redirect after deploy.")
    index(env, memories)
    tables = ManagedTables.of(memories.root)
    sessions = writer.kind_graph(tables, "session")
    with psycopg.connect(database, autocommit=True) as conn:
        spec = find_index(conn, memories.root).spec

        def valid() -> bool | None:
            row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
                               (sessions,)).fetchone()
            return row[0] if row else None

        writer.ensure_kind_graphs(tables.on(conn), spec, min_chunks=2)
        assert valid() is True
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", (sessions,))
        said = []
        writer.ensure_kind_graphs(tables.on(conn), spec, min_chunks=2, say=said.append)
        assert valid() is True and said == ["building the vector index of the session records"]
        writer.ensure_kind_graphs(tables.on(conn), spec, min_chunks=2, say=said.append)
        assert len(said) == 1  # a valid graph is left as it is


def test_an_index_made_before_gets_the_dates_b_tree_at_its_next_run(env, memories, database):
    # The b-tree on dates alone lets a large index's last few days be read whole and ranked exactly
    # (tools/bench/scale.py: --since keeping 1.3 % of a million chunks, 116 ms and recall 0.73 without it).
    import psycopg
    from psycopg import sql

    from memory_search.storage.schema import ManagedTables

    memories.session("2026-11-02", "090000", "Webapp work", "Refactored the login form.")
    index(env, memories)
    tables = ManagedTables.of(memories.root)
    dates = f"{tables.prefix}__chunks_dates"

    def kept(conn):
        return {row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s",
                                               (tables.chunks,))}

    with psycopg.connect(database, autocommit=True) as conn:
        assert dates in kept(conn)
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(dates)))
        assert [hit["title"] for hit in search(env, memories, "login", "--since", "2026-11-01")] == ["Webapp work"]
        assert run_script("index", env=env, memories=memories).returncode == 0
        assert dates in kept(conn)


_RUNBOOK = """# オンコール当番の引き継ぎ

## 背景

決済APIの障害対応をチームで一本化するためのページ。
2025年4月から運用している。

## 交代の日時

当番は毎週月曜の10時に交代する。Slack の #payments-oncall で前の当番が声をかけ、次の当番が返事をしたら交代。
祝日が月曜に重なるときは火曜の10時にずらす。PagerDuty のスケジュールは交代の一時間前に自動で切り替わる。
交代のあとの最初の一時間は、前の当番も呼ばれたときに答えられるようにしておく。
年末年始と大型連休は、連休に入る前の最後の営業日の17時に交代し、連休明けの朝にもう一度交代する。

## 渡すもの

前の当番は未解決のアラートと対応中のインシデントの経過を `incident-log.md` に書いてから渡す。
次の当番はそれを読み、分からない点があればその場で聞く。渡したあとに前の当番が呼ばれることはない。
夜間に起きて朝まで続いたインシデントは、経過とともに担当者の名前も書き残す。

## 署名エラーの調べ方

Webhook の受信で `SignatureVerificationError` が出たら、まず署名鍵の期限を確かめる。
鍵は `payments-webhook-secret` に入っていて、`kubectl get secret payments-webhook-secret -o yaml` で見られる。
期限が切れていたら鍵を作り直し、シークレットを更新してから `kubectl rollout restart deploy/webhook` を実行する。
それでも直らないときは、リクエストの生のボディが途中のプロキシで書き換えられていないかをログで確かめる。
"""


def test_the_hit_shown_is_the_section_that_answers_not_the_title_or_a_short_section(env, memories):
    # "# title" straight before "## 背景" and a section of two lines: neither is shown for the question the
    # section after them answers.
    path = memories.write("wiki/payments-oncall.md", _RUNBOOK, title="オンコール当番の引き継ぎ")
    memories.write("wiki/deploy.md", "# デプロイ手順\n\n" + "本番へのデプロイは main へのマージで始まる。" * 8,
                   title="デプロイ手順")
    index(env, memories)
    lines = path.read_text(encoding="utf-8").split("\n")
    first, last = lines.index("## 交代の日時") + 1, lines.index("## 渡すもの") - 1
    for mode in ("hybrid", "keyword", "semantic"):
        hit = search(env, memories, "オンコールの引き継ぎはいつ", "--mode", mode)[0]
        assert hit["path"].endswith("payments-oncall.md")
        assert hit["start_line"] <= first + 2 and last <= hit["end_line"], (mode, hit["start_line"], hit["end_line"])
        assert hit["end_line"] < lines.index("## 渡すもの") + 1, mode


_HELP = """Usage:
  hash [command]

Available Commands:
  completion  Generate the autocompletion script for the specified shell
  encode      hash input data
  help        Help about any command
  version     Print the version number of hash

Flags:
      --config string   config file (default is $HOME/.hash.yaml)
  -h, --help            help for hash
  -t, --toggle          Help message for toggle
  -v, --verbose         print what is hashed and where the result goes
      --algorithm string  one of sha256, sha512, blake2b (default "sha256")
      --output string   write the digest to this file instead of the standard output

Use "hash [command] --help" for more information about a command."""


def test_a_help_block_is_not_shown_for_an_unrelated_japanese_question_at_min_score(env, memories):
    # A Japanese note around a command's help text, in an index of Japanese and English notes: the block of
    # English flags is found for what the note says of it, not for any question, and a question nothing answers
    # is left empty at --min-score 0.5.
    memories.write("wiki/cli/hash-command.md", "# hash コマンドの作り方\n\n## 使い方\n\nCobra でひな型を作り、"
                   "サブコマンド encode を足した。引数なしで実行すると次のヘルプが出る。\n\n```\n$ hash -h\n"
                   + _HELP + "\n```\n\nフラグの既定値は設定ファイルで変えられる。\n", title="hash コマンドの作り方")
    topics = ["ログの保存期間", "証明書の更新", "監視のアラート", "権限の申請", "障害の振り返り", "依存の更新",
              "鍵の管理", "費用の見直し", "テストの並列化", "キャッシュの無効化"]
    for i in range(60):  # both scripts, as in a user's index: the cross-language baseline applies
        memories.write(f"wiki/ja/{i}.md", f"# {topics[i % 10]} {i}\n\n{topics[i % 10]}について、手順 {i} を決めた。"
                       "担当者が確認してから記録に残す。", title=f"{topics[i % 10]} {i}")
        memories.write(f"wiki/en/{i}.md", f"# Note {i}\n\nDecision {i}: the on-call engineer reviews step {i} "
                       "and writes it down in the team log before closing the ticket.", title=f"Note {i}")
    index(env, memories)
    for question in ("Kafka のコンシューマーラグが増え続けるときに見るべき指標",
                     "Redis Cluster でスロットを別のノードに移す手順"):
        hits = search(env, memories, question, "--min-score", "0.5")
        assert [hit["path"] for hit in hits if hit["path"].endswith("hash-command.md")] == [], (question, hits[0])
    (found,) = search(env, memories, "hash コマンドで出力先のファイルを指定するフラグ", "--top", "1")
    assert found["path"].endswith("hash-command.md")
