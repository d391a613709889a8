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

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u30fc\u3005"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*")
_IS_CJK = re.compile(rf"[{_CJK}]")
_IS_HANGUL = re.compile(r"[\uac00-\ud7af]")
# The parts of speech Lucene's JapaneseAnalyzer drops (its stoptags), in Sudachi's names.
_STOP_PARTS_OF_SPEECH = frozenset({"助詞", "助動詞", "接続詞", "感動詞", "補助記号", "記号", "空白"})


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


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
            words.append(form if _IS_CJK.search(form) else morpheme.surface())
    return tuple(words)


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Tokens in order, with repeats."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = match.group()
        if not _IS_CJK.match(run):
            tokens.append(_stem(run.replace("’", "'")))
        elif _IS_HANGUL.search(run):
            tokens.extend(_bigrams(run))
        else:
            tokens.extend(japanese_words(run))
    return tokens


def term_frequencies(text: str) -> Counter:
    return Counter(tokenize(text))
