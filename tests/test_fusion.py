"""Fusing the semantic and keyword legs."""

from __future__ import annotations

import pytest

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


def test_an_empty_leg_changes_nothing():
    semantic = _legs(1.0)["semantic"]
    assert [chunk for chunk, _ in fuse({"semantic": semantic, "keyword": []})] == [1, 2, 3]
