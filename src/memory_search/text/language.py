"""Which script a text is written in, for the language baseline: CJK or Latin, from its length in UTF-8 bytes."""

from __future__ import annotations

# CJK text: at least a tenth of whose characters take three bytes in UTF-8 (Japanese notes full of code and
# product names are mostly ASCII, but never under a tenth); the rest is Latin text.
CJK_SHARE = 0.1


def cjk_bytes_share(text: str) -> float:
    """The language of a text as the share of its characters that take three bytes in UTF-8 (kana, kanji,
    Hangul, full-width forms): about 0 for English, about 1 for Japanese. PostgreSQL computes the same from
    octet_length and char_length, without reading the text out."""
    return share_of_lengths(len(text.encode("utf-8", "surrogatepass")), len(text))


def share_of_lengths(octets: int, characters: int) -> float:
    """cjk_bytes_share from a text's length in UTF-8 bytes and in characters."""
    return min(1.0, max(0.0, (octets - characters) / (2 * characters))) if characters else 0.0


def is_cjk(share: float) -> bool:
    """Whether a text of this cjk_bytes_share counts as CJK script for the language baseline."""
    return share >= CJK_SHARE
