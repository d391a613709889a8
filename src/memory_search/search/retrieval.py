"""The search pipeline: legs, fusion, one best chunk per file, rerank. Layout-specific SQL is in layouts.py."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..directory.records import Record
from ..errors import PARAMETER as P, MemoryNotFound, ParameterError, UsageError, first_line, quoted
from ..text import language
from ..text.chunking import reads_as_conversation, turn_spans
from ..text.tokens import counted_terms, is_japanese, tokenize
from . import relevance
from .filters import Filters
from .query import MAX_QUERY_CHARS, MODES, check_query, check_query_length  # noqa: F401 (their home before query.py)
from .snippets import snippet

RRF_K = 60  # reciprocal rank fusion's, for an embedding model relevance.json does not cover
# Each leg's ranking is fused at least this deep, however few results are asked for: RRF is meant for
# deep rankings, and 100 is as deep as the vector leg's index search explores (hnsw.ef_search).
FUSION_DEPTH = 100
# A long query (a pasted page) costs the model more than linearly in its length: the semantic leg reads
# its leading part, about this many tokens. The keyword leg reads the query's rarest terms, at most
# layouts.MAX_QUERY_TERMS of them.
MEANING_TOKENS = 128
RERANK_CANDIDATES = 30
# What happened is often written down a few days after it ("last weekend we..."), and what is planned a few
# days before: a window that holds fewer hits than asked for is followed by the best of this many days on
# each side of it.
AROUND_WINDOW_DAYS = 7


@dataclass
class SearchRequest:
    query: str
    top: int = 10
    mode: str | None = None  # None: hybrid when the index has a keyword leg, else semantic
    filters: Filters = field(default_factory=Filters)
    dedupe: bool = True
    min_score: float | None = None  # on the relevance score's scale (relevance.py), the same in every mode
    rerank: bool | None = False  # None: on when a Voyage key is set (the engine decides)
    snippets: bool = True  # eval needs only the ranking
    time: bool = True  # read time words ("先週", "yesterday") as a date window, unless dates are given
    today: dt.date | None = None  # what time words count from; None: the local date
    # How the face that asks names the query, in the refusal of one it cannot search (the page's "q").
    query_name: str = field(default="the query", compare=False, repr=False)
    by_example: bool = False  # a record's meaning is searched for (similar): the request has no query text

    def __post_init__(self) -> None:
        # Where every face's search is accepted, so that a query it cannot search costs nothing before its
        # refusal (no time words read, no connection, no model), and the refusal quotes it as it was sent.
        if not self.by_example:
            check_query(self.query, self.query_name)


def shifted(day: dt.date, days: int) -> dt.date:
    """`day` moved by `days`, held at the calendar's ends (0001-01-01, 9999-12-31) rather than overflowing."""
    try:
        return day + dt.timedelta(days=days)
    except OverflowError:
        return dt.date.max if days > 0 else dt.date.min


@dataclass(frozen=True)
class Window:
    """The date window a query's time words named."""

    since: dt.date | None
    until: dt.date | None
    words: tuple[str, ...]  # as written in the query
    inside: bool = True  # False: nothing dated inside matched, and the hits come from around it or any date
    alone: bool = False  # the query was these words alone: the window's records are listed, none around it
    around: int = 0  # hits from this many days on each side of the window follow those inside it (0: none)
    anywhere: bool = False  # hits from any date follow those (nothing inside matched)

    def holds(self, day: dt.date | None) -> bool:
        return (day is not None and (self.since is None or self.since <= day)
                and (self.until is None or day <= self.until))

    def widened(self, days: int) -> tuple[dt.date | None, dt.date | None]:
        """The window widened by `days` on each side that it has, up to the calendar's ends."""
        return (shifted(self.since, -days) if self.since else None, shifted(self.until, days) if self.until else None)

    def as_dict(self, day: dt.date | None = None) -> dict:
        """With `day`, a hit's date: inside says whether the hit lies in the window."""
        return {"since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None,
                "words": list(self.words), "inside": self.inside if day is None else self.holds(day)}


class Hits(list):
    """A search's hits, best first, with the time window read from its query (None when it named none)."""

    window: Window | None = None


