"""Properties that hold for any input: the frontmatter splitter, the tokenizer, the --where parser, the
chunker, the turns of a chunk and the twins of paths never let an exception escape and keep their promises."""

from __future__ import annotations

import json
import unicodedata

from conftest import seeded
from hypothesis import HealthCheck, given, settings, strategies as st

from memory_search.directory.files import BadMemory, split_frontmatter
from memory_search.directory.records import make_record
from memory_search.errors import ParameterError
from memory_search.search.filters import Filters, matches, parse_where
from memory_search.text.chunking import MAX_CHARS, chunk_markdown, turn_spans
from memory_search.text.tokens import chunk_terms, counted_terms, is_japanese, tokenize

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

markdown_lines = st.lists(st.one_of(
    st.sampled_from(["---", "----", "# Title", "## Part", "```", "~~~", "", "  ", "- item", "title: x", "a: [",
                     "date: 2026-13-45", "status: [superseded]", "x: &a [1]", "y: *a", "> quote", "\t", "---  ",
                     "**Ann**: hi there", "Bob: hello " + "word " * 40, "田中：はい、" + "了解です。" * 30,
                     "佐藤: 了解",
                     "- **Ann**: a list turn", "**Bob**:", "User: " + "x" * 900]),
    st.text(max_size=80),
), max_size=40)


@seeded
@FAST
@given(markdown_lines)
def test_the_frontmatter_splitter_returns_a_suffix_or_a_reason(lines):
    text = "\n".join(lines)
    try:
        metadata, body, first_line = split_frontmatter(text)
    except BadMemory as reason:
        assert str(reason)
        return
    assert isinstance(metadata, dict)
    assert text.endswith(body)
    assert first_line == text[: len(text) - len(body)].count("\n") + 1
    json.dumps(metadata)  # always storable as jsonb
    make_record("/m/wiki/x.md", "wiki/x.md", metadata, body)


@seeded
@FAST
@given(st.text(max_size=300))
def test_tokenizing_is_the_same_after_nfkc_and_never_fails(text):
    tokens = tokenize(text)
    assert tokens == tokenize(unicodedata.normalize("NFKC", text))
    assert all(token and not token.isspace() for token in tokens)


mixed_text = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(
    ["Kettle", "kettles", "DESCALE", "don’t", "naïve", "ｆｕｌｌ", "한국어", "서울에서", "会議は水曜日", "予算", "R&D",
     "e-mail", "２０２６年", " ", "\n", "\u3000", "。", "'"])), max_size=40).map("".join)


@seeded
@FAST
@given(st.text(max_size=40), mixed_text, st.lists(st.text(min_size=1, max_size=6), max_size=4))
def test_a_chunks_latin_and_korean_terms_are_counted_as_the_indexer_counts_them(title, text, others):
    # The keyword leg scores its best candidates again by counting the query's terms without Sudachi.
    indexed = chunk_terms(title, text)
    wanted = [term for term in [*indexed, *others] if not is_japanese(term)]
    counted = counted_terms(title, text, wanted)
    assert all(counted[term] == indexed[term] for term in wanted if term in indexed)
    assert set(counted) <= set(wanted)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                           | st.text(max_size=10), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@seeded
@FAST
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4), json_values)
def test_where_either_parses_or_is_a_usage_error(document, value):
    text = json.dumps(document)
    try:
        conditions = parse_where(text)
    except ParameterError as error:  # named by each face in its own words: --where, where
        assert str(error).startswith("where") and error.spelled("--where").startswith("--where")
        return
    filters = Filters(include_superseded=True, where=conditions)
    record = make_record("/m/wiki/x.md", "wiki/x.md", {"a": value, "status": "active"})
    assert matches(filters, record) in (True, False)


@seeded
@FAST
@given(markdown_lines, st.integers(min_value=1, max_value=50))
def test_chunks_cover_every_line_of_text_in_order(lines, first_line):
    body = "\n".join(lines)
    chunks = chunk_markdown(body, first_line)
    body_lines = body.split("\n")
    last = first_line + len(body_lines) - 1
    previous_start = first_line
    for chunk in chunks:
        assert first_line <= chunk.start_line <= chunk.end_line <= last
        assert chunk.start_line >= previous_start
        previous_start = chunk.start_line
        assert chunk.text.strip() and len(chunk.text) <= MAX_CHARS
    covered = {number for chunk in chunks for number in range(chunk.start_line, chunk.end_line + 1)}
    for number, line in enumerate(body_lines, first_line):
        if line.strip() and not line.strip().startswith(("```", "~~~")):
            assert number in covered, (number, line)


