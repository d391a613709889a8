"""Keyword tokens for Japanese and English text, the same for documents and queries.

Japanese (and Chinese) runs are split into words by a morphological analyser (Sudachi, core
dictionary, short units) and indexed by their normalized forms, so 附属/付属 or
シュミレーション/シミュレーション meet; particles, auxiliary verbs, conjunctions, interjections and
symbols are left out, as Lucene's Japanese analyser leaves them out by default. Korean runs become
overlapping character bigrams. Latin words are lowercased and Snowball-stemmed; NFKC folds full-width forms.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from functools import lru_cache

# Bump when tokens change: an index built with other tokens is refused until --rebuild.
TOKENIZER_VERSION = "2"

# Kana (with ー), the iteration mark 々, CJK ideographs (with extension A and compatibility forms), Hangul.
# Classes are checked by code point outside _TOKEN: compiling a large class costs `re` about 5 ms.
_HANGUL = (0xAC00, 0xD7AF)
_CJK_RANGES = ((0x3005, 0x3005), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), _HANGUL)
_CJK = "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in _CJK_RANGES)
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*")
# The parts of speech Lucene's JapaneseAnalyzer drops (its stoptags), in Sudachi's names.
_STOP_PARTS_OF_SPEECH = frozenset({"助詞", "助動詞", "接続詞", "感動詞", "補助記号", "記号", "空白"})


def _within(text: str, ranges) -> bool:
    """Whether any character of `text` falls in one of the code point ranges."""
    return any(low <= ord(char) <= high for char in text for low, high in ranges)


def _is_cjk(char: str) -> bool:
    return char >= "\u3005" and _within(char, _CJK_RANGES)  # most text is below the first range


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: Snowball's C stemmers, imported in a millisecond

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word) if len(word) > 3 and word.isascii() and word.isalpha() else word


class _Analyser:
    """Sudachi's dictionary and the parts of speech to keep, loaded once; a tokenizer per thread, since a
    Sudachi tokenizer serves one call at a time (the HTTP face tokenizes in threads)."""

    def __init__(self):
        from sudachipy import Dictionary

        self.dictionary = Dictionary(dict="core")
        self.stop = self.dictionary.pos_matcher(lambda pos: pos[0] in _STOP_PARTS_OF_SPEECH)
        self._local = threading.local()

    @property
    def tokenizer(self):
        tokenizer = getattr(self._local, "tokenizer", None)
        if tokenizer is None:
            from sudachipy import SplitMode

            tokenizer = self._local.tokenizer = self.dictionary.tokenizer(
                mode=SplitMode.A, fields={"pos", "normalized_form", "surface"})
        return tokenizer


_ANALYSER: _Analyser | None = None
_ANALYSER_LOCK = threading.Lock()


def _analyser() -> _Analyser:
    global _ANALYSER
    if _ANALYSER is None:
        with _ANALYSER_LOCK:  # load the dictionary once, however many threads ask at the same time
            if _ANALYSER is None:
                _ANALYSER = _Analyser()
    return _ANALYSER


@lru_cache(maxsize=50_000)
def japanese_words(run: str) -> tuple[str, ...]:
    """The normalized forms of the content words in a run of Japanese text.

    A normalized form outside the Japanese script (二 -> 2) gives way to the surface form: a
    Japanese word must not match digits or Latin words in English text."""
    analyser = _analyser()
    words = []
    for morpheme in analyser.tokenizer.tokenize(run):
        if not analyser.stop(morpheme):
            form = morpheme.normalized_form()
            words.append(form if _within(form, _CJK_RANGES) else morpheme.surface())
    return tuple(words)


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Tokens in order, with repeats."""
    return list(_tokens(unicodedata.normalize("NFKC", text).lower()))


def _tokens(folded: str, japanese: bool = True):
    """The tokens of NFKC-folded, lowercased text, in order; its Japanese words (Sudachi's) only if `japanese`."""
    for match in _TOKEN.finditer(folded):
        run = match.group()
        if not _is_cjk(run[0]):
            yield _stem(run.replace("’", "'"))
        elif _within(run, (_HANGUL,)):
            yield from _bigrams(run)
        elif japanese:
            yield from japanese_words(run)


def term_frequencies(text: str) -> Counter:
    return Counter(tokenize(text))


def chunk_terms(title: str, text: str) -> Counter:
    """The terms a chunk is found by: its record's title and its text."""
    return term_frequencies(title + "\n" + text)


def is_japanese(term: str) -> bool:
    """Whether a term is a Japanese word (found by Sudachi), not a Latin word or a Korean bigram."""
    return _is_cjk(term[0]) and not _within(term, (_HANGUL,))


def counted_terms(title: str, text: str, terms) -> Counter:
    """How often each of `terms`, Latin words and Korean bigrams, occurs in a chunk's title and text, as
    chunk_terms() counts them, without Sudachi: its Japanese words take milliseconds a chunk."""
    wanted = set(terms)
    folded = unicodedata.normalize("NFKC", title + "\n" + text).lower()
    return Counter(token for token in _tokens(folded, japanese=False) if token in wanted)


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """The tokens of `text` as tokenize() makes them, each with where it stands: (start, end, token), in order.
    A Korean run is one span for all its bigrams."""
    spans: list[tuple[int, int, str]] = []
    for match in _TOKEN.finditer(text):
        run, start = match.group(), match.start()
        if not _is_cjk(run[0]):
            folded = unicodedata.normalize("NFKC", run).lower()
            spans.extend((start, match.end(), _stem(word.replace("’", "'")))
                         for word in _TOKEN.findall(folded))
        elif _within(run, (_HANGUL,)):
            spans.extend((start, match.end(), bigram) for bigram in _bigrams(run))
        else:
            analyser = _analyser()
            for morpheme in analyser.tokenizer.tokenize(run):
                if not analyser.stop(morpheme):
                    form = morpheme.normalized_form()
                    word = form if _within(form, _CJK_RANGES) else morpheme.surface()
                    spans.append((start + morpheme.begin(), start + morpheme.end(), word))
    return spans