def search_in_time(request: SearchRequest, run: Callable[[SearchRequest], list[Hit]]) -> Hits:
    """`run(request)`'s hits, the request first restricted to the dates its time words name (undated records
    left out). Where fewer match there than asked for, the best of the days around the window follow them
    (AROUND_WINDOW_DAYS on each side), unless the query was time words alone; where nothing inside matches,
    the hits of the request as it was, from any date, follow those, each scored at most as the hit before it
    (a hit from outside the window the question names answers it no better). `hits.window.inside` says whether
    anything inside matched."""
    return search_within(request, windowed(request), run)


def search_within(request: SearchRequest, timed: tuple[SearchRequest, Window] | None,
                  run: Callable[[SearchRequest], list[Hit]]) -> Hits:
    """search_in_time's hits, the request's window already read (`windowed(request)`)."""
    if not timed:
        return Hits(run(request))
    narrowed, window = timed
    hits = Hits(run(narrowed))
    inside, around = bool(hits), 0
    if len(hits) < request.top and not window.alone:
        since, until = window.widened(AROUND_WINDOW_DAYS)
        # The words stay in the query here: outside the window they no longer name where to look.
        near = [hit for hit in run(replace(request, time=False, filters=replace(request.filters, since=since,
                                                                                until=until)))
                if not window.holds(hit.record.date)]
        around = AROUND_WINDOW_DAYS if near else 0
        hits.extend(near[: request.top - len(hits)])
    from_any_date = False
    if not inside and len(hits) < request.top:
        def key(hit):
            return hit.path if request.dedupe else (hit.path, hit.start_line)

        shown = {key(hit) for hit in hits}
        anywhere = [hit for hit in run(replace(request, time=False)) if key(hit) not in shown]
        from_any_date = bool(anywhere[: request.top - len(hits)])
        hits.extend(anywhere[: request.top - len(hits)])
    hits.window = replace(window, inside=inside, around=around, anywhere=from_any_date)
    for before, hit in zip(hits, hits[1:]):  # one number: the order shown is the order of the scores
        hit.score = min(hit.score, before.score)
    return hits


def leading_part(text: str, tokens: int = MEANING_TOKENS) -> str:
    """The start of a query that the model reads for its meaning: about `tokens` tokens (a CJK character
    counted as one, other text as one per three characters), ended at a sentence, line or word boundary when
    one lies in the last quarter; the whole text when it is shorter."""
    budget = float(tokens)
    for end, character in enumerate(text):
        budget -= 1.0 if character >= "\u2e80" else 1 / 3
        if budget < 0:
            break
    else:
        return text
    cut = text[:end]
    for separators in (("\n", "。", "．", "！", "？", ". ", "! ", "? "), (" ", "、", "，", ", ")):
        boundary = max(cut.rfind(separator) + len(separator) for separator in separators)
        if boundary > len(cut) * 3 // 4:
            return cut[:boundary].rstrip()
    return cut


def windowed(request: SearchRequest) -> tuple[SearchRequest, Window] | None:
    """The request restricted to the dates its time words name, with the words taken out of the text the legs
    search; None when it names no date, reads none (time off), or gives its own dates (they win). UsageError
    when the window they name starts after it ends ("since 2030", "after today")."""
    if not request.time or request.filters.since or request.filters.until:
        return None
    from .timewords import find_time

    found = find_time(request.query, request.today or dt.date.today())
    if found is None:
        return None
    if found.since is not None and found.until is not None and found.since > found.until:
        words = " / ".join(found.phrases)
        raise UsageError(f"the time words {words!r} name {found.since.isoformat()}..{found.until.isoformat()}, "
                         "which starts after it ends: name dates up to today, or search without reading time words")
    filters = replace(request.filters, since=found.since, until=found.until)
    # Only time words ("昨日", "last week"): the words stay, as the text the legs search.
    return (replace(request, query=found.text or request.query, filters=filters),
            Window(found.since, found.until, found.phrases, alone=not found.text.strip()))


