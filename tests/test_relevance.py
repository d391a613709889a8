"""The relevance score as a user sees it: one 0..1 scale in every mode, --min-score 0.5 empties a question
nothing answers and keeps the right memory, and a hit scores the same in a small and a large collection."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import index, search

NOTES = {
    "wiki/ops/backup.md": ("バックアップ運用", "# バックアップ運用\n\n毎晩 2 時に夜間バッチでデータベースの"
                           "ダンプを取り、オブジェクトストレージへ送る。\n復元手順は月に一度リハーサルする。"
                           "保存期間は 30 日。\n"),
    "wiki/search/hnsw.md": ("Tuning the HNSW index", "# Tuning the HNSW index\n\nWe raised ef_search from 40 to 100 "
                            "and rebuilt the index with m = 16 and ef_construction = 64.\nRecall on our evaluation "
                            "queries went from 0.91 to 0.98 while latency stayed under 10 ms.\n"),
    "wiki/dev/commits.md": ("コミット規約", "# コミット規約\n\nConventional Commits に従う。件名は日本語でもよい。"
                            "feat: fix: docs: を使い分ける。\n"),
    "wiki/release.md": ("Release planning v1.2", "# Release planning v1.2\n\nThe code freeze is on November 20. "
                        "The release manager publishes the notes on Friday.\n"),
    "wiki/web/reader.md": ("Jina Reader API", "# Jina Reader\n\nPrefix any URL with r.jina.ai to get Markdown.\n"),
}
TOPICS = ["the office coffee machine", "the quarterly budget review", "onboarding a new designer", "the team lunch",
          "renewing the office lease", "the printer on the third floor", "the holiday schedule", "the blog redesign",
          "the customer survey", "moving the staging server"]
MODES = ("hybrid", "semantic", "keyword")
NONSENSE = "存在しないクエリ zzqqxx"


def write_notes(memories, extra: int = 0) -> None:
    for path, (title, body) in NOTES.items():
        memories.write(path, body, title=title)
    for number in range(extra):
        topic = TOPICS[number % len(TOPICS)]
        memories.write(f"wiki/misc/note-{number:03d}.md",
                       f"# Note {number}\n\nShort notes about {topic}, meeting {number}. Decided to revisit it "
                       f"after {number % 7 + 1} weeks; {['Alice', 'Bob', 'Chen', 'Dana'][number % 4]} follows up.\n",
                       title=f"Note {number} about {topic}")


@pytest.fixture
def small(env, memories):
    write_notes(memories)
    index(env, memories)
    return memories


def scores_of(hits, name: str) -> list[float]:
    return [hit["score"] for hit in hits if Path(hit["path"]).name == name]


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_scores_on_one_scale_from_zero_to_one(env, small, mode):
    for query in ("夜間バッチのバックアップは何時に取る？", "HNSW ef_search recall", NONSENSE):
        for hit in search(env, small, query, "--mode", mode, "--top", "10"):
            assert 0.0 <= hit["score"] <= 1.0


def test_a_question_no_memory_answers_gets_nothing_at_half(env, small):
    for query in (NONSENSE, "What is our policy for parental leave?", "経費精算の締め日はいつ？"):
        assert search(env, small, query, "--min-score", "0.5") == [], query
        assert search(env, small, query) != []  # no floor by default: the list is there, scored low


@pytest.mark.parametrize("mode", MODES)
def test_min_score_half_keeps_the_right_memory_in_every_mode(env, small, mode):
    query = "バックアップ 夜間バッチ ダンプ 保存期間" if mode == "keyword" else "夜間バッチのバックアップは何時に取る？"
    hits = search(env, small, query, "--mode", mode, "--min-score", "0.5")
    assert hits and Path(hits[0]["path"]).name == "backup.md"
    assert all(hit["score"] >= 0.5 for hit in hits)
    assert search(env, small, "zzqqxx qwvv", "--mode", mode, "--min-score", "0.5") == []


def test_explain_keeps_the_raw_leg_scores_beside_the_relevance(env, small):
    (hit, *_) = search(env, small, "How did we tune the HNSW index?", "--explain", "--top", "1")
    legs = hit["explain"]
    assert 0.5 < legs["semantic"]["score"] < 1.0  # the cosine similarity
    assert legs["keyword"]["score"] > 1.0  # BM25
    assert set(legs["relevance"]) == {"lift", "fusion", "baseline"}  # an English note, every term attainable
    relevance = legs["relevance"]
    assert relevance["lift"] == pytest.approx(relevance["fusion"] - relevance["baseline"], abs=2e-4)


@pytest.mark.slow  # a hundred notes: the size is the point
@pytest.mark.parametrize("mode", MODES)
def test_a_hit_scores_about_the_same_among_five_notes_and_among_a_hundred(env, memories, tmp_path, mode):
    from conftest import MemoriesDir

    large = MemoriesDir(tmp_path / "large")
    write_notes(memories)
    write_notes(large, extra=95)
    index(env, memories)
    index(env, large)
    query = "バックアップ 夜間バッチ ダンプ" if mode == "keyword" else "夜間バッチのバックアップは何時に取る？"
    few = scores_of(search(env, memories, query, "--mode", mode), "backup.md")
    many = scores_of(search(env, large, query, "--mode", mode), "backup.md")
    assert few and many
    print(f"{mode}: the right note scores {few[0]:.4f} among 5 notes, {many[0]:.4f} among 100")
    assert abs(few[0] - many[0]) < (1e-6 if mode == "semantic" else 0.1), (few, many)
    nonsense_few = max([hit["score"] for hit in search(env, memories, NONSENSE, "--mode", mode)], default=0.0)
    nonsense_many = max([hit["score"] for hit in search(env, large, NONSENSE, "--mode", mode)], default=0.0)
    print(f"{mode}: nonsense scores at most {nonsense_few:.4f} among 5 notes, {nonsense_many:.4f} among 100")
    assert nonsense_few < 0.5 and nonsense_many < 0.5


def test_the_calibration_covers_the_bundled_model_and_keywords_only():
    from memory_search.search import relevance

    bundled = relevance.calibration("local:multilingual-e5-small:384")
    assert bundled.semantic and bundled.hybrid and bundled.fusion and bundled.keyword
    other = relevance.calibration("voyage:voyage-3-large:1024")  # keeps the earlier scores
    assert other.semantic is None and other.hybrid is None and other.keyword is not None
    assert 0.0 < relevance.data()["semantic_cutoff"] < 0.5


def test_a_hit_is_neither_credited_with_nor_penalised_for_query_words_its_languages_cannot_hold():
    from memory_search.search import relevance

    weights = {"coverage_cubed": 0.1, "bm25n": 0.1, "unattainable": 0.02}
    terms = {"署名": 2.0, "検証": 2.0, "signatureverificationerror": 4.0}  # a Japanese question with an identifier
    scripts = {"署名": "cjk", "検証": "cjk", "signatureverificationerror": None}
    japanese = {"cos": 0.85, "cov": 0.5, "bm25n": 0.3}  # matched 署名 and 検証
    english = {"cos": 0.85, "cov": 0.5, "bm25n": 0.3}  # matched the identifier
    relevance.attainable(japanese, frozenset({"cjk"}), scripts, terms, set())
    relevance.attainable(english, frozenset({"latin"}), scripts, terms, set())
    assert japanese == {"cos": 0.85, "cov": 0.5, "bm25n": 0.3, "attainable": 1.0}
    # The English note could hold only the identifier, and holds it: all it could match
    assert english["attainable"] == 0.5 and english["cov"] == 1.0
    # A Japanese word an English note holds all the same counts as one it can hold
    found = {"cos": 0.85, "cov": 0.75, "bm25n": 0.4}
    relevance.attainable(found, frozenset({"latin"}), scripts, terms, {"署名"})
    assert found["attainable"] == 0.75 and found["cov"] == 1.0
    # Nothing of the question it could hold: the fitted constant stands for its keyword part
    nothing = {"cos": 0.90, "cov": 0.0, "bm25n": 0.0}
    relevance.attainable(nothing, frozenset({"latin"}), {"署名": "cjk"}, {"署名": 2.0}, set())
    signals = {1: nothing | {"languages": frozenset({"latin"})}, 2: japanese | {"languages": frozenset({"cjk"})},
               3: english | {"languages": frozenset({"latin"})}}
    order = relevance.fuse(signals, "cjk", weights)
    assert nothing["attainable"] == 0.0 and [chunk_id for chunk_id, _ in order] == [3, 1, 2]
    assert signals[1]["fusion"] == pytest.approx(0.90 + 0.02)
    assert signals[3]["fusion"] == pytest.approx(0.85 + 0.5 * 0.1 + 0.1 * 0.3 + 0.5 * 0.02)
    assert signals[2]["fusion"] == pytest.approx(0.85 + 0.1 * 0.125 + 0.1 * 0.3)


def test_a_hit_in_the_other_language_stands_against_its_own_languages_baseline():
    from memory_search.search import relevance

    japanese, english = [1.0, 0.0], [0.6, 0.8]  # the query's mean cosine: 1.0 with Japanese, 0.6 with English
    hits = {1: {"languages": frozenset({"cjk"})}, 2: {"languages": frozenset({"latin"})}}
    assert relevance.language_shift([1.0, 0.0], "cjk", hits, {True: (60, japanese), False: (60, english)}) == \
        pytest.approx(0.4)
    assert relevance.language_shift([1.0, 0.0], "cjk", hits, {True: (60, japanese), False: (5, english)}) == 0.0
    assert relevance.language_shift([1.0, 0.0], "cjk", {1: hits[1]}, {True: (60, japanese),
                                                                      False: (60, english)}) == 0.0
    weights = {"coverage_cubed": 0.1, "bm25n": 0.1, "unattainable": 0.0}
    signals = {1: {"cos": 0.86, "cov": 0.0, "bm25n": 0.0, "attainable": 1.0, "languages": frozenset({"cjk"})},
               2: {"cos": 0.83, "cov": 0.0, "bm25n": 0.0, "attainable": 0.0, "languages": frozenset({"latin"})}}
    assert [chunk_id for chunk_id, _ in relevance.fuse(dict(signals), "cjk", weights)] == [1, 2]
    order = relevance.fuse(signals, "cjk", weights, shift=0.05)
    assert [chunk_id for chunk_id, _ in order] == [2, 1] and signals[2]["language_shift"] == 0.05
    assert "language_shift" not in signals[1]


JAPANESE_TOPICS = ["会議室の予約", "経費精算の締め日", "新人研修の日程", "社内勉強会", "オフィスの空調", "年末の大掃除",
                   "備品の発注", "健康診断の予約", "防災訓練", "忘年会の会場"]


@pytest.mark.slow  # sixty notes of each language: enough of both is the point
def test_the_language_baseline_applies_only_where_the_index_holds_enough_of_both_languages(env, small, tmp_path):
    from conftest import MemoriesDir

    mixed = MemoriesDir(tmp_path / "mixed")
    write_notes(mixed, extra=60)
    for number in range(60):
        topic = JAPANESE_TOPICS[number % len(JAPANESE_TOPICS)]
        owner = ["佐藤", "鈴木", "高橋", "田中"][number % 4]
        mixed.write(f"wiki/jp/note-{number:03d}.md", f"# メモ {number}\n\n{topic}について話した。"
                    f"{number % 7 + 1} 週間後に見直すことにした。担当は{owner}さん。\n",
                    title=f"{topic}のメモ {number}")
    index(env, mixed)
    question = "HNSWの検索の精度を上げるために何を変えた？"
    shifted = [hit for hit in search(env, mixed, question, "--explain") if Path(hit["path"]).name == "hnsw.md"]
    assert shifted and shifted[0]["explain"]["relevance"]["language_shift"] > 0
    (plain,) = [hit for hit in search(env, small, question, "--explain") if Path(hit["path"]).name == "hnsw.md"]
    assert "language_shift" not in plain["explain"]["relevance"]  # five notes: no baseline for either language


def test_an_index_from_before_the_language_baseline_gains_it_at_the_next_run(env, small):
    from memory_search.config import Settings
    from memory_search.storage.database import connect
    from memory_search.storage.schema import find_index, read_meta

    settings = Settings.from_env(env).with_overrides(memories_dir=str(small.root))
    with connect(settings, read_only=False) as conn:
        tables = find_index(conn, settings.memories_root).tables
        conn.execute(f'DELETE FROM "{tables.meta}" WHERE key = %s', ("script_means",))
    index(env, small)  # nothing changed in the memories
    with connect(settings, read_only=True) as conn:
        assert "script_means" in read_meta(find_index(conn, settings.memories_root).tables.on(conn))


def test_the_hybrid_baseline_is_the_mean_of_the_questions_own_script_or_the_fallback():
    from memory_search.search import relevance

    vector = [0.6, 0.8]
    means = {True: (60, [0.5, 0.5]), False: (60, [1.0, 0.0])}  # is CJK -> (chunks, mean vector)
    assert relevance.baseline(vector, "cjk", means, 0.7) == pytest.approx(0.7)  # 0.6 x 0.5 + 0.8 x 0.5
    assert relevance.baseline(vector, "latin", means, 0.7) == pytest.approx(0.6)
    # Too few chunks in the question's script, or none: the fallback, never the other script's mean
    assert relevance.baseline(vector, "cjk", {True: (49, [0.5, 0.5]), False: (60, [1.0, 0.0])}, 0.75) == 0.75
    assert relevance.baseline(vector, "latin", {True: (60, [0.5, 0.5])}, 0.75) == 0.75
    assert relevance.baseline(vector, None, {}, 0.75) == 0.75
    # One number per search: the lift keeps the fused value's order
    signals = {1: {"cos": 0.9, "cov": 1.0, "bm25n": 0.5, "attainable": 1.0, "languages": frozenset()},
               2: {"cos": 0.8, "cov": 0.5, "bm25n": 0.2, "attainable": 1.0, "languages": frozenset()}}
    weights = {"coverage_cubed": 0.1, "bm25n": 0.1, "unattainable": 0.0}
    order = relevance.fuse(signals, "latin", weights, 0.0, 0.8)
    assert [chunk for chunk, _ in order] == [1, 2]
    assert all(signal["lift"] == pytest.approx(signal["fusion"] - 0.8) for signal in signals.values())
