"""tools/eval/eval.py over our own cross-lingual set: the same retrieval code, scored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT


def run_eval(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools/eval/eval.py"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.slow  # a whole evaluation set in three modes
def test_a_question_in_another_language_does_no_worse_in_hybrid_than_in_semantic(env):
    result = run_eval(str(ROOT / "examples/eval/ja-questions-en-notes"), "--split", "test",
                      "--modes", "keyword,semantic,hybrid", "--compare", "semantic,hybrid", "--json", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 30 and report["documents"] == 40
    scores = {mode: metrics["ndcg@10"] for mode, metrics in report["results"].items()}
    assert scores["keyword"] < scores["semantic"]  # the keyword leg has little signal here
    assert scores["hybrid"] >= scores["semantic"]
    for metrics in report["results"].values():
        assert set(metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
    (comparison,) = report["comparisons"]
    assert (comparison["base"], comparison["other"]) == ("semantic", "hybrid")
    assert comparison["wins"] + comparison["losses"] + comparison["ties"] == 30
    assert comparison["delta"] == pytest.approx(scores["hybrid"] - scores["semantic"], abs=1e-3)


def test_compare_needs_two_known_modes(env):
    dataset = str(ROOT / "examples/eval/ja-questions-en-notes")
    for compare in ("hybrid", "hybrid,fast"):
        result = run_eval(dataset, "--split", "test", "--compare", compare, env=env)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_eval_refuses_a_folder_without_the_beir_files(env, tmp_path):
    result = run_eval(str(tmp_path), "--split", "test", env=env)
    assert result.returncode == 2 and "corpus.jsonl" in result.stderr


def conversation_set(folder):
    """Three dated sessions of a chat, each long enough for several chunks, and questions with evidence turns."""
    fillers = ["**Aya**: That sounds lovely, tell me more about your week.",
               "**Ben**: Work was busy but the weekend was quiet and restful.",
               "**Aya**: I have been reading in the evenings and cooking a lot.",
               "**Ben**: Same here, the weather kept everyone indoors lately."]
    facts = {"s1": "**Ben**: I adopted a greyhound called Pimento from the shelter on Saturday.",
             "s2": "**Aya**: My pottery class fired its first kiln of porcelain teapots yesterday.",
             "s3": "**Ben**: Pimento ran his first lure coursing race and came second."}
    corpus = []
    for number, (session, fact) in enumerate(facts.items(), start=1):
        turns = [fillers[i % 4] + f" ({session} {i})" for i in range(40)]
        turns.insert(30, fact)  # line 33 of the text: heading, blank line, then turns from line 3
        text = f"# Aya and Ben, 0{number} May 2024\n\n" + "\n".join(turns)
        corpus.append({"_id": session, "title": f"Aya and Ben: conversation {number}", "text": text,
                       "metadata": {"path": f"raw/session/2024-05-0{number}/120000_chat_0000000{number}.md",
                                    "frontmatter": {"kind": "session", "started_at": f"2024-05-0{number}T12:00:00"}}})
    queries = [("q1", "What is the name of the greyhound Ben adopted?", "4", [["s1", 33]]),
               ("q2", "What did the pottery class fire in its kiln?", "4", [["s2", 3]]),  # the turn is line 33
               ("q3", "How did the greyhound Pimento do in lure coursing after his adoption?", "1",
                [["s1", 33], ["s3", 33]])]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": query_id, "text": text, "metadata": {"today": "2024-06-01", "category": category,
                                                                "evidence": evidence}}) + "\n"
        for query_id, text, category, evidence in queries), encoding="utf-8")
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{query_id}\t{doc_id}\t1\n" for query_id, _, _, evidence in queries for doc_id in {d for d, _ in evidence}),
        encoding="utf-8")


def test_a_conversation_set_is_scored_by_its_evidence_sessions_and_turns(env, tmp_path):
    conversation_set(tmp_path / "chat")
    result = run_eval(str(tmp_path / "chat"), "--split", "dev", "--modes", "keyword", "--json", env=env)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)["conversation"]["keyword"]
    assert list(figures) == ["all", "1", "4"]
    assert figures["1"] == {"name": "multi-hop", "queries": 1, "session": 1.0, "multi": 1, "all_sessions": 1.0,
                            "turn": 1.0}
    # q2's session is found, but the hit's lines (around line 33) do not hold the line given as evidence.
    assert figures["4"] == {"name": "single-hop", "queries": 2, "session": 1.0, "multi": 0, "all_sessions": None,
                            "turn": 0.5}
    text = run_eval(str(tmp_path / "chat"), "--split", "dev", "--modes", "keyword", env=env).stdout
    assert "1 multi-hop" in text and "turn@5" in text


def test_budget_at_searches_keywords_as_an_index_that_many_times_larger_would(env, tmp_path):
    # The postings budget scaled down by the set's size against CHUNKS: here to a posting or two, so that the
    # keyword leg reads a question's rarest word alone and finds less.
    conversation_set(tmp_path / "chat")
    figures = {}
    for scaled in ((), ("--budget-at", "100000000")):
        result = run_eval(str(tmp_path / "chat"), "--split", "dev", "--modes", "keyword", "--json", *scaled, env=env)
        assert result.returncode == 0, result.stderr
        figures[scaled] = json.loads(result.stdout)["results"]["keyword"]["recall@100"]
    assert figures[()] == 1.0 and figures[("--budget-at", "100000000")] < 1.0


def test_conversation_figures_count_sessions_every_session_and_turns_in_the_first_five(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_lib import Dataset, conversation_figures

    dataset = Dataset("chat", {}, {"a": "", "b": "", "c": ""}, {}, evidence={
        "a": [("s1", 10), ("s2", 4)], "b": [("s3", 7)], "c": [("s4", 2)]}, category={"a": "1", "b": "2", "c": "2"})
    spans = {"a": [("s1", 1, 9), ("s9", 1, 5), ("s8", 1, 5), ("s7", 1, 5), ("s6", 1, 5), ("s2", 1, 9)],
             "b": [("s3", 5, 9)],
             "c": [("s5", 1, 3), ("s4", None, None)]}
    figures = conversation_figures(spans, dataset)
    assert figures["all"] == {"name": "all", "queries": 3, "session": 1.0, "multi": 1, "all_sessions": 0.0,
                              "turn": round(1 / 3, 4)}
    assert figures["1"]["turn"] == 0.0 and figures["2"]["session"] == 1.0 and figures["2"]["turn"] == 0.5


def test_passage_figures_count_a_first_five_hit_whose_lines_overlap_or_hold_the_answer(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_lib import Dataset, passage_figures

    dataset = Dataset("notes", {}, {"a": "", "b": "", "c": "", "d": ""}, {}, category={
        "a": "identifier", "b": "paraphrase", "c": "paraphrase", "d": "paraphrase"},
        passages={"a": [("n1", 10, 14)], "b": [("n2", 3, 4)], "c": [("n3", 20, 30)], "d": [("n4", 1, 2)]},
        groups={"a": ["notes", "session"], "b": ["notes", "wiki"], "c": ["articles", "wiki"], "d": ["notes", "wiki"]})
    spans = {"a": [("n9", 1, 40), ("n1", 12, 30)],  # overlaps, does not hold all
             "b": [("n2", 1, 8)],  # holds all
             "c": [("n3", 1, 19), ("n8", 20, 30)],  # the file, but lines that miss the answer
             "d": [("x", 1, 2)] * 5 + [("n4", 1, 2)]}  # found only sixth
    figures = passage_figures(spans, dataset)
    assert figures["all"] == {"queries": 4, "file": 0.75, "passage": 0.5, "whole": 0.25}
    assert figures["identifier"]["whole"] == 0.0 and figures["paraphrase"]["passage"] == round(1 / 3, 4)
    assert figures["articles"] == {"queries": 1, "file": 1.0, "passage": 0.0, "whole": 0.0}
    assert figures["session"]["passage"] == 1.0 and figures["wiki"]["queries"] == 3


def test_the_renamed_twins_give_each_japanese_page_a_name_no_path_rule_pairs_with_its_english_twin(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "examples/eval/twins-renamed/build.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    renamed = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    twins = ROOT / "examples/eval/bilingual-twins"
    original = [json.loads(line) for line in (twins / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    def stems(language: str) -> set[str]:
        return {doc["metadata"]["path"].rsplit("/", 1)[1].removesuffix(".md").lower() for doc in renamed
                if doc["metadata"]["language"] == language}

    assert len(stems("ja")) == len(stems("en")) == 44 and not stems("ja") & stems("en")
    assert [(doc["_id"], doc["text"]) for doc in renamed] == [(doc["_id"], doc["text"]) for doc in original]
    for name in ("queries.jsonl", "qrels/ja.tsv", "qrels/en.tsv"):
        assert (tmp_path / name).read_bytes() == (twins / name).read_bytes()


DEV_NOTES = ROOT / "examples/eval/ja-dev-notes"
ARTICLES = ROOT.parent / "shared" / "eval" / "tech-notes-dev"


def test_the_developer_notes_set_is_skipped_with_one_line_when_the_articles_are_absent(tmp_path):
    result = subprocess.run([sys.executable, str(DEV_NOTES / "build.py"), str(tmp_path / "set"), "--articles",
                             str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3 and len(result.stderr.strip().splitlines()) == 1 and "skipped" in result.stderr
    assert not (tmp_path / "set").exists()


@pytest.mark.skipif(not (ARTICLES / "memories").is_dir(), reason="needs ../shared/eval/tech-notes-dev")
def test_every_developer_notes_question_points_at_lines_of_its_document_in_both_languages(tmp_path):
    result = subprocess.run([sys.executable, str(DEV_NOTES / "build.py"), str(tmp_path), "--articles",
                             str(ARTICLES)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    corpus = {doc["_id"]: doc for doc in map(json.loads, (tmp_path / "corpus.jsonl").read_text().splitlines())}
    queries = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text().splitlines()]
    assert len(queries) >= 150 and {query["metadata"]["language"] for query in queries} == {"ja", "en"}
    for query in queries:
        (doc_id, first, last), = query["metadata"]["passages"]
        assert 1 <= first <= last <= len(corpus[doc_id]["text"].split("\n"))
    assert not any(doc["metadata"]["source"] == "articles" for doc in corpus.values()
                   if (DEV_NOTES / doc["_id"]).exists())  # the articles are never stored here
    for language in ("ja", "en"):
        assert len((tmp_path / f"unanswerable-{language}.jsonl").read_text().splitlines()) >= 40


BUILT_SETS = ("bilingual-twins", "ja-conversations", "web-archive")


@pytest.mark.parametrize("name", BUILT_SETS)
def test_a_committed_set_is_what_its_build_script_writes(name, tmp_path):
    folder = ROOT / "examples/eval" / name
    result = subprocess.run([sys.executable, str(folder / "build.py"), str(tmp_path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    written = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file())
    assert written and all((folder / path).read_bytes() == (tmp_path / path).read_bytes() for path in written)


def test_one_language_of_a_bilingual_set_keeps_its_documents_and_the_questions_they_answer(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_lib import load_dataset

    folder = ROOT / "examples/eval/bilingual-twins"
    both = load_dataset(folder, "ja")
    english = load_dataset(folder, "ja", language="en")
    assert len(both.corpus) == 88 and len(english.corpus) == 44 and all(doc.startswith("en/") for doc in english.corpus)
    assert english.queries == both.queries  # every Japanese question still has its English twin to find
    assert all(grades == {f"en/{doc[3:]}": 1 for doc in both.qrels[query] if doc.startswith("ja/")}
               for query, grades in english.qrels.items())
    assert english.name == "bilingual-twins-en-documents"


def test_best_first_counts_the_queries_whose_first_hit_has_their_top_grade(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_lib import Dataset, best_first

    graded = Dataset("twins", {}, {"q1": "", "q2": "", "q3": ""}, {
        "q1": {"ja/a": 2, "en/a": 1}, "q2": {"ja/b": 2, "en/b": 1}, "q3": {"ja/c": 1}})
    runs = {"q1": ["ja/a", "en/a"], "q2": ["en/b", "ja/b"], "q3": ["ja/x"]}
    assert best_first(runs, graded) == 0.5  # q3 has one grade: not counted
    assert best_first({"q3": ["ja/c"]}, Dataset("flat", {}, {"q3": ""}, {"q3": {"ja/c": 1}})) is None


def run_eval_all(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools/eval/eval_all.py"), *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_eval_all_names_its_sets_and_refuses_unknown_ones(env, tmp_path):
    listed = run_eval_all("--list", env=env)
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert {"locomo-dev", "twins-ja", "twins-ja-on-en-pages", "ja-conversations", "web-archive", "time-bound",
            "package-notes-en", "scifact-train", "ja-dev-notes-ja", "ja-dev-notes-en", "twins-renamed-ja",
            "twins-renamed-en"} <= set(names)
    for args, message in ((["--sets", "twins-ja,nonsense"], "unknown set nonsense"),
                          (["--against", "no-such-ref-anywhere"], "is not a commit")):
        result = run_eval_all(*args, "--work", str(tmp_path), env=env)
        assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_eval_all_marks_changes_beyond_noise_and_flags_hybrid_below_its_better_leg(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_all import EvalSet, paired, table

    queries = [f"q{i}" for i in range(40)]
    steady = dict.fromkeys(queries, 0.8)
    assert paired(steady, steady) == (0.0, False)
    assert paired(steady, {q: 0.8 + (0.3 if i % 2 else -0.3) for i, q in enumerate(queries)})[1] is False  # noise
    lower = {q: 0.7 + (0.01 if i % 2 else -0.01) for i, q in enumerate(queries)}
    mean, beyond = paired(steady, lower)
    assert round(mean, 4) == -0.1 and beyond

    def report(keyword, semantic, hybrid):
        per_query = {"keyword": keyword, "semantic": semantic, "hybrid": hybrid}
        return {"queries": 40, "per_query": per_query, "results": {
            mode: {"ndcg@10": sum(scores.values()) / len(scores)} for mode, scores in per_query.items()}}

    worse = EvalSet("twins-ja", ROOT, "ja")
    fine = EvalSet("twins-en", ROOT, "en")
    rows = [(worse, report(steady, steady, steady), report(lower, steady, lower), None),
            (fine, report(steady, lower, steady), report(steady, lower, steady), None)]
    text = table(rows, ["keyword", "semantic", "hybrid"], "main")
    row = next(line for line in text.splitlines() if line.startswith("twins-ja "))
    assert row.count("-0.1000*") == 2 and "+0.0000 " in row  # keyword and hybrid fell; semantic did not move
    assert "  twins-ja: hybrid -0.1000 nDCG@10 against its better leg" in text
    assert "twins-en: hybrid" not in text


def test_the_table_names_every_set_whose_shown_scores_are_out_of_order(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools" / "eval"))
    from eval_all import EvalSet, side_tables
    from eval_lib import out_of_order

    assert out_of_order({"q1": [0.9, 0.5, 0.5], "q2": [0.4, 0.6], "q3": [], "q4": [0.7]}) == 0.25
    before = {"out_of_order": {"hybrid": 0.8, "keyword": 0.1}}
    after = {"out_of_order": {"hybrid": 0.0, "keyword": 0.0}}
    text = side_tables([(EvalSet("twins-ja", ROOT, "ja"), before, after, None),
                        (EvalSet("twins-en", ROOT, "en"), after, before, None)], ["keyword", "hybrid"], "main")
    assert "twins-ja                keyword 0.1000 -> 0.0000  hybrid 0.8000 -> 0.0000" in text
    assert "sets with a search out of order on this tree: twins-en" in text