@dataclass
class Candidate:
    """One chunk as a leg returned it."""

    id: int
    filename: str
    chunk_text: str
    score: float
    start_line: int | None = None
    end_line: int | None = None
    chunk_index: int | None = None
    record: Record | None = None  # read from the index, where it holds metadata
    coverage: float = 1.0  # keyword leg: the share of the query's term weight this chunk matched


@dataclass
class KeywordResult:
    candidates: list[Candidate]
    weights: dict[str, float]  # query term -> BM25 query weight (IDF x count)
    exhausted: bool  # no more candidates exist beyond these
    # term -> (postings read, postings it has): a term in more chunks than the leg reads (layouts.POSTINGS_BUDGET),
    # or one it left out (none read)
    sampled: dict[str, tuple[int, int]] = field(default_factory=dict)
    rescored: bool = False  # the best candidates were scored again by every term (layouts.RESCORED_CANDIDATES)


@dataclass
class Hit:
    """One chunk shown for a record: the best of its file unless dedupe is off."""

    record: Record
    score: float
    snippet: str
    start_line: int | None
    end_line: int | None
    chunk_text: str
    chunk_index: int | None = None
    # leg -> {"rank", "score"} (cosine, BM25), and "relevance": the signals the score was computed from
    legs: dict = field(default_factory=dict)
    stale: bool | None = None  # the file changed since it was indexed (None: the layout cannot tell)
    terms: tuple[str, ...] = ()  # the query terms the keyword leg searched, heaviest first

    @property
    def path(self) -> str:
        return self.record.path