@seeded
@FAST
@given(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Zs", "Cc", "Zl", "Zp"),
                                      exclude_characters="。、"), min_size=1, max_size=40), min_size=1, max_size=400),
       st.sampled_from([" ", "  ", "\u3000"]))
def test_a_line_longer_than_a_chunk_is_cut_between_its_words(words, space):
    line = space.join(words) + " filler" * (MAX_CHARS // 7)  # longer than a chunk, whatever the words
    chunks = chunk_markdown(line)
    assert all(len(chunk.text) <= MAX_CHARS and (chunk.start_line, chunk.end_line) == (1, 1) for chunk in chunks)
    assert " ".join(chunk.text for chunk in chunks).split() == line.split()


@seeded
@FAST
@given(st.text(max_size=200), st.text(max_size=60))
def test_marks_are_ordered_disjoint_spans_inside_the_text(text, query):
    from memory_search.search.snippets import marks

    spans = marks(text, query)
    assert all(0 <= start < end <= len(text) for start, end in spans)
    assert all(first[1] < second[0] for first, second in zip(spans, spans[1:]))
    assert marks(text, "") == []


@seeded
@FAST
@given(markdown_lines, st.integers(min_value=1, max_value=10_000))
def test_turn_spans_lie_within_the_text_in_order(lines, first_line):
    text = "\n".join(lines)
    spans = turn_spans(text, first_line)
    last = first_line + text.count("\n")
    for (start, end), following in zip(spans, spans[1:] + [(last + 1, last + 1)]):
        assert first_line <= start <= end < following[0] <= last + 1


_code_line = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Zl", "Zp", "Cs")), max_size=90).filter(
    lambda line: not line.lstrip().startswith(("#", "```", "~~~")))
_prose = st.sampled_from(["検索の品質を測るための手順を書いておく。", "The answer is in the section below.",
                          "オンコールの引き継ぎは月曜に行う。", "Run the command and read its output.", "- 項目",
                          "> 引用"])


@st.composite
def _notes(draw) -> str:
    """Markdown as notes are written: headings straight after headings, sections of a line or two, long ones,
    code fences (some longer than a chunk), tables."""
    parts = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["heading", "heading", "short", "long", "code", "table", "blank"]))
        if kind == "heading":
            title = draw(st.sampled_from(["背景", "Setup", "手順", "Notes"]))
            parts.append("#" * draw(st.integers(1, 4)) + " " + title)
        elif kind == "short":
            parts.append("\n".join(draw(st.lists(_prose, min_size=1, max_size=2))))
        elif kind == "long":
            parts.append("\n".join(draw(st.lists(_prose, min_size=3, max_size=60))))
        elif kind == "code":
            fence = draw(st.sampled_from(["```", "~~~", "```bash"]))
            parts.append("\n".join([fence, *draw(st.lists(_code_line, max_size=80)), fence[:3]]))
        elif kind == "table":
            rows = draw(st.integers(1, 40))
            parts.append("\n".join(["| key | value |", "| --- | --- |", *(f"| k{i} | 値{i} |" for i in range(rows))]))
        else:
            parts.append("")
    return draw(st.sampled_from(["\n\n", "\n"])).join(parts)


@seeded
@FAST
@given(_notes(), st.integers(min_value=1, max_value=30))
def test_no_chunk_is_a_heading_alone_and_every_line_is_in_a_chunk_at_its_place(body, first_line):
    import re

    chunks = chunk_markdown(body, first_line)
    lines = body.split("\n")
    heading = re.compile(r"^#{1,6}\s")
    if any(line.strip() and not heading.match(line) for line in lines):
        for chunk in chunks:
            assert any(line.strip() and not heading.match(line) for line in chunk.text.split("\n")), chunk
    for chunk in chunks:
        assert len(chunk.text) <= MAX_CHARS
        assert chunk.text == "\n".join(lines[chunk.start_line - first_line:chunk.end_line - first_line + 1]).strip()
    covered = {number for chunk in chunks for number in range(chunk.start_line, chunk.end_line + 1)}
    assert all(number in covered for number, line in enumerate(lines, first_line) if line.strip())
