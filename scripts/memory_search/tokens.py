"""Keyword tokens for Japanese and English text, the same for documents and queries.

CJK runs become overlapping character bigrams (so a two-character word is found inside a
longer run); Latin words are lowercased and Snowball-stemmed; NFKC folds full-width forms.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

TOKENIZER_VERSION = "1"

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u30fc\u3005"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*")
_IS_CJK = re.compile(rf"[{_CJK}]")


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word) if len(word) > 3 and word.isascii() and word.isalpha() else word


def tokenize(text: str) -> list[str]:
    """Tokens in order, with repeats."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = match.group()
        if _IS_CJK.match(run):
            if len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(_stem(run.replace("’", "'")))
    return tokens


def term_frequencies(text: str) -> Counter:
    return Counter(tokenize(text))