class Searcher:
    """Runs requests against one index layout with one embedder; holds no state between requests."""

    def __init__(self, conn, layout, embedder, reranker=None, warn=lambda message: None, leave=lambda: None):
        """leave: called when a search needs the connection no more and waits for the reranker (a shared
        pool takes it back meanwhile)."""
        self.conn, self.layout, self.embedder = conn, layout, embedder
        self.reranker = reranker
        self.warn = warn
        self.leave = leave
        self.keyword_sampled: dict[str, tuple[int, int]] = {}  # what the last keyword leg read in part
        self.keyword_rescored = False  # and whether it scored its best candidates again by every term

    def mode_for(self, request: SearchRequest) -> str:
        if request.mode is None:
            return "hybrid" if self.layout.has_keyword_leg else "semantic"
        if request.mode not in MODES:
            raise UsageError(f"unknown mode {quoted(request.mode)}: use one of {', '.join(MODES)}")
        if request.mode != "semantic" and not self.layout.has_keyword_leg:
            raise ParameterError("mode", f"table {self.layout.table} has no keyword column: use {P} semantic")
        return request.mode

    def search(self, request: SearchRequest, embedding: Background | None = None) -> list[Hit]:
        """embedding: the query's vector, already being computed (the engine starts the local model early)."""
        mode = self.mode_for(request)
        terms = Counter(tokenize(request.query))
        vector = first_keyword = None
        meaning = leading_part(request.query)
        if mode == "semantic":
            vector = embedding.result() if embedding else self.embedder.embed_query(meaning)
        elif mode == "hybrid":  # the model embeds the query on another thread while PostgreSQL runs the keyword leg
            embedding = embedding or Background(self.embedder.embed_query, meaning)
            try:
                first_keyword = self.layout.keyword(self.conn, terms, request.filters, _fetch(request, fused=True))
            finally:
                vector = embedding.result()
        if vector is not None:
            waiting = self.layout.waiting_for_embeddings(self.conn)
            if waiting:
                self.warn(f"{waiting} chunk(s) are still being embedded by index.py; until then they are found "
                          "by keywords only")
        hits = self._run(request, vector, terms if mode != "semantic" else None, first_keyword=first_keyword)
        read: dict[str, dict] = {}  # what the legs read of a long query, for --explain
        if vector is not None and len(meaning) < len(request.query):
            read["meaning"] = {"characters": len(meaning), "of": len(request.query)}
        if mode != "semantic" and hits and (len(hits[0].terms) < len(terms) or self.keyword_sampled):
            read["keywords"] = {"terms": list(hits[0].terms), "of": len(terms)}
            if self.keyword_sampled:
                read["keywords"]["sampled"] = {term: {"read": count, "of": total}
                                               for term, (count, total) in self.keyword_sampled.items()}
                read["keywords"]["scored_by_all"] = self.keyword_rescored
        for hit in hits if read else ():
            hit.legs["read"] = read
        return hits

    def similar(self, filename: str, request: SearchRequest) -> list[Hit]:
        """The records nearest in meaning to an indexed file: the mean of its chunk vectors, the file left out.
        Scores stay cosine similarities: the relevance model is fitted on questions, not on whole memories."""
        vectors = self.layout.vectors_of(self.conn, filename)
        if not vectors:
            reason = self.layout.skip_reason(self.conn, filename)
            if reason:  # running index.py again would skip it again
                raise MemoryNotFound(f"{filename} is not a memory index.py can read ({reason}), so it has nothing "
                                     "similar: fix the file or leave it out")
            raise MemoryNotFound(f"{filename} is not in the index: run index.py, or check the path")
        centroid = [sum(values) / len(vectors) for values in zip(*vectors)]
        return self._run(request, centroid, None, exclude=filename, scored=False)

    def _run(self, request: SearchRequest, vector, terms: Counter | None, exclude: str | None = None,
             first_keyword: KeywordResult | None = None, scored: bool = True) -> list[Hit]:
        fetch = _fetch(request, fused=vector is not None and terms is not None)
        embedder = getattr(self.embedder, "spec", None) if vector is not None else None
        calibration = relevance.calibration(embedder.key if embedder is not None else None) if scored else None
        while True:
            legs: dict[str, list] = {}
            exhausted = True
            term_weights = {term: 1.0 for term in terms or tokenize(request.query)}
            if vector is not None:
                legs["semantic"] = self.layout.semantic(self.conn, vector, request.filters, fetch, exclude)
                exhausted = len(legs["semantic"]) < fetch
            if terms is not None:
                keyword = first_keyword or self.layout.keyword(self.conn, terms, request.filters, fetch)
                first_keyword = None
                legs["keyword"], term_weights = keyword.candidates, keyword.weights
                self.keyword_sampled, self.keyword_rescored = keyword.sampled, keyword.rescored
                exhausted = exhausted and keyword.exhausted
            signals = _leg_signals(legs, term_weights)
            mode = "hybrid" if len(legs) > 1 and legs["semantic"] else "keyword" if "keyword" in legs else "semantic"
            model = calibration.model(mode) if calibration is not None else None
            if mode == "hybrid" and model is not None and calibration is not None and calibration.fusion is not None:
                self._complete_signals(signals, legs, vector, request.query, term_weights)
                asked = language.main_language(request.query)
                means = self.layout.script_means
                shift = relevance.language_shift(vector, asked, signals, means)
                base = relevance.baseline(vector, asked, means, calibration.fusion["baseline"])
                relevance.fuse(signals, asked, calibration.fusion, shift, base)
            elif mode == "hybrid":
                model = None  # a model relevance.json does not cover: reciprocal rank fusion's scores
            if model is not None:  # one number: the hits are listed in the order of the score they show
                fused = sorted(((chunk_id, model(signal)) for chunk_id, signal in signals.items()),
                               key=lambda item: -item[1])
            else:
                fused = fuse(legs) if len(legs) > 1 else _single(legs)
            hits = self._collect(fused, legs, request, term_weights,
                                 (lambda chunk_id: relevance.judge(model, signals[chunk_id])) if model else None)
            if len(hits) >= request.top or exhausted:
                break
            fetch *= 4
        self._mark_stale(hits)
        if request.rerank and self.reranker is not None and hits:
            self.leave()
            hits = self._rerank(request.query, hits)
        if request.min_score is not None:
            hits = [hit for hit in hits if hit.score >= request.min_score]
        return hits[: request.top]

    def _add_exchange(self, hits: list[tuple[Hit, str]]) -> None:
        """Widen each hit in a conversation by the turn before its window and the turn after it: a question's
        answer is most often the reply to the turns it matched, or what they reply to. The chunk next to a
        window is the window before or after it: it shares turns with it, or, where a turn too long to share
        ended the window, meets it (a blank line between at most), the hit opening or closing on a turn and the
        two reading as one conversation (chunks of other text never share lines). hits: each with the file name
        the index knows it by."""
        talk: list[tuple[Hit, str, int, int, int, list[tuple[int, int]]]] = []
        for hit, filename in hits:
            if hit.chunk_index is not None and hit.start_line is not None and hit.end_line is not None:
                spans = turn_spans(hit.chunk_text, hit.start_line)
                if len(spans) > 1:
                    talk.append((hit, filename, hit.chunk_index, hit.start_line, hit.end_line, spans))
        wanted = [(filename, index + step) for _, filename, index, _, _, _ in talk for step in (-1, 1)]
        near = self.layout.neighbours(self.conn, wanted) if wanted else {}
        for hit, filename, index, start, end, spans in talk if near else ():
            before = near.get((filename, index - 1))
            after = near.get((filename, index + 1))
            lines = hit.chunk_text.split("\n")
            if before is not None and _continues(before, start, end, spans, hit.chunk_text, after=False):
                turns = [span for span in turn_spans(before[0], before[1]) if span[1] < start]
                if turns:
                    first = turns[-1][0]
                    between = before[0].split("\n")[first - before[1]:start - before[1]]
                    lines = between + [""] * (start - first - len(between)) + lines
                    hit.start_line = start = first
            if after is not None and _continues(after, start, end, spans, "\n".join(lines), after=True):
                turns = [span for span in turn_spans(after[0], after[1]) if span[0] > end]
                if turns and (after[1] <= end or turns[0][0] == after[1]):  # not past a heading
                    last = turns[0][1]
                    lines += [""] * (after[1] - end - 1)
                    lines += after[0].split("\n")[max(end + 1 - after[1], 0):last + 1 - after[1]]
                    hit.end_line = end = last
            hit.chunk_text = "\n".join(lines)

    def _mark_stale(self, hits: list[Hit]) -> None:
        """Flag hits whose file changed after it was indexed: their text may be out of date."""
        indexed = self.layout.indexed_state(self.conn, [hit.path for hit in hits]) if hits else None
        if indexed is None:
            return
        for hit in hits:
            try:
                stat = os.stat(hit.path)
            except OSError:
                continue
            hit.stale = indexed.get(hit.path) != (stat.st_size, stat.st_mtime_ns)

    def _complete_signals(self, signals: dict[int, dict], legs: dict[str, list], vector, query: str,
                          weights: dict[str, float]) -> None:
        """Give every chunk of both legs its cosine, its languages and its keyword signals over the query terms
        it can hold (relevance.attainable). A chunk the keyword leg did not return has no keyword part: it
        matched nothing, or less than the leg's last (hundredth) hit."""
        found = self.layout.fusion_signals(self.conn, vector, signals.keys())
        cosines = [candidate.score for candidate in legs["semantic"]]
        scripts = term_scripts(query, weights)
        for chunk_id, signal in signals.items():
            cosine, title, text = found.get(chunk_id, (None, "", ""))
            if "cos" not in signal:
                if cosine is None:  # still waiting for its embedding: the cosine of its keyword rank, as RRF assumes
                    cosine = cosines[min(signal["rank"], len(cosines)) - 1]
                    signal["imputed"] = True
                signal["cos"] = cosine
            signal.setdefault("bm25n", 0.0)
            signal.setdefault("cov", 0.0)
            signal["languages"] = held = language.languages(text)
            beyond = [term for term, script in scripts.items() if held and script is not None and script not in held]
            relevance.attainable(signal, held, scripts, weights, _held_anyway(beyond, title, text)
                                 if beyond and signal["cov"] else set())

    # --- from chunks to hits ----------------------------------------------------------------

    def _collect(self, fused: list[tuple[int, float]], legs: dict[str, list], request: SearchRequest,
                 term_weights: dict, judge=None) -> list[Hit]:
        by_id: dict[int, Candidate] = {}
        ranks: dict[int, dict] = {}
        for leg, candidates in legs.items():
            for rank, candidate in enumerate(candidates, 1):
                by_id.setdefault(candidate.id, candidate)
                ranks.setdefault(candidate.id, {})[leg] = {"rank": rank, "score": round(candidate.score, 6)}
        # Admission depends on the file alone, so one-per-file can pick each file's best chunk before
        # the chunks' text and records are read, and only as many as are shown.
        chosen, files = [], set()
        for chunk_id, score in fused:
            candidate = by_id[chunk_id]
            if request.dedupe:
                if candidate.filename in files:
                    continue
                files.add(candidate.filename)
            chosen.append((candidate, score))
        wanted = max(request.top, RERANK_CANDIDATES if request.rerank else 0)
        searched = tuple(sorted(term_weights, key=lambda term: -term_weights[term])) if "keyword" in legs else ()
        hits: list[Hit] = []
        filenames: list[str] = []  # each hit's, as the index knows it
        paths: set[str] = set()
        admitted: dict[str, Record | None] = {}  # by file: without one-per-file, a file's chunks share it
        while chosen and len(hits) < wanted:
            batch, chosen = chosen[:wanted - len(hits)], chosen[wanted - len(hits):]
            complete = {candidate.id: candidate for candidate in self.layout.complete(
                self.conn, [candidate for candidate, _ in batch])}
            for leg_candidate, score in batch:
                candidate = complete.get(leg_candidate.id)
                if candidate is None:
                    continue
                if candidate.filename not in admitted:
                    admitted[candidate.filename] = self.layout.admit(candidate, request.filters)
                record = admitted[candidate.filename]
                if record is None or (request.dedupe and record.path in paths):
                    continue
                paths.add(record.path)
                text = snippet(candidate.chunk_text, term_weights) if request.snippets else ""
                legs_of = dict(ranks[candidate.id])
                if judge is not None:
                    score, legs_of["relevance"] = judge(candidate.id)
                hits.append(Hit(record=record, score=round(score, 6), snippet=text, start_line=candidate.start_line,
                                end_line=candidate.end_line, chunk_text=candidate.chunk_text,
                                chunk_index=candidate.chunk_index, legs=legs_of, terms=searched))
                filenames.append(candidate.filename)
        self._add_exchange(list(zip(hits, filenames)))
        return hits

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """Every hit collected (RERANK_CANDIDATES, or as many as asked for) scored and ordered by the reranker."""
        pool = hits
        try:
            scores = self.reranker(query, [hit.chunk_text for hit in pool])
        except Exception as error:  # any failure: keep the fused order
            self.warn(f"rerank failed ({first_line(error)}); showing the fused order")
            return hits
        for hit, score in zip(pool, scores):
            hit.legs["rerank"] = {"score": round(score, 6)}
            hit.score = round(score, 6)
        pool.sort(key=lambda hit: -hit.score)
        for rank, hit in enumerate(pool, 1):
            hit.legs["rerank"]["rank"] = rank
        return pool


