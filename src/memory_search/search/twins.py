"""Twins: the same page kept in two languages, found by the paths documentation sites and vaults give them.

`docs/ja/setup.md` and `docs/en/setup.md`, or `setup.ja.md` and `setup.en.md` (Hugo, MkDocs i18n): a path
with a language code as a folder or before the extension names its language, and paths that differ only there
are one page. A site's default language often goes without a code (`setup.md` beside `setup.ja.md`): that file
is the page in the other script. A question then wants the page in its own language first: the twin in the
other says the same, and is shown after it. No other hit moves, and a page with no twin among the hits (an
answer only the other language holds) keeps its place.
"""

from __future__ import annotations

import re

# ISO 639-1 codes of the languages notes are commonly kept in, with the regional forms sites use (zh-hans,
# pt-br, en-us). CJK: the languages whose text is in CJK script, as the query's language is told.
CJK_LANGUAGES = frozenset({"ja", "zh", "ko"})
LANGUAGES = CJK_LANGUAGES | frozenset({"en", "fr", "de", "es", "pt", "it", "nl", "ru", "uk", "pl", "sv", "da", "no",
                                       "nb", "fi", "cs", "tr", "vi", "th", "id", "hi", "ar", "he"})
_CODE = r"([a-z]{2})(?:[-_][a-z]{2,4})?"
_FOLDER = re.compile(rf"(?:^|/){_CODE}(?=/)", re.IGNORECASE)
_SUFFIX = re.compile(rf"\.{_CODE}(?=\.[A-Za-z0-9]+$)", re.IGNORECASE)


def page_and_language(path: str) -> tuple[str, str] | None:
    """(the page: the path with its language code marked out, the code) when the path names a language, else
    None."""
    named = _named(path)
    return named[:2] if named else None


def _named(path: str) -> tuple[str, str, str | None] | None:
    """The page, the code and, for a code before the extension, the path without it (its default-language twin's)."""
    for pattern in (_SUFFIX, _FOLDER):
        for match in pattern.finditer(path):
            code = match.group(1).lower()
            if code in LANGUAGES:
                bare = path[:match.start()] + path[match.end():] if pattern is _SUFFIX else None
                return path[:match.start()] + "\0" + path[match.end():], code, bare
    return None


def own_language_first(order: list[tuple[int, float]], filename_of: dict[int, str],
                       query_is_cjk: bool) -> list[tuple[int, float]]:
    """Chunks best first, with each page in the question's language moved before its twin in the other
    language where the twin came first; every other chunk keeps its order."""
    first: dict[str, int] = {}  # file -> the position of its best chunk
    for position, (chunk_id, _) in enumerate(order):
        first.setdefault(filename_of[chunk_id], position)
    pages: dict[str, dict[bool, str]] = {}  # page -> is the question's language -> the file shown first
    for filename in sorted(first, key=first.get):
        named = _named(filename)
        if named is None:
            continue
        own = (named[1] in CJK_LANGUAGES) == query_is_cjk
        sides = pages.setdefault(named[0], {})
        sides.setdefault(own, filename)
        if named[2] in first and _named(named[2]) is None:  # setup.md beside setup.ja.md: the other script's
            sides[not own] = min(sides.get(not own, named[2]), named[2], key=first.get)
    # the position of a twin shown first -> that of the page in the question's language, shown before it now
    lifted = {first[pair[False]]: first[pair[True]] for pair in pages.values()
              if len(pair) == 2 and first[pair[True]] > first[pair[False]]}
    if not lifted:
        return order
    moved = set(lifted.values())
    result = []
    for position, item in enumerate(order):
        if position in lifted:
            result.append(order[lifted[position]])
        if position not in moved:
            result.append(item)
    return result
