"""The relevance score: each hit's estimated probability that it answers the query, in [0, 1].

One small logistic model per mode over signals that mean the same in a collection of ten notes and of a
hundred thousand, each a property of the query and the hit: semantic, the cosine similarity; keyword,
BM25 divided by the query's own ceiling (the BM25 of a chunk holding every query term infinitely often)
and the share of the query's term weight the hit matched; hybrid, the learned fusion score below. No
signal compares a hit with the other hits (but for the keyword part of a hit in another language than the
query, below), so no score means "first of what exists". The parameters are data (data/relevance.json),
fitted by tools/calibrate.py on the development sets, for the bundled local model; an index built with
a model they do not cover keeps the earlier scores in semantic and hybrid search (cosine; reciprocal rank
fusion, 1.0 = first in both legs). The keyword model holds for every index.

Hybrid results are ordered by a learned linear fusion, `fuse`: the cosine plus a keyword part,
a x coverage^3 + b x normalised BM25, so the keyword leg weighs in where it matched most of the query.
A hit whose language differs from the query's (a Japanese question, an English note) cannot be matched
by keywords, so the keyword leg neither favours nor penalises it in the order: it is placed as if its
keyword part were the best among the hits in the query's language (its score reads its own). Nor can
its cosine be compared as it is: the model gives a question higher cosines with everything in its own
script, so where the index holds enough Latin and enough CJK text, a hit in the other script has its
cosine raised by the query's mean cosine with the chunks in its own script minus its mean cosine with
the chunks in the hit's (`language_shift`, from the mean vector of each script the indexer keeps): each
hit then stands against its own script's baseline. The baseline lifts a twin (the same page in the other
language) as far as the page itself, so a hit in the other language must be closer in meaning than a hit
in the query's language by 0.03 x that hit's coverage cubed to come before it: a page in the question's
language that matched its words comes first, and an answer only the other language holds still wins over
notes that matched few of them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

DATA_FILE = "relevance.json"
K1 = 1.2  # BM25's, as layouts.py scores the keyword leg
# The language baseline tells two scripts apart: CJK text, at least a tenth of whose characters take three
# bytes in UTF-8 (Japanese notes full of code and product names are mostly ASCII, but never under a tenth),
# and Latin text. A script with fewer chunks than this gives no baseline: its mean is then mostly the few
# notes it holds, the answer among them.
CJK_SHARE = 0.1
MIN_LANGUAGE_CHUNKS = 50


def cjk_bytes_share(text: str) -> float:
    """The language of a text as the share of its characters that take three bytes in UTF-8 (kana, kanji,
    Hangul, full-width forms): about 0 for English, about 1 for Japanese. PostgreSQL computes the same from
    octet_length and char_length, without reading the text out."""
    return share_of_lengths(len(text.encode("utf-8", "surrogatepass")), len(text))


def share_of_lengths(octets: int, characters: int) -> float:
    """cjk_bytes_share from a text's length in UTF-8 bytes and in characters."""
    return min(1.0, max(0.0, (octets - characters) / (2 * characters))) if characters else 0.0


@dataclass(frozen=True)
class Logistic:
    features: tuple[str, ...]
    intercept: float
    coef: tuple[float, ...]

    def __call__(self, signals: dict) -> float:
        z = self.intercept + sum(c * signals[name] for name, c in zip(self.features, self.coef))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    @classmethod
    def of(cls, data: dict) -> "Logistic":
        return cls(tuple(data["features"]), float(data["intercept"]), tuple(float(c) for c in data["coef"]))


@dataclass(frozen=True)
class Calibration:
    """The fitted parameters for one embedding model (semantic, hybrid, fusion) and for keywords."""

    keyword: Logistic
    semantic: Logistic | None
    hybrid: Logistic | None
    fusion: dict | None  # the hybrid ordering's weights: coverage_cubed, bm25n, language_gap

    def model(self, mode: str) -> Logistic | None:
        return getattr(self, mode)


@lru_cache(maxsize=1)
def data() -> dict:
    return json.loads(resources.files("memory_search").joinpath("data", DATA_FILE).read_text(encoding="utf-8"))


def semantic_cutoff() -> float:
    """The floor of the seed's semantic search. The seed drops semantic hits under cosine 0.3 (its model's), a
    lenient cut of what is clearly unrelated; on the relevance scale its counterpart is the largest floor that
    loses no right document of any development set in semantic mode, cross-lingual ones included
    (relevance.json, tools/calibrate.py)."""
    return data()["semantic_cutoff"]


