"""A text's languages are read from its prose: code, identifiers, commands, paths, URLs and numbers are set aside,
so a Japanese note full of code is Japanese and a note of Japanese and English paragraphs holds both."""

from __future__ import annotations

from conftest import seeded
from hypothesis import HealthCheck, given, settings, strategies as st

from memory_search.text.language import CJK, LATIN, languages, main_language, word_shares

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JAPANESE_WORDS = ["引き継ぎ", "毎週", "月曜", "確認する", "設定", "変更した", "ログ", "原因", "調査", "障害",
                  "対応", "手順", "本番", "環境", "デプロイ", "失敗", "再起動", "証明書", "期限", "更新", "の",
                  "を", "に", "は", "が", "で", "から", "まで", "ため", "こと"]
ENGLISH_WORDS = ["the", "handover", "happens", "every", "monday", "we", "checked", "logs", "after", "deploy", "failed",
                 "restart", "certificate", "expires", "renew", "before", "it", "was", "a", "cause", "of",
                 "outage", "and", "then", "our", "team", "reviews", "changes"]

PARTS = ["signature", "verification", "error", "handler", "webhook", "retry", "count", "max", "poll", "interval"]
word_part = st.sampled_from(PARTS)
identifiers = st.one_of(
    st.tuples(word_part, word_part).map(lambda p: p[0] + p[1].capitalize()),  # camelCase
    st.tuples(word_part, word_part, st.sampled_from(["Error", "Exception", ""])).map(
        lambda p: p[0].capitalize() + p[1].capitalize() + p[2]),  # PascalCase
    st.lists(word_part, min_size=2, max_size=3).map("_".join),  # snake_case
    st.lists(word_part, min_size=1, max_size=2).map(lambda p: "_".join(p).upper()),  # capitals, a variable
    st.tuples(st.sampled_from(["-", "--"]), word_part, st.integers(0, 99)).map(
        lambda p: f"{p[0]}{p[1]}={p[2]}"),  # a command's flag
    st.lists(word_part, min_size=2, max_size=3).map(".".join),  # dotted
    st.tuples(st.integers(0, 2000), st.integers(0, 99)).map(lambda p: f"v{p[0]}.{p[1]}"),  # numbers, versions
    st.lists(word_part, min_size=1, max_size=3).map(lambda p: "https://example.com/" + "/".join(p)),  # URLs
    st.lists(word_part, min_size=2, max_size=4).map(lambda p: "/".join(p) + ".py"),  # paths
)
inline_code = st.text(st.characters(blacklist_characters="`\n", blacklist_categories=("Cs",)), min_size=1,
                      max_size=30).map(lambda text: f"`{text}`")
code_block = st.lists(st.text(st.characters(blacklist_characters="`~", blacklist_categories=("Cs",)), max_size=60),
                      min_size=1, max_size=8).map(lambda lines: "\n```bash\n" + "\n".join(lines) + "\n```\n")
noise = st.one_of(identifiers, inline_code, code_block)


def prose(words: list[str]):
    """Sentences of at least eight words of the list, with anything set aside between the words."""
    return st.lists(st.tuples(st.sampled_from(words), st.lists(noise, max_size=2)), min_size=8, max_size=40)


def written(parts, japanese: bool) -> str:
    out = []
    for word, aside in parts:
        out.append(word)
        out.extend(aside)
    return ("" if japanese else " ").join(f" {part} " if part.isascii() else part for part in out) + (
        "。" if japanese else ".")


@seeded
@FAST
@given(prose(JAPANESE_WORDS), st.lists(noise, max_size=30))
def test_japanese_prose_full_of_code_is_japanese(parts, more):
    text = written(parts, japanese=True) + "\n" + "\n".join(more)
    assert languages(text) == {CJK}
    assert main_language(text) == CJK


@seeded
@FAST
@given(prose(ENGLISH_WORDS), st.lists(noise, max_size=30))
def test_english_prose_full_of_code_is_english(parts, more):
    text = written(parts, japanese=False) + "\n" + "\n".join(more)
    assert languages(text) == {LATIN}
    assert main_language(text) == LATIN


@seeded
@FAST
@given(prose(JAPANESE_WORDS), prose(ENGLISH_WORDS), st.lists(noise, max_size=10), st.booleans())
def test_a_note_of_japanese_and_english_paragraphs_holds_both(japanese, english, more, english_first):
    if not 0.5 <= len(japanese) / len(english) <= 2:  # paragraphs of comparable length
        english = english[: 2 * len(japanese)]
        japanese = japanese[: 2 * len(english)]
    paragraphs = [written(japanese, japanese=True), written(english, japanese=False)]
    text = "\n\n".join((paragraphs[::-1] if english_first else paragraphs) + ["\n".join(more)])
    assert languages(text) == {CJK, LATIN}


@seeded
@FAST
@given(st.lists(noise, max_size=30))
def test_code_alone_is_in_no_language(parts):
    text = "\n".join(parts)
    assert languages(text) == frozenset() and main_language(text) is None


@seeded
@FAST
@given(st.text(max_size=400))
def test_any_text_has_shares_that_add_up_to_one_or_none(text):
    shares = word_shares(text)
    assert not shares or abs(sum(shares.values()) - 1.0) < 1e-9
    assert languages(text) <= {CJK, LATIN}
