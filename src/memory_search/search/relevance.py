"""The relevance score: each hit's estimated probability that it answers the query, in [0, 1].

One small logistic model per mode over signals that mean the same in a collection of ten notes and of a
hundred thousand, each a property of the query and the hit (the lift also of the index's mean): semantic, the
cosine similarity; keyword, BM25 divided by the query's own ceiling (the BM25 of a chunk holding every query
term infinitely often) and the share of the query's term weight the hit matched; hybrid, the lift below. No
signal compares a hit with the other hits shown, so no score means "first of what exists". The parameters are data
(data/relevance.json), fitted by tools/eval/calibrate.py on the development sets, for the bundled local model; an
index built with a model they do not cover keeps the earlier scores in semantic and hybrid search (cosine;
reciprocal rank fusion, 1.0 = first in both legs). The keyword model holds for every index. In every mode the
hits are listed in the order of the score shown (retrieval.py): one number orders and scores.

Hybrid: the fused value is the cosine plus a keyword part. The query's terms a hit can hold are the words
of the languages it is written in (text/language.py, read from its prose), the terms any note can hold
(identifiers, names in capitals, numbers) and any term it does hold; `attainable` is their share of the
query's term weight. The keyword part is attainable x a x coverage^3 + b x normalised BM25 + (1 - attainable)
x `unattainable`, coverage counted over the terms it can hold: a note in the other language than the question
is neither credited with nor penalised for the words it could not contain, which count for a fitted constant
(relevance.json; 0 on the development sets, chosen on every collection left out). Nor can a cosine across
languages be compared as it is: the model gives a question higher cosines with everything in its own script,
so where the index holds enough Latin and enough CJK text, a hit not written in the question's language has
its cosine raised by the query's mean cosine with the chunks in its script minus its mean cosine with the
chunks in the hit's (`language_shift`, from the mean vector of each script the indexer keeps): each hit then
stands against its own script's baseline.

The hybrid score is a logistic model of the lift: the fused value less the query's baseline, its mean cosine with
the index's chunks in its own script (`baseline`). The fused value orders one search's hits but its level differs
by language and by how close the question is to everything the index holds; the baseline is the same for every
hit of a search, so the lift keeps the order and moves where 0.5 falls for each question.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..text.language import CJK

DATA_FILE = "relevance.json"
K1 = 1.2  # BM25's, as layouts.py scores the keyword leg
# A script with fewer chunks than this gives no language baseline (text.language.CJK_SHARE tells the scripts
# apart): its mean is then mostly the few notes it holds, the answer among them.
MIN_LANGUAGE_CHUNKS = 50


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
    fusion: dict | None  # the hybrid fusion's weights: coverage_cubed, bm25n, unattainable; and baseline's fallback

    def model(self, mode: str) -> Logistic | None:
        return getattr(self, mode)


@lru_cache(maxsize=1)
def data() -> dict:
    return json.loads(resources.files("memory_search").joinpath("data", DATA_FILE).read_text(encoding="utf-8"))


def semantic_cutoff() -> float:
    """The floor of the seed's semantic search. The seed drops semantic hits under cosine 0.3 (its model's), a
    lenient cut of what is clearly unrelated; on the relevance scale its counterpart is the largest floor that
    loses no right document of any development set in semantic mode, cross-lingual ones included
    (relevance.json, tools/eval/calibrate.py)."""
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
    if "baseline" in signals:  # the lift is the fused value less the query's mean cosine with the index
        shown.update(fusion=round(signals["fusion"], 4), baseline=round(signals["baseline"], 4))
    if signals.get("attainable", 1.0) < 1.0:  # the share of the query's term weight its languages can hold
        shown["attainable"] = round(signals["attainable"], 4)
    return model(signals), shown


def other_language(signal: dict, query_language: str | None) -> bool:
    """Whether a hit is written in other languages than the question's main one (a hit of code alone is not)."""
    return query_language is not None and bool(signal["languages"]) and query_language not in signal["languages"]


def language_shift(vector, query_language: str | None, signals: dict[int, dict],
                   means: dict[bool, tuple[int, list[float]]]) -> float:
    """What to add to the cosine of a hit in the other script than the query's: the query's mean cosine with
    the chunks in its own script minus that with the chunks in the other; 0 when no hit is in the other
    script, or the index holds fewer than MIN_LANGUAGE_CHUNKS of either. means: is CJK -> (chunk count,
    mean vector), as the indexer keeps them."""
    if not any(other_language(signal, query_language) for signal in signals.values()):
        return 0.0
    own = query_language == CJK
    if min(means.get(own, (0,))[0], means.get(not own, (0,))[0]) < MIN_LANGUAGE_CHUNKS:
        return 0.0
    return sum(a * (b - c) for a, b, c in zip(vector, means[own][1], means[not own][1]))


def baseline(vector, query_language: str | None, means: dict[bool, tuple[int, list[float]]],
             fallback: float) -> float:
    """The query's mean cosine with the index's chunks in its own script, from the mean vectors the indexer
    keeps; `fallback` (the development questions' median) where the index holds fewer than MIN_LANGUAGE_CHUNKS
    of them: a few notes' mean is mostly those notes, and the other script's mean is on another scale."""
    count, mean = means.get(query_language == CJK, (0, []))
    if count >= MIN_LANGUAGE_CHUNKS and mean:
        return sum(a * b for a, b in zip(vector, mean))
    return fallback


def fuse(signals: dict[int, dict], query_language: str | None, weights: dict,
         shift: float = 0.0, base: float = 0.0) -> list[tuple[int, float]]:
    """Chunk ids by their fused value, best first (see the module's text), each signal's "fusion" set to it and
    "lift" to it minus the query's baseline. signals: as `attainable` left them; query_language:
    language.main_language's; shift: language_shift's; base: baseline's."""
    order = {}
    for chunk_id, signal in signals.items():
        if shift and other_language(signal, query_language):
            signal["language_shift"] = shift
        semantic = signal["cos"] + signal.get("language_shift", 0.0)
        share = signal["attainable"]
        keyword = (share * weights["coverage_cubed"] * signal["cov"] ** 3 + weights["bm25n"] * signal["bm25n"]
                   + (1 - share) * weights["unattainable"])
        signal["fusion"] = semantic + keyword
        signal["baseline"] = base
        signal["lift"] = signal["fusion"] - base
        order[chunk_id] = signal["fusion"]
    return sorted(order.items(), key=lambda item: -item[1])


def attainable(signal: dict, languages: frozenset[str], scripts: dict[str, str | None], weights: dict[str, float],
               found: set[str]) -> None:
    """Restrict a hit's coverage to the query terms it can hold. scripts: each query term's script
    (language.CJK, LATIN), None for a term any note can hold; languages: the hit's (empty: it can hold any
    term); found: the terms outside its languages that it holds all the same. Sets "attainable", the share of
    the query's term weight it can hold, and "cov" to the share of that it matched."""
    total = sum(weights.values())
    out = sum(weights[term] for term, script in scripts.items()
              if languages and script is not None and script not in languages and term in weights and term not in found)
    share = (total - out) / total if total else 0.0
    signal["attainable"] = round(share, 6)
    if 0 < share < 1:
        signal["cov"] = min(1.0, signal["cov"] / share)