def _fetch(request: SearchRequest, fused: bool) -> int:
    """Candidates each leg returns at first; more are fetched when one-per-file leaves too few."""
    return max(request.top * 3, FUSION_DEPTH if fused else 30)


class Background:
    """A call run on another thread; result() waits for it and returns or raises what it did."""

    def __init__(self, function, *args):
        import threading

        self._outcome: tuple = (None, None)
        self._thread = threading.Thread(target=self._call, args=(function, args), daemon=True)
        self._thread.start()

    def _call(self, function, args) -> None:
        try:
            self._outcome = (function(*args), None)
        except BaseException as error:  # handed to the caller's thread
            self._outcome = (None, error)

    def result(self):
        self._thread.join()
        value, error = self._outcome
        if error is not None:
            raise error
        return value


def _leg_signals(legs: dict[str, list[Candidate]], weights: dict[str, float]) -> dict[int, dict]:
    """chunk id -> the relevance signals its legs gave: cosine; BM25 over the query's ceiling, coverage, rank."""
    signals: dict[int, dict] = {}
    for candidate in legs.get("semantic", ()):
        signals[candidate.id] = {"cos": candidate.score}
    ceiling = relevance.bm25_ceiling(weights)
    for rank, candidate in enumerate(legs.get("keyword", ()), 1):
        signals.setdefault(candidate.id, {}).update(
            bm25n=candidate.score / ceiling if ceiling else 0.0, cov=candidate.coverage, rank=rank)
    return signals


