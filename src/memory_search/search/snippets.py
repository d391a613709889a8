"""A short snippet from the lines of a chunk that match the query best."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

SNIPPET_CHARS = 200
_SPACE = re.compile(r"\s+")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")


def snippet(text: str, weights: dict[str, float], limit: int = SNIPPET_CHARS) -> str:
    """The line of a chunk with the most query weight, and what follows it, in at most `limit` characters."""
    lines = text.split("\n")
    best, best_score = 0, 0.0
    # A query term counts where its text occurs in the line: cheaper than analysing every line, and a
    # stem (e.g. "index") or a Japanese word occurs in the words it was made from.
    for number, line in enumerate(lines):
        folded = unicodedata.normalize("NFKC", line).lower()
        score = sum(weight for token, weight in weights.items() if token in folded)
        if score > best_score:
            best, best_score = number, score
    pieces, size = [], 0
    for line in lines[best:]:
        cleaned = _SPACE.sub(" ", _MARKUP.sub("", line)).strip()
        if not cleaned or cleaned.startswith(("```", "~~~")):
            continue
        pieces.append(cleaned)
        size += len(cleaned) + 1
        if size >= limit:
            break
    joined = " ".join(pieces)
    if len(joined) > limit:
        joined = joined[: limit - 1].rstrip() + "…"
    return joined


# Markup inside a line that a reader should not see in a snippet: images and links as their text, wikilinks as
# their label or target, ** emphasis, strike-through and code marks dropped, a table's pipes as spaces.
_INLINE_MARKUP = (
    (re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]"), lambda found: found[2] or found[1]),
    (re.compile(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)"), lambda found: found[1]),
    (re.compile(r"(\*\*|~~)(?=\S)(.+?)(?<=\S)\1"), lambda found: found[2]),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=\S)\*(?![\w*])"), lambda found: found[1]),
    (re.compile(r"`+"), lambda found: ""),
    (re.compile(r"\*\*|~~"), lambda found: ""),  # a pair the snippet's cut split
    (re.compile(r"\s*\|(?:\s*:?-{3,}:?\s*\|)*\s*"), lambda found: " "),
)


def plain(snippet_text: str) -> str:
    """A snippet without the Markdown inside its lines (snippet() already drops what opens a line)."""
    for pattern, replace in _INLINE_MARKUP:
        snippet_text = pattern.sub(replace, snippet_text)
    return _SPACE.sub(" ", snippet_text).strip()


# Words a question is made of that say nothing of its subject: marked in a snippet they are noise. English as
# Lucene's stop set with the words of a question; Japanese as the nouns and verbs that do a grammatical job
# (する, なる, こと, 方...). Read through tokenize(), so they are in the form a query's tokens take.
_NOISE = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with what which who whom when where why how do does did done we i you he she me my our your "
    "us them its been being have has had can could should would may might about from than also just any some "
    "する なる ある いる ない こと 事 もの 物 よう 様 ため 為 とき 時 ところ 所 方 ほう "
    "これ それ あれ どれ この その あの どの どう 何 なに なん "
    "言う 思う できる について 知りたい くれる もらう ください おく しまう みる"
)


@lru_cache(maxsize=1)
def _noise() -> frozenset[str]:
    from ..text.tokens import tokenize

    return frozenset(tokenize(_NOISE))


def content_terms(query: str) -> set[str]:
    """The query's keyword terms (tokenize()'s) that name its subject: without the words of its grammar and
    without a single kana."""
    from ..text.tokens import tokenize

    noise = _noise()
    return {term for term in tokenize(query) if term not in noise
            and not (len(term) == 1 and "\u3040" <= term <= "\u30ff")}


def marks(text: str, query: str) -> list[tuple[int, int]]:
    """Where the words of `text` that the query's content words match stand in it: (start, end) character
    offsets, in order, not overlapping; the same tokens as the keyword search (a stem, a Japanese word's normal
    form), less the words of the question's grammar (content_terms)."""
    from ..text.tokens import token_spans

    wanted = content_terms(query)
    found: list[tuple[int, int]] = []
    for start, end, token in token_spans(text):
        if token in wanted:
            if found and start <= found[-1][1]:
                found[-1] = (found[-1][0], max(end, found[-1][1]))
            else:
                found.append((start, end))
    return found
