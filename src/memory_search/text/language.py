"""The languages a text is written in, read from its words.

Notes people keep mix prose with what is in no language: code blocks, inline code, identifiers
(`SignatureVerificationError`, `ef_search`, `HNSW`), commands and flags, paths, URLs and numbers. Those are set
aside, and what remains is counted in words: a CJK character as half a word (a Japanese word is about two
characters), a Latin word as one. A text holds a script when at least HOLDS of its words are in it: a Japanese
note full of code is Japanese, a note with Japanese and English paragraphs holds both, and a note of code alone
holds neither (nothing in it says which words it could contain).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

CJK, LATIN = "cjk", "latin"
HOLDS = 0.2  # the share of a text's words in a script from which the text holds it
CJK_CHARACTERS_PER_WORD = 2.0
# The language baseline's mean vectors are kept per script by the indexer in SQL (storage/writer.py), without
# reading the chunks' text out: there a chunk counts as CJK when at least a tenth of its characters take three
# bytes in UTF-8 (a Japanese note full of code is mostly ASCII, but never under a tenth).
CJK_SHARE = 0.1

# Kana (with ー), 々, CJK ideographs (extension A and compatibility forms included), Hangul: tokens.py's ranges.
_CJK_CLASS = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INDENTED = re.compile(r"(?:^(?: {4}|\t)[^\n]*\n?)+", re.MULTILINE)  # an indented code block
_INLINE = re.compile(r"`+[^`\n]*`+")
# ASCII classes only: a class that takes CJK characters would be tried from every character of a Japanese line.
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s)>\]、。]+|(?<![A-Za-z0-9.])www\.[^\s)>\]、。]+"
                  r"|(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]+")
_PATH = re.compile(r"(?<![A-Za-z0-9_.~/-])(?:~|\.{1,2})?/[A-Za-z0-9_.~/-]+|(?<![A-Za-z0-9_.~/-])[A-Za-z0-9_.-]+"
                   r"(?:/[A-Za-z0-9_.-]+)+")
# Each pattern is tried only on a text that holds what it needs.
_SET_ASIDE = ((("```", "~~~"), _FENCE), (("\n    ", "\n\t"), _INDENTED), (("`",), _INLINE),
              (("://", "www.", "@"), _URL), (("/",), _PATH))
# A word of prose: letters, lower case or capitalised (an apostrophe inside), or the words a, A and I; not a
# part of an identifier, a flag or a dotted or joined name (no ASCII letter, digit or joiner of code against it).
_NATURAL_WORD = re.compile(r"(?<![A-Za-z0-9_.:$#=/@-])(?:[A-Za-z][a-z]+(?:['’][a-z]+)?|[aAI])"
                           r"(?![A-Za-z0-9_:$#=@]|[.'’-][A-Za-z0-9_])")


def natural_text(text: str) -> str:
    """The text with code blocks, inline code, URLs and paths taken out (each left as a space)."""
    text = "\n" + unicodedata.normalize("NFKC", text)  # a first line indented is a code block too
    for needs, pattern in _SET_ASIDE:
        if any(need in text for need in needs):
            text = pattern.sub(" ", text)
    return text


def natural_words(text: str) -> tuple[list[str], int]:
    """The Latin words of prose in a text, and its count of CJK characters outside code, URLs and paths."""
    natural = natural_text(text)
    return _NATURAL_WORD.findall(natural), sum(len(run) for run in _CJK_RUN.findall(natural))


def word_shares(text: str) -> dict[str, float]:
    """The share of the text's words of prose in each script (empty when it has none)."""
    words, characters = natural_words(text)
    counts = {CJK: characters / CJK_CHARACTERS_PER_WORD, LATIN: float(len(words))}
    total = sum(counts.values())
    return {script: count / total for script, count in counts.items()} if total else {}


@lru_cache(maxsize=4096)  # a server searches the same chunks again and again
def languages(text: str) -> frozenset[str]:
    """The scripts the text is written in (CJK, LATIN): each holding at least HOLDS of its words of prose;
    empty for a text with none (code, numbers, a path)."""
    return frozenset(script for script, share in word_shares(text).items() if share >= HOLDS)


def main_language(text: str) -> str | None:
    """The script most of the text's words of prose are in (CJK on a tie), None when it has none."""
    shares = word_shares(text)
    if not shares:
        return None
    return CJK if shares[CJK] >= shares[LATIN] else LATIN


def is_cjk_term(term: str) -> bool:
    """Whether a keyword term (tokens.py's) is a CJK word or bigram."""
    return bool(_CJK_RUN.match(term))