def _single(legs: dict[str, list[Candidate]]) -> list[tuple[int, float]]:
    (candidates,) = legs.values()
    return [(candidate.id, candidate.score) for candidate in candidates]


def fuse(legs: dict[str, list[Candidate]]) -> list[tuple[int, float]]:
    """Chunk ids by reciprocal rank fusion (k=60), best first, scaled so that 1.0 means first in every leg: the
    hybrid order and score of an index whose embedding model relevance.json does not cover. A keyword hit counts
    in proportion to the share of the query matched by it or by a hit ranked below it, so a leg without signal
    (a Japanese question over English notes, matched on one stray word) cannot outvote one with signal, while
    a hit never counts for less than one the keyword leg ranks below it."""
    scores: dict[int, float] = {}
    for leg, candidates in legs.items():
        coverages = _coverages(candidates) if leg == "keyword" else [1.0] * len(candidates)
        for rank, (candidate, coverage) in enumerate(zip(candidates, coverages), 1):
            scores[candidate.id] = scores.get(candidate.id, 0.0) + coverage / (RRF_K + rank)
    ceiling = sum(1 for candidates in legs.values() if candidates) / (RRF_K + 1) or 1.0
    return sorted(((chunk_id, score / ceiling) for chunk_id, score in scores.items()), key=lambda item: -item[1])


