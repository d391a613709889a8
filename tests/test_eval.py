"""tools/eval.py over our own cross-lingual set: the same retrieval code, scored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT


def run_eval(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools/eval.py"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


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
