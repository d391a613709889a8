"""Time words counted from a day at the calendar's ends (0001-01-01, a week before 9999-12-31): the window, and the
days around it a search looks at, stop at the calendar's ends instead of overflowing."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import index
from hypothesis import HealthCheck, given, settings, strategies as st
from test_timewords import _JAPANESE, _LATIN  # every time word the parser's tests know, in both scripts

import memory_search
from memory_search.errors import UsageError
from memory_search.search.retrieval import SearchRequest, search_in_time, shifted

_EDGES = [dt.date.min, dt.date.min + dt.timedelta(days=3), dt.date.max - dt.timedelta(days=6), dt.date.max]
_DAYS = st.one_of(st.sampled_from(_EDGES), st.dates())
_PHRASES = st.lists(st.sampled_from(_LATIN + _JAPANESE), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PHRASES, _DAYS)
def test_any_time_words_on_any_day_raise_nothing_but_a_refusal(query, today):
    """The search's whole path through time words (the window, then the days around it), with a search that
    finds nothing, so that the days around the window are always looked at."""
    request = SearchRequest(query, today=today)
    try:
        hits = search_in_time(request, lambda asked: [])
    except UsageError as refusal:  # a window that starts after it ends ("since 2030"): said, not raised
        assert "starts after it ends" in str(refusal)
        return
    if hits.window is not None:
        since, until = hits.window.widened(7)
        assert since is None or dt.date.min <= since
        assert until is None or until <= dt.date.max


def test_a_day_moved_past_the_calendars_ends_stops_there():
    assert shifted(dt.date.max - dt.timedelta(days=2), 7) == dt.date.max
    assert shifted(dt.date.min, -7) == dt.date.min
    assert shifted(dt.date(2026, 12, 1), -7) == dt.date(2026, 11, 24)


@pytest.mark.parametrize("today", [dt.date.min, dt.date.max - dt.timedelta(days=3), dt.date.max],
                         ids=["0001-01-01", "9999-12-28", "9999-12-31"])
def test_the_python_api_searches_and_lists_on_the_calendars_last_and_first_days(env, memories, today):
    memories.session("2026-11-03", "080000", "Tea tasting", "We brewed the green tea at 70 degrees.")
    index(env, memories)
    with memory_search.open(memories_dir=str(memories.root)) as library:
        for query in ("green tea last week", "先週のお茶", "green tea today", "tea 3 days ago", "昨日 tea"):
            library.search(query, today=today)  # raises nothing (the window may name no day there)