def term_scripts(query: str, weights: dict[str, float]) -> dict[str, str | None]:
    """Each query term's script: language.CJK for a CJK word, LATIN for a word of the query's prose, None for a
    term any note can hold (an identifier, a name in capitals, a number, a path)."""
    prose = set(tokenize(" ".join(language.natural_words(query)[0])))
    return {term: language.CJK if language.is_cjk_term(term) else language.LATIN if term in prose else None
            for term in weights}


def _held_anyway(terms: list[str], title: str, text: str) -> set[str]:
    """Those of `terms` a chunk holds: Latin words and Korean bigrams counted as the indexer counts them; a
    Japanese word (a normalized form) found in its text."""
    counted = counted_terms(title, text, [term for term in terms if not is_japanese(term)])
    return {term for term in terms if counted[term] or is_japanese(term) and term in f"{title}\n{text}"}


def _coverages(candidates: list[Candidate]) -> list[float]:
    """Each candidate's coverage, raised to the best of those below it among the leg's first FUSION_DEPTH.

    Coverage alone lets a hit that matched more of the query but scored lower in BM25 jump over the
    leg's first hit, so a chunk first in both legs could lose. Raised this way, weights never grow
    down the leg, fusion keeps the keyword leg's order, and a leg whose hits all matched little of the
    query still counts for little. The window is the depth every search fuses, so how many results
    are asked for does not change the weights."""
    coverages = [candidate.coverage for candidate in candidates]
    best = 0.0
    for index in reversed(range(min(len(coverages), FUSION_DEPTH))):
        best = coverages[index] = max(best, coverages[index])
    return coverages


def _continues(neighbour: tuple[str, int, int], start: int, end: int, spans: list[tuple[int, int]], text: str,
               after: bool) -> bool:
    """Whether the chunk beside a conversation hit, (text, first line, last line), continues the hit's
    conversation on that side: it reaches beyond the hit and shares lines with it, or meets it (a blank line
    between at most) where the hit opens (closes) on a turn and the two, `text` being the hit's, read as one
    conversation. `start`, `end`: the hit's lines; `spans`: its turns."""
    beside, first, last = neighbour
    if after:
        beyond, shares = end < last, first <= end
        meets = spans[-1][1] == end and first - end <= 2
        joined = text + "\n" + beside
    else:
        beyond, shares = first < start, start <= last
        meets = spans[0][0] == start and start - last <= 2
        joined = beside + "\n" + text
    return beyond and (shares or meets and reads_as_conversation(joined))
