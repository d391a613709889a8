"""Fusing the semantic and keyword legs."""

from __future__ import annotations

import pytest

from memory_search.errors import UsageError
from memory_search.search.retrieval import Candidate, fuse


def _legs(coverage: float):
    semantic = [Candidate(1, "a", "", 0.90), Candidate(2, "b", "", 0.89), Candidate(3, "c", "", 0.88)]
    keyword = [Candidate(3, "c", "", 7.0, coverage=coverage)]
    return {"semantic": semantic, "keyword": keyword}


def test_first_in_every_leg_scores_one():
    fused = fuse({"semantic": [Candidate(1, "a", "", 0.9)], "keyword": [Candidate(1, "a", "", 3.0)]})
    assert fused == [(1, pytest.approx(1.0))]


def test_a_keyword_hit_counts_by_the_share_of_the_query_it_matched():
    alone = dict(fuse({"semantic": _legs(1.0)["semantic"], "keyword": [Candidate(9, "z", "", 1.0)]}))
    strong = dict(fuse(_legs(coverage=1.0)))
    weak = dict(fuse(_legs(coverage=0.05)))
    assert strong[3] > strong[1]  # a full match lifts a lower semantic hit to the top
    assert weak[3] - alone[3] == pytest.approx(0.05 * (strong[3] - alone[3]))


def test_a_chunk_first_in_both_legs_stays_first_when_a_lower_keyword_hit_matched_more_of_the_query():
    semantic = [Candidate(i, name, "", 0.9 - i / 100) for i, name in enumerate("abcde", 1)]
    keyword = [Candidate(1, "a", "", 19.3, coverage=0.7), Candidate(5, "e", "", 15.1, coverage=1.0)]
    fused = fuse({"semantic": semantic, "keyword": keyword})
    assert [chunk for chunk, _ in fused[:2]] == [1, 5]
    assert fused[0][1] == pytest.approx(1.0)  # first in both, so it counts as fully matched


def test_keyword_hits_that_all_matched_little_of_the_query_count_little():
    semantic = [Candidate(1, "a", "", 0.9), Candidate(2, "b", "", 0.8)]
    keyword = [Candidate(3, "c", "", 9.0, coverage=0.1), Candidate(4, "d", "", 8.0, coverage=0.05)]
    fused = fuse({"semantic": semantic, "keyword": keyword})
    assert [chunk for chunk, _ in fused] == [1, 2, 3, 4]


def test_plain_rrf_ignores_coverage():
    assert fuse(_legs(0.05), "rrf-equal") == fuse(_legs(1.0), "rrf-equal")


def test_convex_fusion_averages_each_legs_score_over_its_best():
    fused = dict(fuse(_legs(1.0), "convex"))
    assert fused[3] == pytest.approx((0.88 / 0.90 + 1.0) / 2)  # second to none in keyword, close in semantic
    assert fused[1] == pytest.approx(1.0 / 2)  # first in semantic only
    weak = dict(fuse(_legs(0.1), "convex"))
    assert weak[3] == pytest.approx((0.88 / 0.90 + 0.1) / 2)


def test_an_empty_leg_changes_nothing():
    semantic = _legs(1.0)["semantic"]
    assert [chunk for chunk, _ in fuse({"semantic": semantic, "keyword": []})] == [1, 2, 3]


def test_unknown_fusion_is_a_usage_error():
    with pytest.raises(UsageError):
        fuse(_legs(1.0), "max")


def test_a_page_in_the_questions_language_stays_before_its_twin_and_an_answer_only_the_other_holds_wins():
    from memory_search.search import relevance

    weights = relevance.calibration("local:multilingual-e5-small:384").fusion
    japanese_question = 0.95  # the share of its characters that are CJK

    def order(signals, shift):
        return [chunk_id for chunk_id, _ in relevance.fuse(signals, japanese_question, weights, shift)]

    # The Japanese page matched most of the question; its English twin is as close once the baseline lifts it.
    twins = {1: {"cos": 0.887, "bm25n": 0.40, "cov": 0.85, "lang": 0.47},
             2: {"cos": 0.865, "bm25n": 0.0, "cov": 0.0, "lang": 0.0},
             3: {"cos": 0.850, "bm25n": 0.10, "cov": 0.30, "lang": 0.60}}
    assert order(twins, shift=0.036)[0] == 1
    # Only the English note answers; the Japanese notes of the same week matched few of the question's words.
    elsewhere = {1: {"cos": 0.80, "bm25n": 0.05, "cov": 0.20, "lang": 0.50},
                 2: {"cos": 0.78, "bm25n": 0.0, "cov": 0.0, "lang": 0.0},
                 3: {"cos": 0.79, "bm25n": 0.04, "cov": 0.15, "lang": 0.55}}
    assert order(elsewhere, shift=0.05)[0] == 2
    # Without the margin the twin would have come first.
    assert order(twins, shift=0.036) != [chunk_id for chunk_id, _ in relevance.fuse(
        twins, japanese_question, {**weights, "own_language": 0.0}, 0.036)]