@lru_cache(maxsize=8)
def calibration(model_key: str | None) -> Calibration:
    """The parameters for an index's embedding model (ModelSpec.key, None in keyword mode); semantic,
    hybrid and fusion are None for a model the data do not cover."""
    fitted = data()["models"].get(model_key or "", {})
    return Calibration(keyword=Logistic.of(data()["keyword"]),
                       semantic=Logistic.of(fitted["semantic"]) if "semantic" in fitted else None,
                       hybrid=Logistic.of(fitted["hybrid"]) if "hybrid" in fitted else None,
                       fusion=dict(fitted["fusion"]) if "fusion" in fitted else None)


def bm25_ceiling(weights: dict[str, float]) -> float:
    """The BM25 a chunk would reach holding every query term infinitely often: (k1 + 1) x the sum of the
    query's term weights."""
    return (K1 + 1) * sum(weights.values())


def judge(model: Logistic, signals: dict) -> tuple[float, dict]:
    """A hit's probability and the signals it was computed from (for --explain, JSON and LangBot)."""
    shown = {name: round(signals[name], 4) for name in model.features}
    if signals.get("imputed"):
        shown["cos_imputed"] = True  # the chunk waits for its embedding
    if signals.get("language_shift"):
        shown["language_shift"] = round(signals["language_shift"], 4)
    return model(signals), shown


def is_cjk(share: float) -> bool:
    """Whether a text of this cjk_bytes_share counts as CJK script for the language baseline."""
    return share >= CJK_SHARE


def language_shift(vector, query_language: float, signals: dict[int, dict],
                   means: dict[bool, tuple[int, list[float]]]) -> float:
    """What to add to the cosine of a hit in the other script than the query's: the query's mean cosine with
    the chunks in its own script minus that with the chunks in the other; 0 when no hit is in the other
    script, or the index holds fewer than MIN_LANGUAGE_CHUNKS of either. means: is_cjk -> (chunk count,
    mean vector), as the indexer keeps them."""
    own = is_cjk(query_language)
    if not any(is_cjk(signal["lang"]) != own for signal in signals.values()):
        return 0.0
    if min(means.get(own, (0,))[0], means.get(not own, (0,))[0]) < MIN_LANGUAGE_CHUNKS:
        return 0.0
    return sum(a * (b - c) for a, b, c in zip(vector, means[own][1], means[not own][1]))


def fuse(signals: dict[int, dict], query_language: float, weights: dict,
         shift: float = 0.0) -> list[tuple[int, float]]:
    """Chunk ids by the learned fusion score, best first (see the module's text); shift: language_shift's.
    Each signal's "fusion", which its score reads, holds its own keyword part: a hit in the other language
    is ordered with the best keyword part of the query's language, but not credited with another note's
    words, so its score can be below that of a hit shown after it."""
    gap = weights["language_gap"]
    keyword = {chunk_id: weights["coverage_cubed"] * signal["cov"] ** 3 + weights["bm25n"] * signal["bm25n"]
               for chunk_id, signal in signals.items()}
    other = {chunk_id for chunk_id, signal in signals.items() if abs(signal["lang"] - query_language) > gap}
    same = [keyword[chunk_id] for chunk_id in signals if chunk_id not in other]
    neutral = max(same) if other and same else None
    if neutral is not None:
        # A note in the question's language that matched most of its words stays before one in the other
        # language, unless that one is closer in meaning by more than this: a twin of the same page, which the
        # baseline lifts as far as any other note, does not take its place; an answer only the other language
        # holds, among notes that matched few of the question's words, still comes first.
        coverage = max(signal["cov"] for chunk_id, signal in signals.items() if chunk_id not in other)
        neutral -= weights.get("own_language", 0.0) * coverage ** 3
    order = {}
    for chunk_id, signal in signals.items():
        if shift and is_cjk(signal["lang"]) != is_cjk(query_language):
            signal["language_shift"] = shift
        semantic = signal["cos"] + signal.get("language_shift", 0.0)
        signal["fusion"] = semantic + keyword[chunk_id]
        order[chunk_id] = semantic + (neutral if neutral is not None and chunk_id in other else keyword[chunk_id])
    return sorted(order.items(), key=lambda item: -item[1])
