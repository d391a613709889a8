"""A short snippet from the lines of a chunk that match the query best."""

from __future__ import annotations

import re
import unicodedata

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


def marks(text: str, query: str) -> list[tuple[int, int]]:
    """Where the words of `text` that the query's words match stand in it: (start, end) character offsets,
    in order, not overlapping; the same tokens as the keyword search (a stem, a Japanese word's normal form)."""
    from ..text.tokens import token_spans, tokenize

    wanted = set(tokenize(query))
    found: list[tuple[int, int]] = []
    for start, end, token in token_spans(text):
        if token in wanted:
            if found and start <= found[-1][1]:
                found[-1] = (found[-1][0], max(end, found[-1][1]))
            else:
                found.append((start, end))
    return found
